// RUN: pipe-opt %s -split-input-file --pipe-differentiate | FileCheck %s

// A matmul (named op, generalized first): the input gradient contracts the
// cotangent with the weight over j, the weight gradient contracts the input
// with the cotangent over i. The loss block has no parameters, so it has no
// weight-gradient block; the graph's result becomes the loss.

// CHECK-DAG: #[[$MX:.+]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[$MW:.+]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// CHECK-DAG: #[[$MY:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: pipe.block @linear params
// CHECK-SAME: pipe.backward_input = @linear_bwd_input
// CHECK-SAME: pipe.backward_weight = @linear_bwd_weight
// CHECK-SAME: pipe.recompute = "save-all"
// CHECK-SAME: pipe.saved_results = 0
// CHECK: linalg.generic {indexing_maps = [#[[$MX]], #[[$MW]], #[[$MY]]], iterator_types = ["parallel", "parallel", "reduction"]}

// CHECK-LABEL: pipe.block @linear_bwd_input
// CHECK-SAME: params(%[[W:.+]]: tensor<8x16xf32>) (%{{.+}}: tensor<4x8xf32>, %[[DY:.+]]: tensor<4x16xf32>) -> tensor<4x8xf32>
// CHECK: %[[Z:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<4x8xf32>)
// CHECK: %[[DX:.+]] = linalg.generic {indexing_maps = [#[[$MW]], #[[$MY]], #[[$MX]]], iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[W]], %[[DY]] : tensor<8x16xf32>, tensor<4x16xf32>) outs(%[[Z]] : tensor<4x8xf32>)
// CHECK: ^bb0(%[[WE:.+]]: f32, %[[DYE:.+]]: f32, %[[ACC:.+]]: f32):
// CHECK:   %[[P:.+]] = arith.mulf %[[DYE]], %[[WE]] : f32
// CHECK:   %[[S:.+]] = arith.addf %[[ACC]], %[[P]] : f32
// CHECK:   linalg.yield %[[S]] : f32
// CHECK: pipe.return %[[DX]] : tensor<4x8xf32>

// CHECK-LABEL: pipe.block @linear_bwd_weight
// CHECK-SAME: params(%{{.+}}: tensor<8x16xf32>) (%[[X:.+]]: tensor<4x8xf32>, %[[DY2:.+]]: tensor<4x16xf32>) -> tensor<8x16xf32>
// CHECK: %[[DW:.+]] = linalg.generic {indexing_maps = [#[[$MX]], #[[$MY]], #[[$MW]]], iterator_types = ["reduction", "parallel", "parallel"]} ins(%[[X]], %[[DY2]] : tensor<4x8xf32>, tensor<4x16xf32>)
// CHECK: pipe.return %[[DW]] : tensor<8x16xf32>

// CHECK-LABEL: pipe.block @sum (
// CHECK-SAME: pipe.backward_input = @sum_bwd_input
// CHECK-NOT: pipe.backward_weight
// CHECK-LABEL: pipe.block @sum_bwd_input
// CHECK-NOT: @sum_bwd_weight
// CHECK: pipe.graph @g(%{{.+}}: tensor<4x8xf32>) -> (tensor<f32> {pipe.loss_seed = 1.000000e+00 : f32})

pipe.param @w : tensor<8x16xf32>

pipe.block @linear params(%w: tensor<8x16xf32>) (%x: tensor<4x8xf32>) -> tensor<4x16xf32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<4x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<4x16xf32>) -> tensor<4x16xf32>
  %y = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x16xf32>)
                     outs(%acc : tensor<4x16xf32>) -> tensor<4x16xf32>
  pipe.return %y : tensor<4x16xf32>
}

pipe.block @sum (%y: tensor<4x16xf32>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<f32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> ()>],
                       iterator_types = ["reduction", "reduction"]}
      ins(%y : tensor<4x16xf32>) outs(%acc : tensor<f32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %out, %in : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  pipe.return %s : tensor<f32>
}

pipe.graph @g(%x: tensor<4x8xf32>) -> tensor<f32> {
  %y = pipe.run "l0" @linear(%x) params [@w] : (tensor<4x8xf32>) -> tensor<4x16xf32>
  %l = pipe.run "head" @sum(%y) : (tensor<4x16xf32>) -> tensor<f32>
  pipe.return %l : tensor<f32>
}

// -----

