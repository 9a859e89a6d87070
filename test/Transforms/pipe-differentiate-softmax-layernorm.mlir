// RUN: pipe-opt %s --pipe-differentiate | FileCheck %s
// RUN: pipe-opt %s --pipe-differentiate="recompute=save-inputs" | FileCheck %s --check-prefix=RECOMP
// RUN: pipe-opt %s --pipe-differentiate="recompute=recompute" | FileCheck %s --check-prefix=STAGE

// Softmax written as torch-mlir does (max, exp, sum, divide) and a layer
// norm, under two recompute policies.

// Save-all: the forward returns the max, exp and sum; the gradient through
// the max reduction selects where the input equals the saved maximum.
// CHECK-LABEL: pipe.block @softmax (
// CHECK-SAME: -> (tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x4xf32>, tensor<2x1xf32>)
// CHECK-SAME: pipe.saved_bytes = 80
// CHECK-SAME: pipe.saved_results = 3
// CHECK: pipe.return %{{.+}}, %[[MAX:.+]], %[[EXP:.+]], %[[SUM:.+]] :
// CHECK-LABEL: pipe.block @softmax_bwd_input
// CHECK-SAME: (%[[X:.+]]: tensor<2x4xf32>, %[[DY:.+]]: tensor<2x4xf32>, %[[SMAX:.+]]: tensor<2x1xf32>, %[[SEXP:.+]]: tensor<2x4xf32>, %[[SSUM:.+]]: tensor<2x1xf32>) -> tensor<2x4xf32>
// CHECK-NOT: arith.maximumf
// The quotient rule: d/ds (e / s) = -dy * e / s^2, reduced over the row.
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[SEXP]], %[[SSUM]], %[[DY]] :
// CHECK: arith.divf
// CHECK: arith.negf
// The max reduction's rule: the cotangent goes where x == max.
// CHECK: linalg.generic {{.*}} ins(%[[X]], %[[SMAX]], %{{.+}} :
// CHECK: arith.cmpf oeq
// CHECK: arith.select
// CHECK: pipe.return

// Save-inputs: no saved results; the backward recomputes the forward.
// RECOMP-LABEL: pipe.block @softmax (
// RECOMP-SAME: -> tensor<2x4xf32>
// RECOMP-SAME: pipe.recompute = "save-inputs"
// RECOMP-SAME: pipe.saved_bytes = 32
// RECOMP-SAME: pipe.saved_results = 0
// RECOMP-LABEL: pipe.block @softmax_bwd_input
// RECOMP-SAME: (%{{.+}}: tensor<2x4xf32>, %{{.+}}: tensor<2x4xf32>) -> tensor<2x4xf32>
// RECOMP: arith.maximumf
// RECOMP: math.exp
// RECOMP: arith.cmpf oeq

// The layer norm block overrides the option with its own attribute.
// RECOMP-LABEL: pipe.block @layer_norm params
// RECOMP-SAME: pipe.recompute = "save-all"
// RECOMP-SAME: pipe.saved_results = 2

// The rsqrt rule: d rsqrt(v) = -0.5 * rsqrt(v)^3.
// CHECK-LABEL: pipe.block @layer_norm params
// CHECK-SAME: pipe.backward_input = @layer_norm_bwd_input
// CHECK-SAME: pipe.backward_weight = @layer_norm_bwd_weight
// CHECK-LABEL: pipe.block @layer_norm_bwd_input
// CHECK: math.rsqrt
// CHECK: arith.constant -5.000000e-01
// The gamma and beta gradients reduce over the rows.
// CHECK-LABEL: pipe.block @layer_norm_bwd_weight
// CHECK-SAME: -> (tensor<4xf32>, tensor<4xf32>)
// CHECK: %[[DG:.+]] = linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]}
// CHECK-SAME: outs(%{{.+}} : tensor<4xf32>)
// CHECK: math.rsqrt
// CHECK: %[[DB:.+]] = linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]}
// CHECK-SAME: outs(%{{.+}} : tensor<4xf32>)
// CHECK-NOT: math.rsqrt
// CHECK: pipe.return %[[DG]], %[[DB]]

