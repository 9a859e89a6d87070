// An export whose matmul accumulates into a bare tensor.empty (no
// linalg.fill), as a hand-edited or mis-lowered export can have: it would
// read undefined memory (NaN in training), so pipe-train rejects it at the
// input check, naming the op, its location and the tensor.empty, before
// attaching the loss or initialising anything.
// RUN: %expect_error --exit 1 -- pipe-train %s --loss cross-entropy --init kaiming-uniform --devices 2 2>&1 | FileCheck %s

// CHECK: bare-empty-accumulator.mlir:[[@LINE+12]]:10: error: 'linalg.matmul' op reads its init (outs operand #0, %1 (#0)), which is a bare 'tensor.empty' with undefined contents: a contraction or reduction adds into its init, so fill it first (linalg.fill with 0 for a sum, the reduction's identity in general), as torch-mlir does
// CHECK: bare-empty-accumulator.mlir:[[@LINE+10]]:10: note: the undefined tensor is made here
// CHECK-NOT: step 1
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (0, d1)>
module {
  func.func @main(%arg0: tensor<4x8xf32>) -> tensor<4x5xf32> {
    %cst = arith.constant dense_resource<__elided__> : tensor<5x8xf32>
    %cst_0 = arith.constant dense_resource<__elided__> : tensor<5xf32>
    %0 = tensor.empty() : tensor<8x5xf32>
    %transposed = linalg.transpose ins(%cst : tensor<5x8xf32>) outs(%0 : tensor<8x5xf32>) permutation = [1, 0]
    %1 = tensor.empty() : tensor<4x5xf32>
    %2 = linalg.matmul ins(%arg0, %transposed : tensor<4x8xf32>, tensor<8x5xf32>) outs(%1 : tensor<4x5xf32>) -> tensor<4x5xf32>
    %expanded = tensor.expand_shape %cst_0 [[0, 1]] output_shape [1, 5] : tensor<5xf32> into tensor<1x5xf32>
    %3 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%2, %expanded : tensor<4x5xf32>, tensor<1x5xf32>) outs(%1 : tensor<4x5xf32>) {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %4 = arith.addf %in, %in_1 : f32
      linalg.yield %4 : f32
    } -> tensor<4x5xf32>
    return %3 : tensor<4x5xf32>
  }
}
