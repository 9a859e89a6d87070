// An op family that does not train: torch.prod(x, dim=1) lowered by torch-mlir as a generic reduction that multiplies into its init (filled with 1): the derivative handles sum, max and min reductions only, so pipe-train stops at differentiation naming the op and its place.
// RUN: %expect_error --exit 1 -- pipe-train %s --loss mse --init kaiming-uniform --devices 1 2>&1 | FileCheck %s

// CHECK: unsupported-prod.mlir:[[@LINE+13]]:{{[0-9]+}}: error: {{.*}}no derivative rule for this reduction
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
module {
  func.func @main(%arg0: tensor<4x8xf32>) -> tensor<4xf32> {
    %cst = arith.constant 0.000000e+00 : f32
    %cst_0 = arith.constant 1.000000e+00 : f32
    %cst_1 = arith.constant dense_resource<__elided__> : tensor<8x5xf32>
    %0 = tensor.empty() : tensor<4x5xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<4x5xf32>) -> tensor<4x5xf32>
    %2 = linalg.matmul ins(%arg0, %cst_1 : tensor<4x8xf32>, tensor<8x5xf32>) outs(%1 : tensor<4x5xf32>) -> tensor<4x5xf32>
    %3 = tensor.empty() : tensor<4xf32>
    %fill = linalg.fill ins(%cst_0 : f32) outs(%3 : tensor<4xf32>) -> tensor<4xf32>
    %4 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%2 : tensor<4x5xf32>) outs(%fill : tensor<4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %5 = arith.mulf %in, %out : f32
      linalg.yield %5 : f32
    } -> tensor<4xf32>
    return %4 : tensor<4xf32>
  }
}