// Stage-level recomputation: same IR as save-inputs, no bytes kept.
// STAGE-LABEL: pipe.block @softmax (
// STAGE-SAME: pipe.recompute = "recompute"
// STAGE-SAME: pipe.saved_bytes = 0
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i, 0)>
pipe.block @softmax (%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e1 = tensor.empty() : tensor<2x1xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<2x1xf32>) -> tensor<2x1xf32>
  %max = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<2x4xf32>) outs(%fm : tensor<2x1xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %m = arith.maximumf %acc, %in : f32
    linalg.yield %m : f32
  } -> tensor<2x1xf32>
  %e = tensor.empty() : tensor<2x4xf32>
  %exp = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %max : tensor<2x4xf32>, tensor<2x1xf32>) outs(%e : tensor<2x4xf32>) {
  ^bb0(%in: f32, %m: f32, %out: f32):
    %d = arith.subf %in, %m : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<2x4xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x1xf32>) -> tensor<2x1xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%exp : tensor<2x4xf32>) outs(%fs : tensor<2x1xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  } -> tensor<2x1xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%exp, %sum : tensor<2x4xf32>, tensor<2x1xf32>) outs(%e : tensor<2x4xf32>) {
  ^bb0(%in: f32, %s: f32, %out: f32):
    %r = arith.divf %in, %s : f32
    linalg.yield %r : f32
  } -> tensor<2x4xf32>
  pipe.return %y : tensor<2x4xf32>
}
pipe.param @w : tensor<2x4xf32>
pipe.param @gamma : tensor<4xf32>
pipe.param @beta : tensor<4xf32>

pipe.block @layer_norm params(%g: tensor<4xf32>, %b: tensor<4xf32>) (%x: tensor<2x4xf32>) -> tensor<2x4xf32>
    attributes {pipe.recompute = "save-all"} {
  %z = arith.constant 0.0 : f32
  %n = arith.constant 4.0 : f32
  %eps = arith.constant 1.0e-05 : f32
  %e1 = tensor.empty() : tensor<2x1xf32>
  %f1 = linalg.fill ins(%z : f32) outs(%e1 : tensor<2x1xf32>) -> tensor<2x1xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<2x4xf32>) outs(%f1 : tensor<2x1xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %acc, %v : f32
    linalg.yield %s : f32
  } -> tensor<2x1xf32>
  %e = tensor.empty() : tensor<2x4xf32>
  %xc = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : tensor<2x4xf32>, tensor<2x1xf32>) outs(%e : tensor<2x4xf32>) {
  ^bb0(%v: f32, %s: f32, %o: f32):
    %m = arith.divf %s, %n : f32
    %d = arith.subf %v, %m : f32
    linalg.yield %d : f32
  } -> tensor<2x4xf32>
  %var = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%xc : tensor<2x4xf32>) outs(%f1 : tensor<2x1xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %sq = arith.mulf %v, %v : f32
    %s = arith.addf %acc, %sq : f32
    linalg.yield %s : f32
  } -> tensor<2x1xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (j)>, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%xc, %var, %g, %b : tensor<2x4xf32>, tensor<2x1xf32>, tensor<4xf32>, tensor<4xf32>)
      outs(%e : tensor<2x4xf32>) {
  ^bb0(%v: f32, %s: f32, %gg: f32, %bb: f32, %o: f32):
    %m = arith.divf %s, %n : f32
    %me = arith.addf %m, %eps : f32
    %r = math.rsqrt %me : f32
    %t = arith.mulf %v, %r : f32
    %tg = arith.mulf %t, %gg : f32
    %tb = arith.addf %tg, %bb : f32
    linalg.yield %tb : f32
  } -> tensor<2x4xf32>
  pipe.return %y : tensor<2x4xf32>
}
pipe.block @src params(%w: tensor<2x4xf32>) () -> tensor<2x4xf32> {
  pipe.return %w : tensor<2x4xf32>
}
pipe.block @pick (%y: tensor<2x4xf32>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<f32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [#id, affine_map<(i, j) -> ()>], iterator_types = ["reduction", "reduction"]}
      ins(%y : tensor<2x4xf32>) outs(%acc : tensor<f32>) {
  ^bb0(%in: f32, %out: f32):
    %sq = arith.mulf %in, %in : f32
    %r = arith.addf %out, %sq : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  pipe.return %s : tensor<f32>
}
pipe.graph @g() -> tensor<f32> {
  %x = pipe.run "src" @src() params [@w] : () -> tensor<2x4xf32>
  %s = pipe.run "sm" @softmax(%x) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %y = pipe.run "ln" @layer_norm(%s) params [@gamma, @beta] : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %l = pipe.run "pick" @pick(%y) : (tensor<2x4xf32>) -> tensor<f32>
  pipe.return %l : tensor<f32>
}
