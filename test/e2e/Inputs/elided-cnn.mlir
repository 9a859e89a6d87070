// An eval-mode conv2d -> batch_norm -> relu -> linear in torch-mlir's
// linalg-on-tensors style, every weight elided (dense_resource<__elided__>),
// returning logits [2, 5] (pipe-train-init.mlir).
#map = affine_map<(d0, d1, d2, d3) -> (d1)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map2 = affine_map<(d0, d1, d2, d3) -> (0, d1, 0, 0)>
#map3 = affine_map<(d0, d1) -> (d0, d1)>
#map4 = affine_map<(d0, d1) -> (d1)>
module {
  func.func @forward(%arg0: tensor<2x3x4x4xf32>) -> tensor<2x5xf32> {
    %cst = arith.constant 0.000000e+00 : f32
    %cst_0 = arith.constant 1.000000e-05 : f64
    %cst_1 = arith.constant dense_resource<__elided__> : tensor<4x3x3x3xf32> loc("conv.weight")
    %cst_2 = arith.constant dense_resource<__elided__> : tensor<4xf32> loc("conv.bias")
    %cst_3 = arith.constant dense_resource<__elided__> : tensor<4xf32> loc("bn.running_mean")
    %cst_4 = arith.constant dense_resource<__elided__> : tensor<4xf32> loc("bn.running_var")
    %cst_5 = arith.constant dense_resource<__elided__> : tensor<4xf32> loc("bn.weight")
    %cst_6 = arith.constant dense_resource<__elided__> : tensor<4xf32> loc("bn.bias")
    %cst_7 = arith.constant dense_resource<__elided__> : tensor<5x64xf32> loc("fc.weight")
    %cst_8 = arith.constant dense_resource<__elided__> : tensor<5xf32> loc("fc.bias")
    %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
    ^bb0(%arg1: index, %arg2: index, %arg3: index, %arg4: index):
      tensor.yield %cst : f32
    } : tensor<2x3x4x4xf32> to tensor<2x3x6x6xf32>
    %0 = tensor.empty() : tensor<2x4x4x4xf32>
    %1 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%cst_2 : tensor<4xf32>) outs(%0 : tensor<2x4x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<2x4x4x4xf32>
    %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %cst_1 : tensor<2x3x6x6xf32>, tensor<4x3x3x3xf32>) outs(%1 : tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>
    %expanded = tensor.expand_shape %cst_3 [[0, 1, 2, 3]] output_shape [1, 4, 1, 1] : tensor<4xf32> into tensor<1x4x1x1xf32>
    %expanded_9 = tensor.expand_shape %cst_4 [[0, 1, 2, 3]] output_shape [1, 4, 1, 1] : tensor<4xf32> into tensor<1x4x1x1xf32>
    %3 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%2, %expanded : tensor<2x4x4x4xf32>, tensor<1x4x1x1xf32>) outs(%0 : tensor<2x4x4x4xf32>) {
    ^bb0(%in: f32, %in_12: f32, %out: f32):
      %14 = arith.subf %in, %in_12 : f32
      linalg.yield %14 : f32
    } -> tensor<2x4x4x4xf32>
    %4 = tensor.empty() : tensor<1x4x1x1xf32>
    %5 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded_9 : tensor<1x4x1x1xf32>) outs(%4 : tensor<1x4x1x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %14 = arith.truncf %cst_0 : f64 to f32
      %15 = arith.addf %in, %14 : f32
      linalg.yield %15 : f32
    } -> tensor<1x4x1x1xf32>
    %6 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%5 : tensor<1x4x1x1xf32>) outs(%4 : tensor<1x4x1x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %14 = math.rsqrt %in : f32
      linalg.yield %14 : f32
    } -> tensor<1x4x1x1xf32>
    %7 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%3, %6 : tensor<2x4x4x4xf32>, tensor<1x4x1x1xf32>) outs(%0 : tensor<2x4x4x4xf32>) {
    ^bb0(%in: f32, %in_12: f32, %out: f32):
      %14 = arith.mulf %in, %in_12 : f32
      linalg.yield %14 : f32
    } -> tensor<2x4x4x4xf32>
    %expanded_10 = tensor.expand_shape %cst_5 [[0, 1, 2, 3]] output_shape [1, 4, 1, 1] : tensor<4xf32> into tensor<1x4x1x1xf32>
    %8 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%7, %expanded_10 : tensor<2x4x4x4xf32>, tensor<1x4x1x1xf32>) outs(%0 : tensor<2x4x4x4xf32>) {
    ^bb0(%in: f32, %in_12: f32, %out: f32):
      %14 = arith.mulf %in, %in_12 : f32
      linalg.yield %14 : f32
    } -> tensor<2x4x4x4xf32>
    %expanded_11 = tensor.expand_shape %cst_6 [[0, 1, 2, 3]] output_shape [1, 4, 1, 1] : tensor<4xf32> into tensor<1x4x1x1xf32>
    %9 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%8, %expanded_11 : tensor<2x4x4x4xf32>, tensor<1x4x1x1xf32>) outs(%0 : tensor<2x4x4x4xf32>) {
    ^bb0(%in: f32, %in_12: f32, %out: f32):
      %14 = arith.addf %in, %in_12 : f32
      linalg.yield %14 : f32
    } -> tensor<2x4x4x4xf32>
    %10 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%9 : tensor<2x4x4x4xf32>) outs(%0 : tensor<2x4x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %14 = arith.cmpf ugt, %in, %cst : f32
      %15 = arith.select %14, %in, %cst : f32
      linalg.yield %15 : f32
    } -> tensor<2x4x4x4xf32>
    %collapsed = tensor.collapse_shape %10 [[0], [1, 2, 3]] : tensor<2x4x4x4xf32> into tensor<2x64xf32>
    %11 = tensor.empty() : tensor<64x5xf32>
    %transposed = linalg.transpose ins(%cst_7 : tensor<5x64xf32>) outs(%11 : tensor<64x5xf32>) permutation = [1, 0]
    %12 = tensor.empty() : tensor<2x5xf32>
    %fill = linalg.fill ins(%cst : f32) outs(%12 : tensor<2x5xf32>) -> tensor<2x5xf32>
    %13 = linalg.matmul ins(%collapsed, %transposed : tensor<2x64xf32>, tensor<64x5xf32>) outs(%fill : tensor<2x5xf32>) -> tensor<2x5xf32>
    %14 = linalg.generic {indexing_maps = [#map3, #map4, #map3], iterator_types = ["parallel", "parallel"]} ins(%13, %cst_8 : tensor<2x5xf32>, tensor<5xf32>) outs(%12 : tensor<2x5xf32>) {
    ^bb0(%in: f32, %in_12: f32, %out: f32):
      %15 = arith.addf %in, %in_12 : f32
      linalg.yield %15 : f32
    } -> tensor<2x5xf32>
    return %14 : tensor<2x5xf32>
  }
}