// A generic batched contraction whose second operand is read transposed
// (b, j, k): the gradients keep the operand maps as output maps, loops
// absent from them become reductions.

// CHECK-DAG: #[[$A:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[$B:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
// CHECK-DAG: #[[$C:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: pipe.block @bmm_bwd_input
// CHECK-SAME: -> (tensor<2x3x4xf32>, tensor<2x5x4xf32>)
// CHECK: %[[DA:.+]] = linalg.generic {indexing_maps = [#[[$B]], #[[$C]], #[[$A]]], iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
// CHECK-SAME: outs(%{{.+}} : tensor<2x3x4xf32>)
// CHECK: %[[DB:.+]] = linalg.generic {indexing_maps = [#[[$A]], #[[$C]], #[[$B]]], iterator_types = ["parallel", "reduction", "parallel", "parallel"]}
// CHECK-SAME: outs(%{{.+}} : tensor<2x5x4xf32>)
// CHECK: pipe.return %[[DA]], %[[DB]]
// CHECK-NOT: @bmm_bwd_weight

pipe.block @bmm (%a: tensor<2x3x4xf32>, %b: tensor<2x5x4xf32>) -> tensor<2x3x5xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x3x5xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %c = linalg.generic {indexing_maps = [
      affine_map<(b, i, j, k) -> (b, i, k)>, affine_map<(b, i, j, k) -> (b, j, k)>,
      affine_map<(b, i, j, k) -> (b, i, j)>],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<2x3x4xf32>, tensor<2x5x4xf32>) outs(%f : tensor<2x3x5xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x3x5xf32>
  pipe.return %c : tensor<2x3x5xf32>
}

pipe.block @total (%c: tensor<2x3x5xf32>) -> tensor<f32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, j, k)>, affine_map<(i, j, k) -> ()>],
                       iterator_types = ["reduction", "reduction", "reduction"]}
      ins(%c : tensor<2x3x5xf32>) outs(%f : tensor<f32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %out, %in : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  pipe.return %s : tensor<f32>
}

pipe.graph @g(%a: tensor<2x3x4xf32>, %b: tensor<2x5x4xf32>) -> tensor<f32> {
  %c = pipe.run "bmm" @bmm(%a, %b) : (tensor<2x3x4xf32>, tensor<2x5x4xf32>) -> tensor<2x3x5xf32>
  %l = pipe.run "total" @total(%c) : (tensor<2x3x5xf32>) -> tensor<f32>
  pipe.return %l : tensor<f32>
}

// -----

// Input/weight split with save-all: relu(x @ w). The forward returns the
// pre-activation as a saved activation, the graph's run gets the extra
// result, both backward blocks take it after the cotangent; the input block
// never reads the input x and the weight block never reads w. A cost
// attribute gets its backward fields and saved bytes filled in: each split
// part runs the relu's adjoint (512 + 32 FLOPs), the fused backward once
// (512 + 512 + 32 = 1056, not the parts' sum).

// CHECK-LABEL: pipe.block @lin_relu
// CHECK-SAME: params(%{{.+}}: tensor<8x8xf32>) (%{{.+}}: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK-SAME: cost = #pipe.cost<forward_flops = 544, backward_input_flops = 544, backward_weight_flops = 544, param_bytes = 256, saved_bytes = 256, output_bytes = 128, backward_flops = 1056>
// CHECK-SAME: pipe.saved_results = 1
// CHECK: %[[MM:.+]] = linalg.generic
// CHECK: %[[R:.+]] = linalg.generic
// CHECK: arith.maximumf
// CHECK: pipe.return %[[R]], %[[MM]] : tensor<4x8xf32>, tensor<4x8xf32>

// CHECK-LABEL: pipe.block @lin_relu_bwd_input
// CHECK-SAME: params(%[[W:.+]]: tensor<8x8xf32>) (%[[X:.+]]: tensor<4x8xf32>, %[[DY:.+]]: tensor<4x8xf32>, %[[SAVED:.+]]: tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NOT: %[[X]]
// CHECK: %[[DZ:.+]] = linalg.generic {{.*}} ins(%[[SAVED]], %[[DY]] :
// CHECK: arith.cmpf oge
// CHECK: arith.select
// CHECK: linalg.generic {{.*}} ins(%[[W]], %[[DZ]] :
// CHECK-LABEL: pipe.block @lin_relu_bwd_weight
// CHECK-SAME: params(%[[W2:.+]]: tensor<8x8xf32>) (%[[X2:.+]]: tensor<4x8xf32>, %[[DY2:.+]]: tensor<4x8xf32>, %[[SAVED2:.+]]: tensor<4x8xf32>) -> tensor<8x8xf32>
// CHECK-NOT: %[[W2]]
// CHECK: %[[DZ2:.+]] = linalg.generic {{.*}} ins(%[[SAVED2]], %[[DY2]] :
// CHECK: linalg.generic {{.*}} ins(%[[X2]], %[[DZ2]] :

