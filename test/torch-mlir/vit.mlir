// A ViT-style encoder as torch-mlir's fx.export_and_import(...,
// output_type="linalg-on-tensors") prints it with large weights elided:
// a patch embedding (conv2d with kernel = stride = 2, flattened and
// transposed to tokens), a position embedding, one pre-norm encoder layer
// (layer norm in torch-mlir's decomposition, 2-head attention with the
// heads split by expand_shape + transpose and batch_matmul, softmax as
// amax/sub/exp/sum/div, an MLP with exact GELU through math.erf), a final
// layer norm, mean over the tokens and a linear head; logits [2, 3].
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/Inputs/conformance.py data vit %t
// RUN: pipe-train %s --loss cross-entropy --init xavier-uniform --init-seed 11 --save-init-weights %t/init.safetensors --devices 2 --data %t/data.safetensors --steps 3 --log-every 1 --log-json %t/log.jsonl | FileCheck %s
// RUN: %python %S/Inputs/conformance.py check vit %t | FileCheck %s --check-prefix=REF

// CHECK: == model: loss cross-entropy (mean) of result 0, attached (--loss)
// CHECK-NEXT: inputs: 0: tensor<2x3x4x4xf32> 1: tensor<2xi64> (target)
// CHECK-NEXT: parameters: {{[0-9]+}} in 23 tensors (those without data: --init xavier-uniform, seed 11)
// CHECK: step 3/3  loss
// REF: vit: first loss matches PyTorch
#map = affine_map<(d0, d1, d2, d3) -> (d1)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map3 = affine_map<(d0, d1, d2) -> (0, d1, d2)>
#map4 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#map5 = affine_map<(d0, d1, d2) -> (d2)>
#map6 = affine_map<(d0, d1) -> (d0, d1)>
#map7 = affine_map<(d0, d1) -> (d1)>
#map8 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
#map9 = affine_map<(d0, d1, d2) -> (d0, d2)>
module {
  func.func @main(%arg0: tensor<2x3x4x4xf32>) -> tensor<2x3xf32> {
    %cst = arith.constant dense_resource<__elided__> : tensor<8x3x2x2xf32>
    %cst_0 = arith.constant dense_resource<__elided__> : tensor<8xf32>
    %cst_1 = arith.constant dense_resource<__elided__> : tensor<1x4x8xf32>
    %cst_2 = arith.constant dense_resource<__elided__> : tensor<8xf32>
    %cst_3 = arith.constant dense_resource<__elided__> : tensor<8xf32>
    %cst_4 = arith.constant 8.000000e+00 : f32
    %cst_5 = arith.constant 1.000000e-05 : f64
    %cst_6 = arith.constant 0.000000e+00 : f32
    %cst_7 = arith.constant dense_resource<__elided__> : tensor<8x8xf32>
    %cst_8 = arith.constant dense_resource<__elided__> : tensor<8xf32>
    %cst_9 = arith.constant dense_resource<__elided__> : tensor<8x8xf32>
    %cst_10 = arith.constant dense_resource<__elided__> : tensor<8xf32>
    %cst_11 = arith.constant dense_resource<__elided__> : tensor<8x8xf32>
    %cst_12 = arith.constant dense_resource<__elided__> : tensor<8xf32>
    %cst_13 = arith.constant 2.000000e+00 : f64
    %cst_14 = arith.constant 0xFF800000 : f32
    %cst_15 = arith.constant dense_resource<__elided__> : tensor<8x8xf32>
    %cst_16 = arith.constant dense_resource<__elided__> : tensor<8xf32>
    %cst_17 = arith.constant dense_resource<__elided__> : tensor<8xf32>
    %cst_18 = arith.constant dense_resource<__elided__> : tensor<8xf32>
    %cst_19 = arith.constant dense_resource<__elided__> : tensor<16x8xf32>
    %cst_20 = arith.constant dense_resource<__elided__> : tensor<16xf32>
    %cst_21 = arith.constant 1.41421354 : f32
    %cst_22 = arith.constant 1.000000e+00 : f32
    %cst_23 = arith.constant 5.000000e-01 : f32
    %cst_24 = arith.constant dense_resource<__elided__> : tensor<8x16xf32>
    %cst_25 = arith.constant dense_resource<__elided__> : tensor<8xf32>
    %cst_26 = arith.constant dense_resource<__elided__> : tensor<8xf32>
    %cst_27 = arith.constant dense_resource<__elided__> : tensor<8xf32>
    %cst_28 = arith.constant 4.000000e+00 : f32
    %cst_29 = arith.constant dense_resource<__elided__> : tensor<3x8xf32>
    %cst_30 = arith.constant dense_resource<__elided__> : tensor<3xf32>
    %0 = tensor.empty() : tensor<2x8x2x2xf32>
    %1 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%cst_0 : tensor<8xf32>) outs(%0 : tensor<2x8x2x2xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<2x8x2x2xf32>
    %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%arg0, %cst : tensor<2x3x4x4xf32>, tensor<8x3x2x2xf32>) outs(%1 : tensor<2x8x2x2xf32>) -> tensor<2x8x2x2xf32>
    %collapsed = tensor.collapse_shape %2 [[0], [1], [2, 3]] : tensor<2x8x2x2xf32> into tensor<2x8x4xf32>
    %3 = tensor.empty() : tensor<2x4x8xf32>
    %transposed = linalg.transpose ins(%collapsed : tensor<2x8x4xf32>) outs(%3 : tensor<2x4x8xf32>) permutation = [0, 2, 1] 
    %4 = tensor.empty() : tensor<2x4x8xf32>
    %5 = linalg.generic {indexing_maps = [#map2, #map3, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%transposed, %cst_1 : tensor<2x4x8xf32>, tensor<1x4x8xf32>) outs(%4 : tensor<2x4x8xf32>) {
    ^bb0(%in: f32, %in_63: f32, %out: f32):
      %149 = arith.addf %in, %in_63 : f32
      linalg.yield %149 : f32
    } -> tensor<2x4x8xf32>
    %6 = tensor.empty() : tensor<2x4x1xf32>
    %7 = linalg.fill ins(%cst_6 : f32) outs(%6 : tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
    %8 = linalg.generic {indexing_maps = [#map2, #map4], iterator_types = ["parallel", "parallel", "reduction"]} ins(%5 : tensor<2x4x8xf32>) outs(%7 : tensor<2x4x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %149 = arith.addf %in, %out : f32
      linalg.yield %149 : f32
    } -> tensor<2x4x1xf32>
    %9 = tensor.empty() : tensor<2x4x1xf32>
    %10 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%8 : tensor<2x4x1xf32>) outs(%9 : tensor<2x4x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %149 = arith.divf %in, %cst_4 : f32
      linalg.yield %149 : f32
    } -> tensor<2x4x1xf32>
    %11 = tensor.empty() : tensor<2x4x8xf32>
    %12 = linalg.generic {indexing_maps = [#map2, #map4, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%5, %10 : tensor<2x4x8xf32>, tensor<2x4x1xf32>) outs(%11 : tensor<2x4x8xf32>) {
    ^bb0(%in: f32, %in_63: f32, %out: f32):
      %149 = arith.subf %in, %in_63 : f32
      linalg.yield %149 : f32
    } -> tensor<2x4x8xf32>
    %13 = tensor.empty() : tensor<2x4x8xf32>
    %14 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%12 : tensor<2x4x8xf32>) outs(%13 : tensor<2x4x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %149 = arith.mulf %in, %in : f32
      linalg.yield %149 : f32
    } -> tensor<2x4x8xf32>
    %15 = tensor.empty() : tensor<2x4x1xf32>
    %16 = linalg.fill ins(%cst_6 : f32) outs(%15 : tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
    %17 = linalg.generic {indexing_maps = [#map2, #map4], iterator_types = ["parallel", "parallel", "reduction"]} ins(%14 : tensor<2x4x8xf32>) outs(%16 : tensor<2x4x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %149 = arith.addf %in, %out : f32
      linalg.yield %149 : f32
    } -> tensor<2x4x1xf32>
    %18 = tensor.empty() : tensor<2x4x1xf32>
    %19 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%17 : tensor<2x4x1xf32>) outs(%18 : tensor<2x4x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %149 = arith.divf %in, %cst_4 : f32
      linalg.yield %149 : f32
    } -> tensor<2x4x1xf32>
    %20 = tensor.empty() : tensor<2x4x1xf32>
    %21 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%19 : tensor<2x4x1xf32>) outs(%20 : tensor<2x4x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %149 = arith.truncf %cst_5 : f64 to f32
      %150 = arith.addf %in, %149 : f32
      %151 = math.rsqrt %150 : f32
      linalg.yield %151 : f32
    } -> tensor<2x4x1xf32>
    %22 = tensor.empty() : tensor<2x4x8xf32>
    %23 = linalg.generic {indexing_maps = [#map2, #map4, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%12, %21 : tensor<2x4x8xf32>, tensor<2x4x1xf32>) outs(%22 : tensor<2x4x8xf32>) {
    ^bb0(%in: f32, %in_63: f32, %out: f32):
      %149 = arith.mulf %in, %in_63 : f32
      linalg.yield %149 : f32
    } -> tensor<2x4x8xf32>
    %24 = tensor.empty() : tensor<2x4x8xf32>
    %25 = linalg.generic {indexing_maps = [#map2, #map5, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%23, %cst_2 : tensor<2x4x8xf32>, tensor<8xf32>) outs(%24 : tensor<2x4x8xf32>) {
    ^bb0(%in: f32, %in_63: f32, %out: f32):
      %149 = arith.mulf %in, %in_63 : f32
      linalg.yield %149 : f32
    } -> tensor<2x4x8xf32>
    %26 = tensor.empty() : tensor<2x4x8xf32>
    %27 = linalg.generic {indexing_maps = [#map2, #map5, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%25, %cst_3 : tensor<2x4x8xf32>, tensor<8xf32>) outs(%26 : tensor<2x4x8xf32>) {
    ^bb0(%in: f32, %in_63: f32, %out: f32):
      %149 = arith.addf %in, %in_63 : f32
      linalg.yield %149 : f32
    } -> tensor<2x4x8xf32>
    %collapsed_31 = tensor.collapse_shape %27 [[0, 1], [2]] : tensor<2x4x8xf32> into tensor<8x8xf32>
    %28 = tensor.empty() : tensor<8x8xf32>
    %transposed_32 = linalg.transpose ins(%cst_7 : tensor<8x8xf32>) outs(%28 : tensor<8x8xf32>) permutation = [1, 0] 
    %29 = tensor.empty() : tensor<8x8xf32>
    %30 = linalg.fill ins(%cst_6 : f32) outs(%29 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %31 = linalg.matmul ins(%collapsed_31, %transposed_32 : tensor<8x8xf32>, tensor<8x8xf32>) outs(%30 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %32 = tensor.empty() : tensor<8x8xf32>
    %33 = linalg.generic {indexing_maps = [#map6, #map7, #map6], iterator_types = ["parallel", "parallel"]} ins(%31, %cst_8 : tensor<8x8xf32>, tensor<8xf32>) outs(%32 : tensor<8x8xf32>) {
    ^bb0(%in: f32, %in_63: f32, %out: f32):
      %149 = arith.addf %in, %in_63 : f32
      linalg.yield %149 : f32
    } -> tensor<8x8xf32>
    %expanded = tensor.expand_shape %33 [[0, 1], [2]] output_shape [2, 4, 8] : tensor<8x8xf32> into tensor<2x4x8xf32>
    %collapsed_33 = tensor.collapse_shape %27 [[0, 1], [2]] : tensor<2x4x8xf32> into tensor<8x8xf32>
    %34 = tensor.empty() : tensor<8x8xf32>
    %transposed_34 = linalg.transpose ins(%cst_9 : tensor<8x8xf32>) outs(%34 : tensor<8x8xf32>) permutation = [1, 0] 
    %35 = tensor.empty() : tensor<8x8xf32>
    %36 = linalg.fill ins(%cst_6 : f32) outs(%35 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %37 = linalg.matmul ins(%collapsed_33, %transposed_34 : tensor<8x8xf32>, tensor<8x8xf32>) outs(%36 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %38 = tensor.empty() : tensor<8x8xf32>
    %39 = linalg.generic {indexing_maps = [#map6, #map7, #map6], iterator_types = ["parallel", "parallel"]} ins(%37, %cst_10 : tensor<8x8xf32>, tensor<8xf32>) outs(%38 : tensor<8x8xf32>) {
    ^bb0(%in: f32, %in_63: f32, %out: f32):
      %149 = arith.addf %in, %in_63 : f32
      linalg.yield %149 : f32
    } -> tensor<8x8xf32>
    %expanded_35 = tensor.expand_shape %39 [[0, 1], [2]] output_shape [2, 4, 8] : tensor<8x8xf32> into tensor<2x4x8xf32>
    %collapsed_36 = tensor.collapse_shape %27 [[0, 1], [2]] : tensor<2x4x8xf32> into tensor<8x8xf32>
    %40 = tensor.empty() : tensor<8x8xf32>
    %transposed_37 = linalg.transpose ins(%cst_11 : tensor<8x8xf32>) outs(%40 : tensor<8x8xf32>) permutation = [1, 0] 
    %41 = tensor.empty() : tensor<8x8xf32>
    %42 = linalg.fill ins(%cst_6 : f32) outs(%41 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %43 = linalg.matmul ins(%collapsed_36, %transposed_37 : tensor<8x8xf32>, tensor<8x8xf32>) outs(%42 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %44 = tensor.empty() : tensor<8x8xf32>
    %45 = linalg.generic {indexing_maps = [#map6, #map7, #map6], iterator_types = ["parallel", "parallel"]} ins(%43, %cst_12 : tensor<8x8xf32>, tensor<8xf32>) outs(%44 : tensor<8x8xf32>) {
    ^bb0(%in: f32, %in_63: f32, %out: f32):
      %149 = arith.addf %in, %in_63 : f32
      linalg.yield %149 : f32
    } -> tensor<8x8xf32>
    %expanded_38 = tensor.expand_shape %45 [[0, 1], [2]] output_shape [2, 4, 8] : tensor<8x8xf32> into tensor<2x4x8xf32>
    %expanded_39 = tensor.expand_shape %expanded [[0], [1], [2, 3]] output_shape [2, 4, 2, 4] : tensor<2x4x8xf32> into tensor<2x4x2x4xf32>
    %46 = tensor.empty() : tensor<2x2x4x4xf32>
    %transposed_40 = linalg.transpose ins(%expanded_39 : tensor<2x4x2x4xf32>) outs(%46 : tensor<2x2x4x4xf32>) permutation = [0, 2, 1, 3] 
    %collapsed_41 = tensor.collapse_shape %transposed_40 [[0, 1], [2], [3]] : tensor<2x2x4x4xf32> into tensor<4x4x4xf32>
    %expanded_42 = tensor.expand_shape %expanded_35 [[0], [1], [2, 3]] output_shape [2, 4, 2, 4] : tensor<2x4x8xf32> into tensor<2x4x2x4xf32>
    %47 = tensor.empty() : tensor<2x2x4x4xf32>
    %transposed_43 = linalg.transpose ins(%expanded_42 : tensor<2x4x2x4xf32>) outs(%47 : tensor<2x2x4x4xf32>) permutation = [0, 2, 3, 1] 
    %collapsed_44 = tensor.collapse_shape %transposed_43 [[0, 1], [2], [3]] : tensor<2x2x4x4xf32> into tensor<4x4x4xf32>
    %expanded_45 = tensor.expand_shape %expanded_38 [[0], [1], [2, 3]] output_shape [2, 4, 2, 4] : tensor<2x4x8xf32> into tensor<2x4x2x4xf32>
    %48 = tensor.empty() : tensor<2x2x4x4xf32>
    %transposed_46 = linalg.transpose ins(%expanded_45 : tensor<2x4x2x4xf32>) outs(%48 : tensor<2x2x4x4xf32>) permutation = [0, 2, 1, 3] 
    %collapsed_47 = tensor.collapse_shape %transposed_46 [[0, 1], [2], [3]] : tensor<2x2x4x4xf32> into tensor<4x4x4xf32>
    %49 = tensor.empty() : tensor<4x4x4xf32>
    %50 = linalg.fill ins(%cst_6 : f32) outs(%49 : tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
    %51 = linalg.batch_matmul ins(%collapsed_41, %collapsed_44 : tensor<4x4x4xf32>, tensor<4x4x4xf32>) outs(%50 : tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
    %expanded_48 = tensor.expand_shape %51 [[0, 1], [2], [3]] output_shape [2, 2, 4, 4] : tensor<4x4x4xf32> into tensor<2x2x4x4xf32>
    %52 = tensor.empty() : tensor<2x2x4x4xf32>
    %53 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded_48 : tensor<2x2x4x4xf32>) outs(%52 : tensor<2x2x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %149 = arith.truncf %cst_13 : f64 to f32
      %150 = arith.divf %in, %149 : f32
      linalg.yield %150 : f32
    } -> tensor<2x2x4x4xf32>
    %54 = tensor.empty() : tensor<2x2x4x1xf32>
    %55 = linalg.fill ins(%cst_14 : f32) outs(%54 : tensor<2x2x4x1xf32>) -> tensor<2x2x4x1xf32>
    %56 = linalg.generic {indexing_maps = [#map1, #map8], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%53 : tensor<2x2x4x4xf32>) outs(%55 : tensor<2x2x4x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %149 = arith.maximumf %in, %out : f32
      linalg.yield %149 : f32
    } -> tensor<2x2x4x1xf32>
    %57 = tensor.empty() : tensor<2x2x4x4xf32>
    %58 = linalg.generic {indexing_maps = [#map1, #map8, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%53, %56 : tensor<2x2x4x4xf32>, tensor<2x2x4x1xf32>) outs(%57 : tensor<2x2x4x4xf32>) {
    ^bb0(%in: f32, %in_63: f32, %out: f32):
      %149 = arith.subf %in, %in_63 : f32
      linalg.yield %149 : f32
    } -> tensor<2x2x4x4xf32>
    %59 = tensor.empty() : tensor<2x2x4x4xf32>
    %60 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%58 : tensor<2x2x4x4xf32>) outs(%59 : tensor<2x2x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %149 = math.exp %in : f32
      linalg.yield %149 : f32
    } -> tensor<2x2x4x4xf32>
    %61 = tensor.empty() : tensor<2x2x4x1xf32>
    %62 = linalg.fill ins(%cst_6 : f32) outs(%61 : tensor<2x2x4x1xf32>) -> tensor<2x2x4x1xf32>
    %63 = linalg.generic {indexing_maps = [#map1, #map8], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%60 : tensor<2x2x4x4xf32>) outs(%62 : tensor<2x2x4x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %149 = arith.addf %in, %out : f32
      linalg.yield %149 : f32
    } -> tensor<2x2x4x1xf32>
    %64 = tensor.empty() : tensor<2x2x4x4xf32>
    %65 = linalg.generic {indexing_maps = [#map1, #map8, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%60, %63 : tensor<2x2x4x4xf32>, tensor<2x2x4x1xf32>) outs(%64 : tensor<2x2x4x4xf32>) {
    ^bb0(%in: f32, %in_63: f32, %out: f32):
      %149 = arith.divf %in, %in_63 : f32
      linalg.yield %149 : f32
    } -> tensor<2x2x4x4xf32>
    %collapsed_49 = tensor.collapse_shape %65 [[0, 1], [2], [3]] : tensor<2x2x4x4xf32> into tensor<4x4x4xf32>
    %66 = tensor.empty() : tensor<4x4x4xf32>
    %67 = linalg.fill ins(%cst_6 : f32) outs(%66 : tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
    %68 = linalg.batch_matmul ins(%collapsed_49, %collapsed_47 : tensor<4x4x4xf32>, tensor<4x4x4xf32>) outs(%67 : tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
    %expanded_50 = tensor.expand_shape %68 [[0, 1], [2], [3]] output_shape [2, 2, 4, 4] : tensor<4x4x4xf32> into tensor<2x2x4x4xf32>
    %69 = tensor.empty() : tensor<2x4x2x4xf32>
    %transposed_51 = linalg.transpose ins(%expanded_50 : tensor<2x2x4x4xf32>) outs(%69 : tensor<2x4x2x4xf32>) permutation = [0, 2, 1, 3] 
    %collapsed_52 = tensor.collapse_shape %transposed_51 [[0], [1], [2, 3]] : tensor<2x4x2x4xf32> into tensor<2x4x8xf32>
    %collapsed_53 = tensor.collapse_shape %collapsed_52 [[0, 1], [2]] : tensor<2x4x8xf32> into tensor<8x8xf32>
    %70 = tensor.empty() : tensor<8x8xf32>
    %transposed_54 = linalg.transpose ins(%cst_15 : tensor<8x8xf32>) outs(%70 : tensor<8x8xf32>) permutation = [1, 0] 
    %71 = tensor.empty() : tensor<8x8xf32>
    %72 = linalg.fill ins(%cst_6 : f32) outs(%71 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %73 = linalg.matmul ins(%collapsed_53, %transposed_54 : tensor<8x8xf32>, tensor<8x8xf32>) outs(%72 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %74 = tensor.empty() : tensor<8x8xf32>
    %75 = linalg.generic {indexing_maps = [#map6, #map7, #map6], iterator_types = ["parallel", "parallel"]} ins(%73, %cst_16 : tensor<8x8xf32>, tensor<8xf32>) outs(%74 : tensor<8x8xf32>) {
    ^bb0(%in: f32, %in_63: f32, %out: f32):
      %149 = arith.addf %in, %in_63 : f32
      linalg.yield %149 : f32
    } -> tensor<8x8xf32>
    %expanded_55 = tensor.expand_shape %75 [[0, 1], [2]] output_shape [2, 4, 8] : tensor<8x8xf32> into tensor<2x4x8xf32>
    %76 = tensor.empty() : tensor<2x4x8xf32>
    %77 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%5, %expanded_55 : tensor<2x4x8xf32>, tensor<2x4x8xf32>) outs(%76 : tensor<2x4x8xf32>) {
    ^bb0(%in: f32, %in_63: f32, %out: f32):
      %149 = arith.addf %in, %in_63 : f32
      linalg.yield %149 : f32
    } -> tensor<2x4x8xf32>
    %78 = tensor.empty() : tensor<2x4x1xf32>
    %79 = linalg.fill ins(%cst_6 : f32) outs(%78 : tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
    %80 = linalg.generic {indexing_maps = [#map2, #map4], iterator_types = ["parallel", "parallel", "reduction"]} ins(%77 : tensor<2x4x8xf32>) outs(%79 : tensor<2x4x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %149 = arith.addf %in, %out : f32
      linalg.yield %149 : f32
    } -> tensor<2x4x1xf32>
    %81 = tensor.empty() : tensor<2x4x1xf32>
    %82 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%80 : tensor<2x4x1xf32>) outs(%81 : tensor<2x4x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %149 = arith.divf %in, %cst_4 : f32
      linalg.yield %149 : f32
    } -> tensor<2x4x1xf32>
    %83 = tensor.empty() : tensor<2x4x8xf32>
    %84 = linalg.generic {indexing_maps = [#map2, #map4, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%77, %82 : tensor<2x4x8xf32>, tensor<2x4x1xf32>) outs(%83 : tensor<2x4x8xf32>) {
    ^bb0(%in: f32, %in_63: f32, %out: f32):
      %149 = arith.subf %in, %in_63 : f32
      linalg.yield %149 : f32
    } -> tensor<2x4x8xf32>
    %85 = tensor.empty() : tensor<2x4x8xf32>
    %86 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%84 : tensor<2x4x8xf32>) outs(%85 : tensor<2x4x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %149 = arith.mulf %in, %in : f32
      linalg.yield %149 : f32
    } -> tensor<2x4x8xf32>
    %87 = tensor.empty() : tensor<2x4x1xf32>
    %88 = linalg.fill ins(%cst_6 : f32) outs(%87 : tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
    %89 = linalg.generic {indexing_maps = [#map2, #map4], iterator_types = ["parallel", "parallel", "reduction"]} ins(%86 : tensor<2x4x8xf32>) outs(%88 : tensor<2x4x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %149 = arith.addf %in, %out : f32
      linalg.yield %149 : f32
    } -> tensor<2x4x1xf32>
    %90 = tensor.empty() : tensor<2x4x1xf32>
    %91 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%89 : tensor<2x4x1xf32>) outs(%90 : tensor<2x4x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %149 = arith.divf %in, %cst_4 : f32
      linalg.yield %149 : f32
    } -> tensor<2x4x1xf32>
    %92 = tensor.empty() : tensor<2x4x1xf32>
    %93 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%91 : tensor<2x4x1xf32>) outs(%92 : tensor<2x4x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %149 = arith.truncf %cst_5 : f64 to f32
      %150 = arith.addf %in, %149 : f32
      %151 = math.rsqrt %150 : f32
      linalg.yield %151 : f32
    } -> tensor<2x4x1xf32>
    %94 = tensor.empty() : tensor<2x4x8xf32>
    %95 = linalg.generic {indexing_maps = [#map2, #map4, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%84, %93 : tensor<2x4x8xf32>, tensor<2x4x1xf32>) outs(%94 : tensor<2x4x8xf32>) {
    ^bb0(%in: f32, %in_63: f32, %out: f32):
      %149 = arith.mulf %in, %in_63 : f32
      linalg.yield %149 : f32
    } -> tensor<2x4x8xf32>
    %96 = tensor.empty() : tensor<2x4x8xf32>
    %97 = linalg.generic {indexing_maps = [#map2, #map5, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%95, %cst_17 : tensor<2x4x8xf32>, tensor<8xf32>) outs(%96 : tensor<2x4x8xf32>) {
    ^bb0(%in: f32, %in_63: f32, %out: f32):
      %149 = arith.mulf %in, %in_63 : f32
      linalg.yield %149 : f32
    } -> tensor<2x4x8xf32>
    %98 = tensor.empty() : tensor<2x4x8xf32>
    %99 = linalg.generic {indexing_maps = [#map2, #map5, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%97, %cst_18 : tensor<2x4x8xf32>, tensor<8xf32>) outs(%98 : tensor<2x4x8xf32>) {
    ^bb0(%in: f32, %in_63: f32, %out: f32):
      %149 = arith.addf %in, %in_63 : f32
      linalg.yield %149 : f32
    } -> tensor<2x4x8xf32>
    %collapsed_56 = tensor.collapse_shape %99 [[0, 1], [2]] : tensor<2x4x8xf32> into tensor<8x8xf32>
    %100 = tensor.empty() : tensor<8x16xf32>
    %transposed_57 = linalg.transpose ins(%cst_19 : tensor<16x8xf32>) outs(%100 : tensor<8x16xf32>) permutation = [1, 0] 
    %101 = tensor.empty() : tensor<8x16xf32>
    %102 = linalg.fill ins(%cst_6 : f32) outs(%101 : tensor<8x16xf32>) -> tensor<8x16xf32>
    %103 = linalg.matmul ins(%collapsed_56, %transposed_57 : tensor<8x8xf32>, tensor<8x16xf32>) outs(%102 : tensor<8x16xf32>) -> tensor<8x16xf32>
    %104 = tensor.empty() : tensor<8x16xf32>
    %105 = linalg.generic {indexing_maps = [#map6, #map7, #map6], iterator_types = ["parallel", "parallel"]} ins(%103, %cst_20 : tensor<8x16xf32>, tensor<16xf32>) outs(%104 : tensor<8x16xf32>) {
    ^bb0(%in: f32, %in_63: f32, %out: f32):
      %149 = arith.addf %in, %in_63 : f32
      linalg.yield %149 : f32
    } -> tensor<8x16xf32>
    %expanded_58 = tensor.expand_shape %105 [[0, 1], [2]] output_shape [2, 4, 16] : tensor<8x16xf32> into tensor<2x4x16xf32>
    %106 = tensor.empty() : tensor<2x4x16xf32>
    %107 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded_58 : tensor<2x4x16xf32>) outs(%106 : tensor<2x4x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %149 = arith.divf %in, %cst_21 : f32
      %150 = math.erf %149 : f32
      %151 = arith.addf %150, %cst_22 : f32
      %152 = arith.mulf %151, %cst_23 : f32
      %153 = arith.mulf %in, %152 : f32
      linalg.yield %153 : f32
    } -> tensor<2x4x16xf32>
    %collapsed_59 = tensor.collapse_shape %107 [[0, 1], [2]] : tensor<2x4x16xf32> into tensor<8x16xf32>
    %108 = tensor.empty() : tensor<16x8xf32>
    %transposed_60 = linalg.transpose ins(%cst_24 : tensor<8x16xf32>) outs(%108 : tensor<16x8xf32>) permutation = [1, 0] 
    %109 = tensor.empty() : tensor<8x8xf32>
    %110 = linalg.fill ins(%cst_6 : f32) outs(%109 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %111 = linalg.matmul ins(%collapsed_59, %transposed_60 : tensor<8x16xf32>, tensor<16x8xf32>) outs(%110 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %112 = tensor.empty() : tensor<8x8xf32>
    %113 = linalg.generic {indexing_maps = [#map6, #map7, #map6], iterator_types = ["parallel", "parallel"]} ins(%111, %cst_25 : tensor<8x8xf32>, tensor<8xf32>) outs(%112 : tensor<8x8xf32>) {
    ^bb0(%in: f32, %in_63: f32, %out: f32):
      %149 = arith.addf %in, %in_63 : f32
      linalg.yield %149 : f32
    } -> tensor<8x8xf32>
    %expanded_61 = tensor.expand_shape %113 [[0, 1], [2]] output_shape [2, 4, 8] : tensor<8x8xf32> into tensor<2x4x8xf32>
    %114 = tensor.empty() : tensor<2x4x8xf32>
    %115 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%77, %expanded_61 : tensor<2x4x8xf32>, tensor<2x4x8xf32>) outs(%114 : tensor<2x4x8xf32>) {
    ^bb0(%in: f32, %in_63: f32, %out: f32):
      %149 = arith.addf %in, %in_63 : f32
      linalg.yield %149 : f32
    } -> tensor<2x4x8xf32>
    %116 = tensor.empty() : tensor<2x4x1xf32>
    %117 = linalg.fill ins(%cst_6 : f32) outs(%116 : tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
    %118 = linalg.generic {indexing_maps = [#map2, #map4], iterator_types = ["parallel", "parallel", "reduction"]} ins(%115 : tensor<2x4x8xf32>) outs(%117 : tensor<2x4x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %149 = arith.addf %in, %out : f32
      linalg.yield %149 : f32
    } -> tensor<2x4x1xf32>
    %119 = tensor.empty() : tensor<2x4x1xf32>
    %120 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%118 : tensor<2x4x1xf32>) outs(%119 : tensor<2x4x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %149 = arith.divf %in, %cst_4 : f32
      linalg.yield %149 : f32
    } -> tensor<2x4x1xf32>
    %121 = tensor.empty() : tensor<2x4x8xf32>
    %122 = linalg.generic {indexing_maps = [#map2, #map4, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%115, %120 : tensor<2x4x8xf32>, tensor<2x4x1xf32>) outs(%121 : tensor<2x4x8xf32>) {
    ^bb0(%in: f32, %in_63: f32, %out: f32):
      %149 = arith.subf %in, %in_63 : f32
      linalg.yield %149 : f32
    } -> tensor<2x4x8xf32>
    %123 = tensor.empty() : tensor<2x4x8xf32>
    %124 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%122 : tensor<2x4x8xf32>) outs(%123 : tensor<2x4x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %149 = arith.mulf %in, %in : f32
      linalg.yield %149 : f32
    } -> tensor<2x4x8xf32>
    %125 = tensor.empty() : tensor<2x4x1xf32>
    %126 = linalg.fill ins(%cst_6 : f32) outs(%125 : tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
    %127 = linalg.generic {indexing_maps = [#map2, #map4], iterator_types = ["parallel", "parallel", "reduction"]} ins(%124 : tensor<2x4x8xf32>) outs(%126 : tensor<2x4x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %149 = arith.addf %in, %out : f32
      linalg.yield %149 : f32
    } -> tensor<2x4x1xf32>
    %128 = tensor.empty() : tensor<2x4x1xf32>
    %129 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%127 : tensor<2x4x1xf32>) outs(%128 : tensor<2x4x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %149 = arith.divf %in, %cst_4 : f32
      linalg.yield %149 : f32
    } -> tensor<2x4x1xf32>
    %130 = tensor.empty() : tensor<2x4x1xf32>
    %131 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%129 : tensor<2x4x1xf32>) outs(%130 : tensor<2x4x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %149 = arith.truncf %cst_5 : f64 to f32
      %150 = arith.addf %in, %149 : f32
      %151 = math.rsqrt %150 : f32
      linalg.yield %151 : f32
    } -> tensor<2x4x1xf32>
    %132 = tensor.empty() : tensor<2x4x8xf32>
    %133 = linalg.generic {indexing_maps = [#map2, #map4, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%122, %131 : tensor<2x4x8xf32>, tensor<2x4x1xf32>) outs(%132 : tensor<2x4x8xf32>) {
    ^bb0(%in: f32, %in_63: f32, %out: f32):
      %149 = arith.mulf %in, %in_63 : f32
      linalg.yield %149 : f32
    } -> tensor<2x4x8xf32>
    %134 = tensor.empty() : tensor<2x4x8xf32>
    %135 = linalg.generic {indexing_maps = [#map2, #map5, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%133, %cst_26 : tensor<2x4x8xf32>, tensor<8xf32>) outs(%134 : tensor<2x4x8xf32>) {
    ^bb0(%in: f32, %in_63: f32, %out: f32):
      %149 = arith.mulf %in, %in_63 : f32
      linalg.yield %149 : f32
    } -> tensor<2x4x8xf32>
    %136 = tensor.empty() : tensor<2x4x8xf32>
    %137 = linalg.generic {indexing_maps = [#map2, #map5, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%135, %cst_27 : tensor<2x4x8xf32>, tensor<8xf32>) outs(%136 : tensor<2x4x8xf32>) {
    ^bb0(%in: f32, %in_63: f32, %out: f32):
      %149 = arith.addf %in, %in_63 : f32
      linalg.yield %149 : f32
    } -> tensor<2x4x8xf32>
    %138 = tensor.empty() : tensor<2x8xf32>
    %139 = linalg.fill ins(%cst_6 : f32) outs(%138 : tensor<2x8xf32>) -> tensor<2x8xf32>
    %140 = linalg.generic {indexing_maps = [#map2, #map9], iterator_types = ["parallel", "reduction", "parallel"]} ins(%137 : tensor<2x4x8xf32>) outs(%139 : tensor<2x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %149 = arith.addf %in, %out : f32
      linalg.yield %149 : f32
    } -> tensor<2x8xf32>
    %141 = tensor.empty() : tensor<2x8xf32>
    %142 = linalg.generic {indexing_maps = [#map6, #map6], iterator_types = ["parallel", "parallel"]} ins(%140 : tensor<2x8xf32>) outs(%141 : tensor<2x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %149 = arith.divf %in, %cst_28 : f32
      linalg.yield %149 : f32
    } -> tensor<2x8xf32>
    %143 = tensor.empty() : tensor<8x3xf32>
    %transposed_62 = linalg.transpose ins(%cst_29 : tensor<3x8xf32>) outs(%143 : tensor<8x3xf32>) permutation = [1, 0] 
    %144 = tensor.empty() : tensor<2x3xf32>
    %145 = linalg.fill ins(%cst_6 : f32) outs(%144 : tensor<2x3xf32>) -> tensor<2x3xf32>
    %146 = linalg.matmul ins(%142, %transposed_62 : tensor<2x8xf32>, tensor<8x3xf32>) outs(%145 : tensor<2x3xf32>) -> tensor<2x3xf32>
    %147 = tensor.empty() : tensor<2x3xf32>
    %148 = linalg.generic {indexing_maps = [#map6, #map7, #map6], iterator_types = ["parallel", "parallel"]} ins(%146, %cst_30 : tensor<2x3xf32>, tensor<3xf32>) outs(%147 : tensor<2x3xf32>) {
    ^bb0(%in: f32, %in_63: f32, %out: f32):
      %149 = arith.addf %in, %in_63 : f32
      linalg.yield %149 : f32
    } -> tensor<2x3xf32>
    return %148 : tensor<2x3xf32>
  }
}


