// An MLP as torch-mlir's torchscript path printed it before MLIR had
// `output_shape` on tensor.expand_shape (LLVM 18 and older): the bias views
// `tensor.expand_shape %b [[0, 1]] : tensor<16xf32> into tensor<1x16xf32>`,
// the weight transposes as generics, weights elided. pipe-train upgrades
// the syntax mechanically (a warning per op, the static result shape as
// `output_shape`) and trains it.
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/Inputs/conformance.py data old-mlp %t
// RUN: pipe-train %s --loss cross-entropy --init kaiming-uniform --init-seed 8 --save-init-weights %t/init.safetensors --devices 2 --data %t/data.safetensors --steps 3 --log-every 1 --log-json %t/log.jsonl 2>&1 | FileCheck %s
// RUN: %python %S/Inputs/conformance.py check old-mlp %t | FileCheck %s --check-prefix=REF
// Without the upgrade, the old form is an error that gives the MLIR 22 form.
// RUN: not pipe-opt %s --pipe-upgrade-input=false 2>&1 | FileCheck %s --check-prefix=OFF

// CHECK: old-mlp.mlir:[[@LINE+27]]:{{[0-9]+}}: warning: upgraded older syntax: tensor.expand_shape without `output_shape` (MLIR before LLVM 19) now has `output_shape [1, 16]`
// CHECK: old-mlp.mlir:[[@LINE+48]]:{{[0-9]+}}: warning: upgraded older syntax: tensor.expand_shape without `output_shape` (MLIR before LLVM 19) now has `output_shape [1, 3]`
// CHECK: == model: loss cross-entropy (mean) of result 0, attached (--loss)
// CHECK-NEXT: inputs: 0: tensor<4x2x4xf32> 1: tensor<4xi64> (target)
// CHECK-NEXT: parameters: 195 in 4 tensors (those without data: --init kaiming-uniform, seed 8)
// CHECK: step 3/3  loss
// REF: old-mlp: first loss matches PyTorch
// OFF: old-mlp.mlir:{{[0-9]+}}:{{[0-9]+}}: error: tensor.expand_shape without `output_shape`
#map = affine_map<(d0, d1) -> (d1, d0)>
#map1 = affine_map<(d0, d1) -> (d0, d1)>
#map2 = affine_map<(d0, d1) -> (0, d1)>
module attributes {torch.debug_module_name = "MLP"} {
  func.func @forward(%arg0: tensor<4x2x4xf32>) -> tensor<4x3xf32> {
    %cst = arith.constant dense_resource<__elided__> : tensor<16x8xf32>
    %cst_0 = arith.constant dense_resource<__elided__> : tensor<16xf32>
    %cst_1 = arith.constant 0.000000e+00 : f32
    %cst_2 = arith.constant dense_resource<__elided__> : tensor<3x16xf32>
    %cst_3 = arith.constant dense_resource<__elided__> : tensor<3xf32>
    %collapsed = tensor.collapse_shape %arg0 [[0], [1, 2]] : tensor<4x2x4xf32> into tensor<4x8xf32>
    %0 = tensor.empty() : tensor<8x16xf32>
    %1 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel"]} ins(%cst : tensor<16x8xf32>) outs(%0 : tensor<8x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x16xf32>
    %2 = tensor.empty() : tensor<4x16xf32>
    %3 = linalg.fill ins(%cst_1 : f32) outs(%2 : tensor<4x16xf32>) -> tensor<4x16xf32>
    %4 = linalg.matmul ins(%collapsed, %1 : tensor<4x8xf32>, tensor<8x16xf32>) outs(%3 : tensor<4x16xf32>) -> tensor<4x16xf32>
    %expanded = tensor.expand_shape %cst_0 [[0, 1]] : tensor<16xf32> into tensor<1x16xf32>
    %5 = tensor.empty() : tensor<4x16xf32>
    %6 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel"]} ins(%4, %expanded : tensor<4x16xf32>, tensor<1x16xf32>) outs(%5 : tensor<4x16xf32>) {
    ^bb0(%in: f32, %in_5: f32, %out: f32):
      %16 = arith.addf %in, %in_5 : f32
      linalg.yield %16 : f32
    } -> tensor<4x16xf32>
    %7 = tensor.empty() : tensor<4x16xf32>
    %8 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%6 : tensor<4x16xf32>) outs(%7 : tensor<4x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %16 = arith.cmpf ugt, %in, %cst_1 : f32
      %17 = arith.select %16, %in, %cst_1 : f32
      linalg.yield %17 : f32
    } -> tensor<4x16xf32>
    %9 = tensor.empty() : tensor<16x3xf32>
    %10 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel"]} ins(%cst_2 : tensor<3x16xf32>) outs(%9 : tensor<16x3xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<16x3xf32>
    %11 = tensor.empty() : tensor<4x3xf32>
    %12 = linalg.fill ins(%cst_1 : f32) outs(%11 : tensor<4x3xf32>) -> tensor<4x3xf32>
    %13 = linalg.matmul ins(%8, %10 : tensor<4x16xf32>, tensor<16x3xf32>) outs(%12 : tensor<4x3xf32>) -> tensor<4x3xf32>
    %expanded_4 = tensor.expand_shape %cst_3 [[0, 1]] : tensor<3xf32> into tensor<1x3xf32>
    %14 = tensor.empty() : tensor<4x3xf32>
    %15 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel"]} ins(%13, %expanded_4 : tensor<4x3xf32>, tensor<1x3xf32>) outs(%14 : tensor<4x3xf32>) {
    ^bb0(%in: f32, %in_5: f32, %out: f32):
      %16 = arith.addf %in, %in_5 : f32
      linalg.yield %16 : f32
    } -> tensor<4x3xf32>
    return %15 : tensor<4x3xf32>
  }
}


