// RUN: pipe-opt %s --pipe-precision="gemm=bf16" | FileCheck %s
// RUN: pipe-opt %s --pipe-precision="gemm=f16" | FileCheck %s --check-prefix=F16
// RUN: pipe-opt %s --pipe-precision | FileCheck %s --check-prefix=OFF
// RUN: pipe-opt %s --pipe-precision="gemm=f32" | FileCheck %s --check-prefix=OFF
// RUN: pipe-opt %s --pipe-differentiate --pipe-precision="gemm=bf16" | FileCheck %s --check-prefix=BWD
// RUN: not pipe-opt %s --pipe-precision="gemm=fp8" 2>&1 | FileCheck %s --check-prefix=BAD

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#scalar2 = affine_map<(d0, d1) -> ()>
#row = affine_map<(d0, d1) -> (d0, 0)>

pipe.param @w : tensor<8x16xf32>
pipe.param @v : tensor<4x16xf32>

// A named matmul is generalized; its operands (the f32 parameter included)
// are truncated inside the block, the accumulation and the result stay f32.
// The row sum of squares (one tensor) stays f32.
// CHECK-LABEL: pipe.block @mm
// CHECK-SAME: params(%[[W:.*]]: tensor<8x16xf32>)
// CHECK: %[[XT:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<4x8xf32>) outs(%{{.*}} : tensor<4x8xbf16>)
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: %[[WT:.*]] = linalg.generic {{.*}} ins(%[[W]] : tensor<8x16xf32>) outs(%{{.*}} : tensor<8x16xbf16>)
// CHECK: linalg.generic {{.*}} ins(%[[XT]], %[[WT]] : tensor<4x8xbf16>, tensor<8x16xbf16>) outs(%{{.*}} : tensor<4x16xf32>) attrs = {pipe.precision = "bf16"}
// CHECK: ^bb0(%[[A:.*]]: bf16, %[[B:.*]]: bf16, %[[ACC:.*]]: f32):
// CHECK-DAG: arith.extf %[[A]] : bf16 to f32
// CHECK-DAG: arith.extf %[[B]] : bf16 to f32
// CHECK: arith.mulf {{.*}} : f32
// CHECK: arith.addf {{.*}} : f32
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<4x16xf32>) outs(%{{.*}} : tensor<4x1xf32>)
// CHECK-NOT: bf16
// CHECK: pipe.return
// F16-LABEL: pipe.block @mm
// F16: arith.truncf %{{.*}} : f32 to f16
// F16: pipe.precision = "f16"
// OFF-NOT: bf16
// OFF-NOT: f16
// OFF-NOT: pipe.precision
// OFF: linalg.matmul
pipe.block @mm params(%w: tensor<8x16xf32>) (%x: tensor<4x8xf32>) -> tensor<4x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %y = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%f : tensor<4x16xf32>) -> tensor<4x16xf32>
  %e1 = tensor.empty() : tensor<4x1xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x1xf32>) -> tensor<4x1xf32>
  %ss = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%y : tensor<4x16xf32>) outs(%f1 : tensor<4x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.mulf %a, %a : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x1xf32>
  pipe.return %y : tensor<4x16xf32>
}

// The loss sum(y * v) reads both tensors through the same map: not a GEMM.
// CHECK-LABEL: pipe.block @loss
// CHECK-NOT: bf16
// CHECK: pipe.return
pipe.block @loss params(%v: tensor<4x16xf32>) (%y: tensor<4x16xf32>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %r = linalg.generic {indexing_maps = [#id2, #id2, #scalar2], iterator_types = ["reduction", "reduction"]}
      ins(%y, %v : tensor<4x16xf32>, tensor<4x16xf32>) outs(%i : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  pipe.return %r : tensor<f32>
}

pipe.graph @g(%x: tensor<4x8xf32>) -> tensor<f32> {
  %y = pipe.run "mm" @mm(%x) params [@w] : (tensor<4x8xf32>) -> tensor<4x16xf32>
  %l = pipe.run "loss" @loss(%y) params [@v] : (tensor<4x16xf32>) -> tensor<f32>
  pipe.return %l : tensor<f32>
}

// After pipe-differentiate the backward GEMMs (dX = dY Wᵀ, dW = Xᵀ dY) are
// converted too, with f32 results.
// BWD-LABEL: pipe.block @mm_bwd_input
// BWD: ins(%{{.*}}, %{{.*}} : tensor<{{.*}}xbf16>, tensor<{{.*}}xbf16>) outs(%{{.*}} : tensor<4x8xf32>) attrs = {pipe.precision = "bf16"}
// BWD-LABEL: pipe.block @mm_bwd_weight
// BWD: ins(%{{.*}}, %{{.*}} : tensor<{{.*}}xbf16>, tensor<{{.*}}xbf16>) outs(%{{.*}} : tensor<8x16xf32>) attrs = {pipe.precision = "bf16"}
// BWD-LABEL: pipe.block @loss_bwd_input
// BWD-NOT: bf16
// BWD: pipe.return

// BAD: error: pipe-precision: unknown gemm type 'fp8' (expected bf16, f16 or f32)