// CHECK-LABEL: pipe.graph @g
// CHECK: %{{.+}}:2 = pipe.run "l0" @lin_relu(%{{.+}}) params [@w0] : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK: %{{.+}}:2 = pipe.run "l1" @lin_relu(%{{.+}}#0) params [@w1]

pipe.param @w0 : tensor<8x8xf32>
pipe.param @w1 : tensor<8x8xf32>

pipe.block @lin_relu params(%w: tensor<8x8xf32>) (%x: tensor<4x8xf32>) -> tensor<4x8xf32>
    attributes {cost = #pipe.cost<forward_flops = 544, backward_input_flops = 0,
                backward_weight_flops = 0, param_bytes = 256, saved_bytes = 0,
                output_bytes = 128>} {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<4x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<4x8xf32>) -> tensor<4x8xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x8xf32>)
                      outs(%acc : tensor<4x8xf32>) -> tensor<4x8xf32>
  %relu = linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%mm : tensor<4x8xf32>) outs(%init : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  pipe.return %relu : tensor<4x8xf32>
}

pipe.block @mean (%y: tensor<4x8xf32>) -> tensor<1xf32> {
  %zero = arith.constant 0.0 : f32
  %scale = arith.constant 0.03125 : f32
  %init = tensor.empty() : tensor<1xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<1xf32>) -> tensor<1xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (0)>],
                       iterator_types = ["reduction", "reduction"]}
      ins(%y : tensor<4x8xf32>) outs(%acc : tensor<1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %scale : f32
    %r = arith.addf %out, %m : f32
    linalg.yield %r : f32
  } -> tensor<1xf32>
  pipe.return %s : tensor<1xf32>
}

pipe.graph @g(%x: tensor<4x8xf32>) -> tensor<1xf32> {
  %h0 = pipe.run "l0" @lin_relu(%x) params [@w0] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %h1 = pipe.run "l1" @lin_relu(%h0) params [@w1] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %l = pipe.run "head" @mean(%h1) : (tensor<4x8xf32>) -> tensor<1xf32>
  pipe.return %l : tensor<1xf32>
}

// -----

// Casts: a bf16 square inside an f32 reduction. The adjoint of extf is
// truncated back to bf16, that of truncf extended back to f32.

// CHECK-LABEL: pipe.block @cast_bwd_input
// CHECK: linalg.generic
// CHECK: ^bb0(%[[X:.+]]: f32, %[[DY:.+]]: f32, %{{.+}}: f32):
// CHECK:   %[[XB:.+]] = arith.truncf %[[X]] : f32 to bf16
// CHECK:   %[[GB:.+]] = arith.truncf %[[DY]] : f32 to bf16
// CHECK:   %[[P1:.+]] = arith.mulf %[[GB]], %[[XB]] : bf16
// CHECK:   %[[P2:.+]] = arith.mulf %[[GB]], %[[XB]] : bf16
// CHECK:   %[[S:.+]] = arith.addf %[[P1]], %[[P2]] : bf16
// CHECK:   %[[G:.+]] = arith.extf %[[S]] : bf16 to f32
// CHECK:   linalg.yield %[[G]] : f32

pipe.block @cast (%x: tensor<4xf32>) -> tensor<f32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>],
                       iterator_types = ["reduction"]}
      ins(%x : tensor<4xf32>) outs(%f : tensor<f32>) {
  ^bb0(%in: f32, %out: f32):
    %b = arith.truncf %in : f32 to bf16
    %sq = arith.mulf %b, %b : bf16
    %w = arith.extf %sq : bf16 to f32
    %r = arith.addf %out, %w : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  pipe.return %s : tensor<f32>
}

pipe.graph @g(%x: tensor<4xf32>) -> tensor<f32> {
  %l = pipe.run "c" @cast(%x) : (tensor<4xf32>) -> tensor<f32>
  pipe.return %l : tensor<f32>
}
