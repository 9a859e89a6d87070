// A CNN as torch-mlir's fx.export_and_import(..., output_type=
// "linalg-on-tensors") prints it with large weights elided: conv2d (padding
// 1) with bias, eval-mode batch_norm in torch-mlir's decomposition, relu,
// max_pool2d(2), adaptive_avg_pool2d(1) (an avg_pool2d over the whole map),
// flatten and a linear classifier; logits [2, 3].
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/Inputs/conformance.py data cnn %t
// RUN: pipe-train %s --loss cross-entropy --init kaiming-uniform --init-seed 3 --save-init-weights %t/init.safetensors --devices 2 --data %t/data.safetensors --steps 3 --log-every 1 --log-json %t/log.jsonl | FileCheck %s
// RUN: %python %S/Inputs/conformance.py check cnn %t | FileCheck %s --check-prefix=REF
// The check fails when the weights differ from those pipe-train used.
// RUN: not %python %S/Inputs/conformance.py check cnn %t --perturb 2>&1 | FileCheck %s --check-prefix=PERTURB

// CHECK: == model: loss cross-entropy (mean) of result 0, attached (--loss)
// CHECK-NEXT: inputs: 0: tensor<2x3x8x8xf32> 1: tensor<2xi64> (target)
// CHECK-NEXT: parameters: {{[0-9]+}} in 8 tensors (those without data: --init kaiming-uniform, seed 3), 2 frozen
// CHECK: step 3/3  loss
// REF: cnn: first loss matches PyTorch
// PERTURB: cnn: first loss {{.*}}, PyTorch
#map = affine_map<(d0, d1, d2, d3) -> (d1)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map2 = affine_map<(d0, d1, d2, d3) -> (0, d1, 0, 0)>
#map3 = affine_map<(d0, d1) -> (d0, d1)>
#map4 = affine_map<(d0, d1) -> (0, d1)>
module {
  func.func @main(%arg0: tensor<2x3x8x8xf32>) -> tensor<2x3xf32> {
    %cst = arith.constant 1.600000e+01 : f32
    %cst_0 = arith.constant 0xFF800000 : f32
    %cst_1 = arith.constant 0.000000e+00 : f32
    %cst_2 = arith.constant 1.000000e-05 : f64
    %cst_3 = arith.constant dense_resource<__elided__> : tensor<4x3x3x3xf32>
    %cst_4 = arith.constant dense_resource<__elided__> : tensor<4xf32>
    %cst_5 = arith.constant dense_resource<__elided__> : tensor<4xf32>
    %cst_6 = arith.constant dense_resource<__elided__> : tensor<4xf32>
    %cst_7 = arith.constant dense_resource<__elided__> : tensor<4xf32>
    %cst_8 = arith.constant dense_resource<__elided__> : tensor<4xf32>
    %cst_9 = arith.constant dense_resource<__elided__> : tensor<3x4xf32>
    %cst_10 = arith.constant dense_resource<__elided__> : tensor<3xf32>
    %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
    ^bb0(%arg1: index, %arg2: index, %arg3: index, %arg4: index):
      tensor.yield %cst_1 : f32
    } : tensor<2x3x8x8xf32> to tensor<2x3x10x10xf32>
    %0 = tensor.empty() : tensor<2x4x8x8xf32>
    %1 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%cst_4 : tensor<4xf32>) outs(%0 : tensor<2x4x8x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<2x4x8x8xf32>
    %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %cst_3 : tensor<2x3x10x10xf32>, tensor<4x3x3x3xf32>) outs(%1 : tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
    %expanded = tensor.expand_shape %cst_5 [[0, 1, 2, 3]] output_shape [1, 4, 1, 1] : tensor<4xf32> into tensor<1x4x1x1xf32>
    %expanded_11 = tensor.expand_shape %cst_6 [[0, 1, 2, 3]] output_shape [1, 4, 1, 1] : tensor<4xf32> into tensor<1x4x1x1xf32>
    %3 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%2, %expanded : tensor<2x4x8x8xf32>, tensor<1x4x1x1xf32>) outs(%0 : tensor<2x4x8x8xf32>) {
    ^bb0(%in: f32, %in_15: f32, %out: f32):
      %25 = arith.subf %in, %in_15 : f32
      linalg.yield %25 : f32
    } -> tensor<2x4x8x8xf32>
    %4 = tensor.empty() : tensor<1x4x1x1xf32>
    %5 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded_11 : tensor<1x4x1x1xf32>) outs(%4 : tensor<1x4x1x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %25 = arith.truncf %cst_2 : f64 to f32
      %26 = arith.addf %in, %25 : f32
      linalg.yield %26 : f32
    } -> tensor<1x4x1x1xf32>
    %6 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%5 : tensor<1x4x1x1xf32>) outs(%4 : tensor<1x4x1x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %25 = math.rsqrt %in : f32
      linalg.yield %25 : f32
    } -> tensor<1x4x1x1xf32>
    %7 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%3, %6 : tensor<2x4x8x8xf32>, tensor<1x4x1x1xf32>) outs(%0 : tensor<2x4x8x8xf32>) {
    ^bb0(%in: f32, %in_15: f32, %out: f32):
      %25 = arith.mulf %in, %in_15 : f32
      linalg.yield %25 : f32
    } -> tensor<2x4x8x8xf32>
    %expanded_12 = tensor.expand_shape %cst_7 [[0, 1, 2, 3]] output_shape [1, 4, 1, 1] : tensor<4xf32> into tensor<1x4x1x1xf32>
    %8 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%7, %expanded_12 : tensor<2x4x8x8xf32>, tensor<1x4x1x1xf32>) outs(%0 : tensor<2x4x8x8xf32>) {
    ^bb0(%in: f32, %in_15: f32, %out: f32):
      %25 = arith.mulf %in, %in_15 : f32
      linalg.yield %25 : f32
    } -> tensor<2x4x8x8xf32>
    %expanded_13 = tensor.expand_shape %cst_8 [[0, 1, 2, 3]] output_shape [1, 4, 1, 1] : tensor<4xf32> into tensor<1x4x1x1xf32>
    %9 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%8, %expanded_13 : tensor<2x4x8x8xf32>, tensor<1x4x1x1xf32>) outs(%0 : tensor<2x4x8x8xf32>) {
    ^bb0(%in: f32, %in_15: f32, %out: f32):
      %25 = arith.addf %in, %in_15 : f32
      linalg.yield %25 : f32
    } -> tensor<2x4x8x8xf32>
    %10 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%9 : tensor<2x4x8x8xf32>) outs(%0 : tensor<2x4x8x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %25 = arith.cmpf ugt, %in, %cst_1 : f32
      %26 = arith.select %25, %in, %cst_1 : f32
      linalg.yield %26 : f32
    } -> tensor<2x4x8x8xf32>
    %11 = tensor.empty() : tensor<2x4x4x4xf32>
    %12 = linalg.fill ins(%cst_0 : f32) outs(%11 : tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>
    %13 = tensor.empty() : tensor<2x2xf32>
    %14 = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%10, %13 : tensor<2x4x8x8xf32>, tensor<2x2xf32>) outs(%12 : tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>
    %15 = tensor.empty() : tensor<2x4x1x1xf32>
    %16 = linalg.fill ins(%cst_1 : f32) outs(%15 : tensor<2x4x1x1xf32>) -> tensor<2x4x1x1xf32>
    %17 = tensor.empty() : tensor<4x4xf32>
    %18 = linalg.pooling_nchw_sum {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%14, %17 : tensor<2x4x4x4xf32>, tensor<4x4xf32>) outs(%16 : tensor<2x4x1x1xf32>) -> tensor<2x4x1x1xf32>
    %19 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%18 : tensor<2x4x1x1xf32>) outs(%15 : tensor<2x4x1x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %25 = arith.divf %in, %cst : f32
      linalg.yield %25 : f32
    } -> tensor<2x4x1x1xf32>
    %collapsed = tensor.collapse_shape %19 [[0], [1, 2, 3]] : tensor<2x4x1x1xf32> into tensor<2x4xf32>
    %20 = tensor.empty() : tensor<4x3xf32>
    %transposed = linalg.transpose ins(%cst_9 : tensor<3x4xf32>) outs(%20 : tensor<4x3xf32>) permutation = [1, 0] 
    %21 = tensor.empty() : tensor<2x3xf32>
    %22 = linalg.fill ins(%cst_1 : f32) outs(%21 : tensor<2x3xf32>) -> tensor<2x3xf32>
    %23 = linalg.matmul ins(%collapsed, %transposed : tensor<2x4xf32>, tensor<4x3xf32>) outs(%22 : tensor<2x3xf32>) -> tensor<2x3xf32>
    %expanded_14 = tensor.expand_shape %cst_10 [[0, 1]] output_shape [1, 3] : tensor<3xf32> into tensor<1x3xf32>
    %24 = linalg.generic {indexing_maps = [#map3, #map4, #map3], iterator_types = ["parallel", "parallel"]} ins(%23, %expanded_14 : tensor<2x3xf32>, tensor<1x3xf32>) outs(%21 : tensor<2x3xf32>) {
    ^bb0(%in: f32, %in_15: f32, %out: f32):
      %25 = arith.addf %in, %in_15 : f32
      linalg.yield %25 : f32
    } -> tensor<2x3xf32>
    return %24 : tensor<2x3xf32>
  }
}

