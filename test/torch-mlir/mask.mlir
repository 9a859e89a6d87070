// A causal self-attention model as torch-mlir prints it: the f32 weights
// elided, the causal mask a boolean buffer (torch.tril(...).bool(), as
// GPT-2's `bias`) kept as an i1 dense_resource blob with its data, one byte
// per element, applied as torch.where(mask, scores, finfo.min). Ingestion
// turns the i1 blob into a dense literal (LLVM translation cannot lower i1
// resources); logits [2, 4, 5] per position.
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/Inputs/conformance.py data mask %t
// RUN: pipe-train %s --loss cross-entropy --init kaiming-uniform --init-seed 9 --save-init-weights %t/init.safetensors --devices 2 --data %t/data.safetensors --steps 3 --log-every 1 --log-json %t/log.jsonl --emit-scheduled %t/scheduled.mlir | FileCheck %s
// RUN: %python %S/Inputs/conformance.py check mask %t | FileCheck %s --check-prefix=REF
// RUN: FileCheck %s --check-prefix=SCHED < %t/scheduled.mlir

// CHECK: == model: loss cross-entropy (mean) of result 0, attached (--loss)
// CHECK-NEXT: inputs: 0: tensor<2x4x8xf32> 1: tensor<2x4xi64> (target)
// CHECK-NEXT: parameters: 261 in 8 tensors (those without data: --init kaiming-uniform, seed 9)
// CHECK: step 3/3  loss
// REF: mask: first loss matches PyTorch
// SCHED-NOT: torch_tensor_4_4_torch.bool
// SCHED: dense<{{\[}}[true, false, false, false], [true, true, false, false], [true, true, true, false], [true, true, true, true]]> : tensor<4x4xi1>
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d1)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map3 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map4 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
module {
  func.func @main(%arg0: tensor<2x4x8xf32>) -> tensor<2x4x5xf32> {
    %cst = arith.constant dense_resource<__elided__> : tensor<8x8xf32>
    %cst_0 = arith.constant dense_resource<__elided__> : tensor<8xf32>
    %cst_1 = arith.constant 0.000000e+00 : f32
    %cst_2 = arith.constant dense_resource<__elided__> : tensor<8x8xf32>
    %cst_3 = arith.constant dense_resource<__elided__> : tensor<8xf32>
    %cst_4 = arith.constant dense_resource<__elided__> : tensor<8x8xf32>
    %cst_5 = arith.constant dense_resource<__elided__> : tensor<8xf32>
    %cst_6 = arith.constant 2.828427 : f64
    %cst_7 = arith.constant dense_resource<torch_tensor_4_4_torch.bool> : tensor<4x4xi1>
    %cst_8 = arith.constant -3.40282347E+38 : f32
    %cst_9 = arith.constant 0xFF800000 : f32
    %cst_10 = arith.constant dense_resource<__elided__> : tensor<5x8xf32>
    %cst_11 = arith.constant dense_resource<__elided__> : tensor<5xf32>
    %collapsed = tensor.collapse_shape %arg0 [[0, 1], [2]] : tensor<2x4x8xf32> into tensor<8x8xf32>
    %0 = tensor.empty() : tensor<8x8xf32>
    %transposed = linalg.transpose ins(%cst : tensor<8x8xf32>) outs(%0 : tensor<8x8xf32>) permutation = [1, 0] 
    %1 = tensor.empty() : tensor<8x8xf32>
    %2 = linalg.fill ins(%cst_1 : f32) outs(%1 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %3 = linalg.matmul ins(%collapsed, %transposed : tensor<8x8xf32>, tensor<8x8xf32>) outs(%2 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %4 = tensor.empty() : tensor<8x8xf32>
    %5 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%3, %cst_0 : tensor<8x8xf32>, tensor<8xf32>) outs(%4 : tensor<8x8xf32>) {
    ^bb0(%in: f32, %in_22: f32, %out: f32):
      %47 = arith.addf %in, %in_22 : f32
      linalg.yield %47 : f32
    } -> tensor<8x8xf32>
    %expanded = tensor.expand_shape %5 [[0, 1], [2]] output_shape [2, 4, 8] : tensor<8x8xf32> into tensor<2x4x8xf32>
    %collapsed_12 = tensor.collapse_shape %arg0 [[0, 1], [2]] : tensor<2x4x8xf32> into tensor<8x8xf32>
    %6 = tensor.empty() : tensor<8x8xf32>
    %transposed_13 = linalg.transpose ins(%cst_2 : tensor<8x8xf32>) outs(%6 : tensor<8x8xf32>) permutation = [1, 0] 
    %7 = tensor.empty() : tensor<8x8xf32>
    %8 = linalg.fill ins(%cst_1 : f32) outs(%7 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %9 = linalg.matmul ins(%collapsed_12, %transposed_13 : tensor<8x8xf32>, tensor<8x8xf32>) outs(%8 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %10 = tensor.empty() : tensor<8x8xf32>
    %11 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%9, %cst_3 : tensor<8x8xf32>, tensor<8xf32>) outs(%10 : tensor<8x8xf32>) {
    ^bb0(%in: f32, %in_22: f32, %out: f32):
      %47 = arith.addf %in, %in_22 : f32
      linalg.yield %47 : f32
    } -> tensor<8x8xf32>
    %expanded_14 = tensor.expand_shape %11 [[0, 1], [2]] output_shape [2, 4, 8] : tensor<8x8xf32> into tensor<2x4x8xf32>
    %collapsed_15 = tensor.collapse_shape %arg0 [[0, 1], [2]] : tensor<2x4x8xf32> into tensor<8x8xf32>
    %12 = tensor.empty() : tensor<8x8xf32>
    %transposed_16 = linalg.transpose ins(%cst_4 : tensor<8x8xf32>) outs(%12 : tensor<8x8xf32>) permutation = [1, 0] 
    %13 = tensor.empty() : tensor<8x8xf32>
    %14 = linalg.fill ins(%cst_1 : f32) outs(%13 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %15 = linalg.matmul ins(%collapsed_15, %transposed_16 : tensor<8x8xf32>, tensor<8x8xf32>) outs(%14 : tensor<8x8xf32>) -> tensor<8x8xf32>
    %16 = tensor.empty() : tensor<8x8xf32>
    %17 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%15, %cst_5 : tensor<8x8xf32>, tensor<8xf32>) outs(%16 : tensor<8x8xf32>) {
    ^bb0(%in: f32, %in_22: f32, %out: f32):
      %47 = arith.addf %in, %in_22 : f32
      linalg.yield %47 : f32
    } -> tensor<8x8xf32>
    %expanded_17 = tensor.expand_shape %17 [[0, 1], [2]] output_shape [2, 4, 8] : tensor<8x8xf32> into tensor<2x4x8xf32>
    %18 = tensor.empty() : tensor<2x8x4xf32>
    %transposed_18 = linalg.transpose ins(%expanded_14 : tensor<2x4x8xf32>) outs(%18 : tensor<2x8x4xf32>) permutation = [0, 2, 1] 
    %19 = tensor.empty() : tensor<2x4x4xf32>
    %20 = linalg.fill ins(%cst_1 : f32) outs(%19 : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %21 = linalg.batch_matmul ins(%expanded, %transposed_18 : tensor<2x4x8xf32>, tensor<2x8x4xf32>) outs(%20 : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %22 = tensor.empty() : tensor<2x4x4xf32>
    %23 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%21 : tensor<2x4x4xf32>) outs(%22 : tensor<2x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %47 = arith.truncf %cst_6 : f64 to f32
      %48 = arith.divf %in, %47 : f32
      linalg.yield %48 : f32
    } -> tensor<2x4x4xf32>
    %24 = tensor.empty() : tensor<2x4x4xf32>
    %25 = linalg.generic {indexing_maps = [#map3, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%cst_7, %23 : tensor<4x4xi1>, tensor<2x4x4xf32>) outs(%24 : tensor<2x4x4xf32>) {
    ^bb0(%in: i1, %in_22: f32, %out: f32):
      %47 = arith.select %in, %in_22, %cst_8 : f32
      linalg.yield %47 : f32
    } -> tensor<2x4x4xf32>
    %26 = tensor.empty() : tensor<2x4x1xf32>
    %27 = linalg.fill ins(%cst_9 : f32) outs(%26 : tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
    %28 = linalg.generic {indexing_maps = [#map2, #map4], iterator_types = ["parallel", "parallel", "reduction"]} ins(%25 : tensor<2x4x4xf32>) outs(%27 : tensor<2x4x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %47 = arith.maximumf %in, %out : f32
      linalg.yield %47 : f32
    } -> tensor<2x4x1xf32>
    %29 = tensor.empty() : tensor<2x4x4xf32>
    %30 = linalg.generic {indexing_maps = [#map2, #map4, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%25, %28 : tensor<2x4x4xf32>, tensor<2x4x1xf32>) outs(%29 : tensor<2x4x4xf32>) {
    ^bb0(%in: f32, %in_22: f32, %out: f32):
      %47 = arith.subf %in, %in_22 : f32
      linalg.yield %47 : f32
    } -> tensor<2x4x4xf32>
    %31 = tensor.empty() : tensor<2x4x4xf32>
    %32 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%30 : tensor<2x4x4xf32>) outs(%31 : tensor<2x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %47 = math.exp %in : f32
      linalg.yield %47 : f32
    } -> tensor<2x4x4xf32>
    %33 = tensor.empty() : tensor<2x4x1xf32>
    %34 = linalg.fill ins(%cst_1 : f32) outs(%33 : tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
    %35 = linalg.generic {indexing_maps = [#map2, #map4], iterator_types = ["parallel", "parallel", "reduction"]} ins(%32 : tensor<2x4x4xf32>) outs(%34 : tensor<2x4x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %47 = arith.addf %in, %out : f32
      linalg.yield %47 : f32
    } -> tensor<2x4x1xf32>
    %36 = tensor.empty() : tensor<2x4x4xf32>
    %37 = linalg.generic {indexing_maps = [#map2, #map4, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%32, %35 : tensor<2x4x4xf32>, tensor<2x4x1xf32>) outs(%36 : tensor<2x4x4xf32>) {
    ^bb0(%in: f32, %in_22: f32, %out: f32):
      %47 = arith.divf %in, %in_22 : f32
      linalg.yield %47 : f32
    } -> tensor<2x4x4xf32>
    %38 = tensor.empty() : tensor<2x4x8xf32>
    %39 = linalg.fill ins(%cst_1 : f32) outs(%38 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %40 = linalg.batch_matmul ins(%37, %expanded_17 : tensor<2x4x4xf32>, tensor<2x4x8xf32>) outs(%39 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %collapsed_19 = tensor.collapse_shape %40 [[0, 1], [2]] : tensor<2x4x8xf32> into tensor<8x8xf32>
    %41 = tensor.empty() : tensor<8x5xf32>
    %transposed_20 = linalg.transpose ins(%cst_10 : tensor<5x8xf32>) outs(%41 : tensor<8x5xf32>) permutation = [1, 0] 
    %42 = tensor.empty() : tensor<8x5xf32>
    %43 = linalg.fill ins(%cst_1 : f32) outs(%42 : tensor<8x5xf32>) -> tensor<8x5xf32>
    %44 = linalg.matmul ins(%collapsed_19, %transposed_20 : tensor<8x8xf32>, tensor<8x5xf32>) outs(%43 : tensor<8x5xf32>) -> tensor<8x5xf32>
    %45 = tensor.empty() : tensor<8x5xf32>
    %46 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%44, %cst_11 : tensor<8x5xf32>, tensor<5xf32>) outs(%45 : tensor<8x5xf32>) {
    ^bb0(%in: f32, %in_22: f32, %out: f32):
      %47 = arith.addf %in, %in_22 : f32
      linalg.yield %47 : f32
    } -> tensor<8x5xf32>
    %expanded_21 = tensor.expand_shape %46 [[0, 1], [2]] output_shape [2, 4, 5] : tensor<8x5xf32> into tensor<2x4x5xf32>
    return %expanded_21 : tensor<2x4x5xf32>
  }
}

{-#
  dialect_resources: {
    builtin: {
      torch_tensor_4_4_torch.bool: "0x0100000001000000010100000101010001010101"
    }
  }
#-}


