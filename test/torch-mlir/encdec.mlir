// An encoder-decoder as torch-mlir's torchscript.compile(...,
// output_type="linalg-on-tensors") prints it with large weights elided
// (@forward, torch.debug_module_name): an encoder layer (self-attention,
// residual, layer norm) over embedded source features [2, 4, 8], and a
// decoder layer over target tokens [2, 3] (an embedding lookup, as
// torch-mlir lowers aten.embedding: a generic with tensor.extract),
// cross-attention whose keys and values are the encoder's output, residual,
// layer norm and a vocabulary head. Linear layers on 3-d activations are
// torch-mlir's matmul lowering: the transposed weight broadcast over the
// batch and a linalg.batch_matmul. Logits [2, 3, 6].
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/Inputs/conformance.py data encdec %t
// RUN: pipe-train %s --loss cross-entropy --init normal --init-seed 5 --save-init-weights %t/init.safetensors --devices 2 --data %t/data.safetensors --steps 3 --log-every 1 --log-json %t/log.jsonl | FileCheck %s
// RUN: %python %S/Inputs/conformance.py check encdec %t | FileCheck %s --check-prefix=REF

// CHECK: == model: loss cross-entropy (mean) of result 0, attached (--loss)
// CHECK-NEXT: inputs: 0: tensor<2x4x8xf32> 1: tensor<2x3xi64> 2: tensor<2x3xi64> (target)
// CHECK-NEXT: parameters: {{[0-9]+}} in 23 tensors (those without data: --init normal, seed 5)
// CHECK: step 3/3  loss
// REF: encdec: first loss matches PyTorch
#map = affine_map<(d0, d1, d2) -> (d1, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d2)>
#map3 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#map4 = affine_map<(d0, d1, d2) -> (d0, d1)>
module attributes {torch.debug_module_name = "EncoderDecoder"} {
  func.func @forward(%arg0: tensor<2x4x8xf32>, %arg1: tensor<2x3xi64>) -> tensor<2x3x6xf32> {
    %cst = arith.constant dense_resource<__elided__> : tensor<8x8xf32>
    %cst_0 = arith.constant dense_resource<__elided__> : tensor<8xf32>
    %cst_1 = arith.constant 0.000000e+00 : f32
    %cst_2 = arith.constant dense_resource<__elided__> : tensor<8x8xf32>
    %cst_3 = arith.constant dense_resource<__elided__> : tensor<8xf32>
    %cst_4 = arith.constant dense_resource<__elided__> : tensor<8x8xf32>
    %cst_5 = arith.constant dense_resource<__elided__> : tensor<8xf32>
    %cst_6 = arith.constant 2.828427 : f64
    %cst_7 = arith.constant 0xFF800000 : f32
    %cst_8 = arith.constant dense_resource<__elided__> : tensor<8x8xf32>
    %cst_9 = arith.constant dense_resource<__elided__> : tensor<8xf32>
    %cst_10 = arith.constant dense_resource<__elided__> : tensor<8xf32>
    %cst_11 = arith.constant dense_resource<__elided__> : tensor<8xf32>
    %cst_12 = arith.constant 8.000000e+00 : f32
    %cst_13 = arith.constant 1.000000e-05 : f64
    %cst_14 = arith.constant dense_resource<__elided__> : tensor<6x8xf32>
    %cst_15 = arith.constant dense_resource<__elided__> : tensor<8x8xf32>
    %cst_16 = arith.constant dense_resource<__elided__> : tensor<8xf32>
    %cst_17 = arith.constant dense_resource<__elided__> : tensor<8x8xf32>
    %cst_18 = arith.constant dense_resource<__elided__> : tensor<8xf32>
    %cst_19 = arith.constant dense_resource<__elided__> : tensor<8x8xf32>
    %cst_20 = arith.constant dense_resource<__elided__> : tensor<8xf32>
    %cst_21 = arith.constant dense_resource<__elided__> : tensor<8x8xf32>
    %cst_22 = arith.constant dense_resource<__elided__> : tensor<8xf32>
    %cst_23 = arith.constant dense_resource<__elided__> : tensor<8xf32>
    %cst_24 = arith.constant dense_resource<__elided__> : tensor<8xf32>
    %cst_25 = arith.constant dense_resource<__elided__> : tensor<6x8xf32>
    %cst_26 = arith.constant dense_resource<__elided__> : tensor<6xf32>
    %0 = tensor.empty() : tensor<8x8xf32>
    %transposed = linalg.transpose ins(%cst : tensor<8x8xf32>) outs(%0 : tensor<8x8xf32>) permutation = [1, 0] 
    %1 = tensor.empty() : tensor<2x8x8xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%transposed : tensor<8x8xf32>) outs(%1 : tensor<2x8x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<2x8x8xf32>
    %3 = tensor.empty() : tensor<2x4x8xf32>
    %4 = linalg.fill ins(%cst_1 : f32) outs(%3 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %5 = linalg.batch_matmul ins(%arg0, %2 : tensor<2x4x8xf32>, tensor<2x8x8xf32>) outs(%4 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %6 = tensor.empty() : tensor<2x4x8xf32>
    %7 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%5, %cst_0 : tensor<2x4x8xf32>, tensor<8xf32>) outs(%6 : tensor<2x4x8xf32>) {
    ^bb0(%in: f32, %in_37: f32, %out: f32):
      %164 = arith.addf %in, %in_37 : f32
      linalg.yield %164 : f32
    } -> tensor<2x4x8xf32>
    %8 = tensor.empty() : tensor<8x8xf32>
    %transposed_27 = linalg.transpose ins(%cst_2 : tensor<8x8xf32>) outs(%8 : tensor<8x8xf32>) permutation = [1, 0] 
    %9 = tensor.empty() : tensor<2x8x8xf32>
    %10 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%transposed_27 : tensor<8x8xf32>) outs(%9 : tensor<2x8x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<2x8x8xf32>
    %11 = tensor.empty() : tensor<2x4x8xf32>
    %12 = linalg.fill ins(%cst_1 : f32) outs(%11 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %13 = linalg.batch_matmul ins(%arg0, %10 : tensor<2x4x8xf32>, tensor<2x8x8xf32>) outs(%12 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %14 = tensor.empty() : tensor<2x4x8xf32>
    %15 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%13, %cst_3 : tensor<2x4x8xf32>, tensor<8xf32>) outs(%14 : tensor<2x4x8xf32>) {
    ^bb0(%in: f32, %in_37: f32, %out: f32):
      %164 = arith.addf %in, %in_37 : f32
      linalg.yield %164 : f32
    } -> tensor<2x4x8xf32>
    %16 = tensor.empty() : tensor<8x8xf32>
    %transposed_28 = linalg.transpose ins(%cst_4 : tensor<8x8xf32>) outs(%16 : tensor<8x8xf32>) permutation = [1, 0] 
    %17 = tensor.empty() : tensor<2x8x8xf32>
    %18 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%transposed_28 : tensor<8x8xf32>) outs(%17 : tensor<2x8x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<2x8x8xf32>
    %19 = tensor.empty() : tensor<2x4x8xf32>
    %20 = linalg.fill ins(%cst_1 : f32) outs(%19 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %21 = linalg.batch_matmul ins(%arg0, %18 : tensor<2x4x8xf32>, tensor<2x8x8xf32>) outs(%20 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %22 = tensor.empty() : tensor<2x4x8xf32>
    %23 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%21, %cst_5 : tensor<2x4x8xf32>, tensor<8xf32>) outs(%22 : tensor<2x4x8xf32>) {
    ^bb0(%in: f32, %in_37: f32, %out: f32):
      %164 = arith.addf %in, %in_37 : f32
      linalg.yield %164 : f32
    } -> tensor<2x4x8xf32>
    %24 = tensor.empty() : tensor<2x8x4xf32>
    %transposed_29 = linalg.transpose ins(%15 : tensor<2x4x8xf32>) outs(%24 : tensor<2x8x4xf32>) permutation = [0, 2, 1] 
    %25 = tensor.empty() : tensor<2x4x4xf32>
    %26 = linalg.fill ins(%cst_1 : f32) outs(%25 : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %27 = linalg.batch_matmul ins(%7, %transposed_29 : tensor<2x4x8xf32>, tensor<2x8x4xf32>) outs(%26 : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %28 = tensor.empty() : tensor<2x4x4xf32>
    %29 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%27 : tensor<2x4x4xf32>) outs(%28 : tensor<2x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %164 = arith.truncf %cst_6 : f64 to f32
      %165 = arith.divf %in, %164 : f32
      linalg.yield %165 : f32
    } -> tensor<2x4x4xf32>
    %30 = tensor.empty() : tensor<2x4x1xf32>
    %31 = linalg.fill ins(%cst_7 : f32) outs(%30 : tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
    %32 = linalg.generic {indexing_maps = [#map1, #map3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%29 : tensor<2x4x4xf32>) outs(%31 : tensor<2x4x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %164 = arith.maximumf %in, %out : f32
      linalg.yield %164 : f32
    } -> tensor<2x4x1xf32>
    %33 = tensor.empty() : tensor<2x4x4xf32>
    %34 = linalg.generic {indexing_maps = [#map1, #map3, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%29, %32 : tensor<2x4x4xf32>, tensor<2x4x1xf32>) outs(%33 : tensor<2x4x4xf32>) {
    ^bb0(%in: f32, %in_37: f32, %out: f32):
      %164 = arith.subf %in, %in_37 : f32
      linalg.yield %164 : f32
    } -> tensor<2x4x4xf32>
    %35 = tensor.empty() : tensor<2x4x4xf32>
    %36 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%34 : tensor<2x4x4xf32>) outs(%35 : tensor<2x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %164 = math.exp %in : f32
      linalg.yield %164 : f32
    } -> tensor<2x4x4xf32>
    %37 = tensor.empty() : tensor<2x4x1xf32>
    %38 = linalg.fill ins(%cst_1 : f32) outs(%37 : tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
    %39 = linalg.generic {indexing_maps = [#map1, #map3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%36 : tensor<2x4x4xf32>) outs(%38 : tensor<2x4x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %164 = arith.addf %in, %out : f32
      linalg.yield %164 : f32
    } -> tensor<2x4x1xf32>
    %40 = tensor.empty() : tensor<2x4x4xf32>
    %41 = linalg.generic {indexing_maps = [#map1, #map3, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%36, %39 : tensor<2x4x4xf32>, tensor<2x4x1xf32>) outs(%40 : tensor<2x4x4xf32>) {
    ^bb0(%in: f32, %in_37: f32, %out: f32):
      %164 = arith.divf %in, %in_37 : f32
      linalg.yield %164 : f32
    } -> tensor<2x4x4xf32>
    %42 = tensor.empty() : tensor<2x4x8xf32>
    %43 = linalg.fill ins(%cst_1 : f32) outs(%42 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %44 = linalg.batch_matmul ins(%41, %23 : tensor<2x4x4xf32>, tensor<2x4x8xf32>) outs(%43 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %45 = tensor.empty() : tensor<8x8xf32>
    %transposed_30 = linalg.transpose ins(%cst_8 : tensor<8x8xf32>) outs(%45 : tensor<8x8xf32>) permutation = [1, 0] 
    %46 = tensor.empty() : tensor<2x8x8xf32>
    %47 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%transposed_30 : tensor<8x8xf32>) outs(%46 : tensor<2x8x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<2x8x8xf32>
    %48 = tensor.empty() : tensor<2x4x8xf32>
    %49 = linalg.fill ins(%cst_1 : f32) outs(%48 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %50 = linalg.batch_matmul ins(%44, %47 : tensor<2x4x8xf32>, tensor<2x8x8xf32>) outs(%49 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %51 = tensor.empty() : tensor<2x4x8xf32>
    %52 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%50, %cst_9 : tensor<2x4x8xf32>, tensor<8xf32>) outs(%51 : tensor<2x4x8xf32>) {
    ^bb0(%in: f32, %in_37: f32, %out: f32):
      %164 = arith.addf %in, %in_37 : f32
      linalg.yield %164 : f32
    } -> tensor<2x4x8xf32>
    %53 = tensor.empty() : tensor<2x4x8xf32>
    %54 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg0, %52 : tensor<2x4x8xf32>, tensor<2x4x8xf32>) outs(%53 : tensor<2x4x8xf32>) {
    ^bb0(%in: f32, %in_37: f32, %out: f32):
      %164 = arith.addf %in, %in_37 : f32
      linalg.yield %164 : f32
    } -> tensor<2x4x8xf32>
    %55 = tensor.empty() : tensor<2x4x1xf32>
    %56 = linalg.fill ins(%cst_1 : f32) outs(%55 : tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
    %57 = linalg.generic {indexing_maps = [#map1, #map3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%54 : tensor<2x4x8xf32>) outs(%56 : tensor<2x4x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %164 = arith.addf %in, %out : f32
      linalg.yield %164 : f32
    } -> tensor<2x4x1xf32>
    %58 = tensor.empty() : tensor<2x4x1xf32>
    %59 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%57 : tensor<2x4x1xf32>) outs(%58 : tensor<2x4x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %164 = arith.divf %in, %cst_12 : f32
      linalg.yield %164 : f32
    } -> tensor<2x4x1xf32>
    %60 = tensor.empty() : tensor<2x4x8xf32>
    %61 = linalg.generic {indexing_maps = [#map1, #map3, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%54, %59 : tensor<2x4x8xf32>, tensor<2x4x1xf32>) outs(%60 : tensor<2x4x8xf32>) {
    ^bb0(%in: f32, %in_37: f32, %out: f32):
      %164 = arith.subf %in, %in_37 : f32
      linalg.yield %164 : f32
    } -> tensor<2x4x8xf32>
    %62 = tensor.empty() : tensor<2x4x8xf32>
    %63 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%61 : tensor<2x4x8xf32>) outs(%62 : tensor<2x4x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %164 = arith.mulf %in, %in : f32
      linalg.yield %164 : f32
    } -> tensor<2x4x8xf32>
    %64 = tensor.empty() : tensor<2x4x1xf32>
    %65 = linalg.fill ins(%cst_1 : f32) outs(%64 : tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
    %66 = linalg.generic {indexing_maps = [#map1, #map3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%63 : tensor<2x4x8xf32>) outs(%65 : tensor<2x4x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %164 = arith.addf %in, %out : f32
      linalg.yield %164 : f32
    } -> tensor<2x4x1xf32>
    %67 = tensor.empty() : tensor<2x4x1xf32>
    %68 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%66 : tensor<2x4x1xf32>) outs(%67 : tensor<2x4x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %164 = arith.divf %in, %cst_12 : f32
      linalg.yield %164 : f32
    } -> tensor<2x4x1xf32>
    %69 = tensor.empty() : tensor<2x4x1xf32>
    %70 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%68 : tensor<2x4x1xf32>) outs(%69 : tensor<2x4x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %164 = arith.truncf %cst_13 : f64 to f32
      %165 = arith.addf %in, %164 : f32
      %166 = math.rsqrt %165 : f32
      linalg.yield %166 : f32
    } -> tensor<2x4x1xf32>
    %71 = tensor.empty() : tensor<2x4x8xf32>
    %72 = linalg.generic {indexing_maps = [#map1, #map3, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%61, %70 : tensor<2x4x8xf32>, tensor<2x4x1xf32>) outs(%71 : tensor<2x4x8xf32>) {
    ^bb0(%in: f32, %in_37: f32, %out: f32):
      %164 = arith.mulf %in, %in_37 : f32
      linalg.yield %164 : f32
    } -> tensor<2x4x8xf32>
    %73 = tensor.empty() : tensor<2x4x8xf32>
    %74 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%72, %cst_10 : tensor<2x4x8xf32>, tensor<8xf32>) outs(%73 : tensor<2x4x8xf32>) {
    ^bb0(%in: f32, %in_37: f32, %out: f32):
      %164 = arith.mulf %in, %in_37 : f32
      linalg.yield %164 : f32
    } -> tensor<2x4x8xf32>
    %75 = tensor.empty() : tensor<2x4x8xf32>
    %76 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%74, %cst_11 : tensor<2x4x8xf32>, tensor<8xf32>) outs(%75 : tensor<2x4x8xf32>) {
    ^bb0(%in: f32, %in_37: f32, %out: f32):
      %164 = arith.addf %in, %in_37 : f32
      linalg.yield %164 : f32
    } -> tensor<2x4x8xf32>
    %77 = tensor.empty() : tensor<2x3x8xf32>
    %78 = linalg.generic {indexing_maps = [#map4, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg1 : tensor<2x3xi64>) outs(%77 : tensor<2x3x8xf32>) {
    ^bb0(%in: i64, %out: f32):
      %164 = arith.index_cast %in : i64 to index
      %165 = linalg.index 2 : index
      %extracted = tensor.extract %cst_14[%164, %165] : tensor<6x8xf32>
      linalg.yield %extracted : f32
    } -> tensor<2x3x8xf32>
    %79 = tensor.empty() : tensor<8x8xf32>
    %transposed_31 = linalg.transpose ins(%cst_15 : tensor<8x8xf32>) outs(%79 : tensor<8x8xf32>) permutation = [1, 0] 
    %80 = tensor.empty() : tensor<2x8x8xf32>
    %81 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%transposed_31 : tensor<8x8xf32>) outs(%80 : tensor<2x8x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<2x8x8xf32>
    %82 = tensor.empty() : tensor<2x3x8xf32>
    %83 = linalg.fill ins(%cst_1 : f32) outs(%82 : tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
    %84 = linalg.batch_matmul ins(%78, %81 : tensor<2x3x8xf32>, tensor<2x8x8xf32>) outs(%83 : tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
    %85 = tensor.empty() : tensor<2x3x8xf32>
    %86 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%84, %cst_16 : tensor<2x3x8xf32>, tensor<8xf32>) outs(%85 : tensor<2x3x8xf32>) {
    ^bb0(%in: f32, %in_37: f32, %out: f32):
      %164 = arith.addf %in, %in_37 : f32
      linalg.yield %164 : f32
    } -> tensor<2x3x8xf32>
    %87 = tensor.empty() : tensor<8x8xf32>
    %transposed_32 = linalg.transpose ins(%cst_17 : tensor<8x8xf32>) outs(%87 : tensor<8x8xf32>) permutation = [1, 0] 
    %88 = tensor.empty() : tensor<2x8x8xf32>
    %89 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%transposed_32 : tensor<8x8xf32>) outs(%88 : tensor<2x8x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<2x8x8xf32>
    %90 = tensor.empty() : tensor<2x4x8xf32>
    %91 = linalg.fill ins(%cst_1 : f32) outs(%90 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %92 = linalg.batch_matmul ins(%76, %89 : tensor<2x4x8xf32>, tensor<2x8x8xf32>) outs(%91 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %93 = tensor.empty() : tensor<2x4x8xf32>
    %94 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%92, %cst_18 : tensor<2x4x8xf32>, tensor<8xf32>) outs(%93 : tensor<2x4x8xf32>) {
    ^bb0(%in: f32, %in_37: f32, %out: f32):
      %164 = arith.addf %in, %in_37 : f32
      linalg.yield %164 : f32
    } -> tensor<2x4x8xf32>
    %95 = tensor.empty() : tensor<8x8xf32>
    %transposed_33 = linalg.transpose ins(%cst_19 : tensor<8x8xf32>) outs(%95 : tensor<8x8xf32>) permutation = [1, 0] 
    %96 = tensor.empty() : tensor<2x8x8xf32>
    %97 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%transposed_33 : tensor<8x8xf32>) outs(%96 : tensor<2x8x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<2x8x8xf32>
    %98 = tensor.empty() : tensor<2x4x8xf32>
    %99 = linalg.fill ins(%cst_1 : f32) outs(%98 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %100 = linalg.batch_matmul ins(%76, %97 : tensor<2x4x8xf32>, tensor<2x8x8xf32>) outs(%99 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %101 = tensor.empty() : tensor<2x4x8xf32>
    %102 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%100, %cst_20 : tensor<2x4x8xf32>, tensor<8xf32>) outs(%101 : tensor<2x4x8xf32>) {
    ^bb0(%in: f32, %in_37: f32, %out: f32):
      %164 = arith.addf %in, %in_37 : f32
      linalg.yield %164 : f32
    } -> tensor<2x4x8xf32>
    %103 = tensor.empty() : tensor<2x8x4xf32>
    %transposed_34 = linalg.transpose ins(%94 : tensor<2x4x8xf32>) outs(%103 : tensor<2x8x4xf32>) permutation = [0, 2, 1] 
    %104 = tensor.empty() : tensor<2x3x4xf32>
    %105 = linalg.fill ins(%cst_1 : f32) outs(%104 : tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    %106 = linalg.batch_matmul ins(%86, %transposed_34 : tensor<2x3x8xf32>, tensor<2x8x4xf32>) outs(%105 : tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    %107 = tensor.empty() : tensor<2x3x4xf32>
    %108 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%106 : tensor<2x3x4xf32>) outs(%107 : tensor<2x3x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %164 = arith.truncf %cst_6 : f64 to f32
      %165 = arith.divf %in, %164 : f32
      linalg.yield %165 : f32
    } -> tensor<2x3x4xf32>
    %109 = tensor.empty() : tensor<2x3x1xf32>
    %110 = linalg.fill ins(%cst_7 : f32) outs(%109 : tensor<2x3x1xf32>) -> tensor<2x3x1xf32>
    %111 = linalg.generic {indexing_maps = [#map1, #map3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%108 : tensor<2x3x4xf32>) outs(%110 : tensor<2x3x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %164 = arith.maximumf %in, %out : f32
      linalg.yield %164 : f32
    } -> tensor<2x3x1xf32>
    %112 = tensor.empty() : tensor<2x3x4xf32>
    %113 = linalg.generic {indexing_maps = [#map1, #map3, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%108, %111 : tensor<2x3x4xf32>, tensor<2x3x1xf32>) outs(%112 : tensor<2x3x4xf32>) {
    ^bb0(%in: f32, %in_37: f32, %out: f32):
      %164 = arith.subf %in, %in_37 : f32
      linalg.yield %164 : f32
    } -> tensor<2x3x4xf32>
    %114 = tensor.empty() : tensor<2x3x4xf32>
    %115 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%113 : tensor<2x3x4xf32>) outs(%114 : tensor<2x3x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %164 = math.exp %in : f32
      linalg.yield %164 : f32
    } -> tensor<2x3x4xf32>
    %116 = tensor.empty() : tensor<2x3x1xf32>
    %117 = linalg.fill ins(%cst_1 : f32) outs(%116 : tensor<2x3x1xf32>) -> tensor<2x3x1xf32>
    %118 = linalg.generic {indexing_maps = [#map1, #map3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%115 : tensor<2x3x4xf32>) outs(%117 : tensor<2x3x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %164 = arith.addf %in, %out : f32
      linalg.yield %164 : f32
    } -> tensor<2x3x1xf32>
    %119 = tensor.empty() : tensor<2x3x4xf32>
    %120 = linalg.generic {indexing_maps = [#map1, #map3, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%115, %118 : tensor<2x3x4xf32>, tensor<2x3x1xf32>) outs(%119 : tensor<2x3x4xf32>) {
    ^bb0(%in: f32, %in_37: f32, %out: f32):
      %164 = arith.divf %in, %in_37 : f32
      linalg.yield %164 : f32
    } -> tensor<2x3x4xf32>
    %121 = tensor.empty() : tensor<2x3x8xf32>
    %122 = linalg.fill ins(%cst_1 : f32) outs(%121 : tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
    %123 = linalg.batch_matmul ins(%120, %102 : tensor<2x3x4xf32>, tensor<2x4x8xf32>) outs(%122 : tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
    %124 = tensor.empty() : tensor<8x8xf32>
    %transposed_35 = linalg.transpose ins(%cst_21 : tensor<8x8xf32>) outs(%124 : tensor<8x8xf32>) permutation = [1, 0] 
    %125 = tensor.empty() : tensor<2x8x8xf32>
    %126 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%transposed_35 : tensor<8x8xf32>) outs(%125 : tensor<2x8x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<2x8x8xf32>
    %127 = tensor.empty() : tensor<2x3x8xf32>
    %128 = linalg.fill ins(%cst_1 : f32) outs(%127 : tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
    %129 = linalg.batch_matmul ins(%123, %126 : tensor<2x3x8xf32>, tensor<2x8x8xf32>) outs(%128 : tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
    %130 = tensor.empty() : tensor<2x3x8xf32>
    %131 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%129, %cst_22 : tensor<2x3x8xf32>, tensor<8xf32>) outs(%130 : tensor<2x3x8xf32>) {
    ^bb0(%in: f32, %in_37: f32, %out: f32):
      %164 = arith.addf %in, %in_37 : f32
      linalg.yield %164 : f32
    } -> tensor<2x3x8xf32>
    %132 = tensor.empty() : tensor<2x3x8xf32>
    %133 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%78, %131 : tensor<2x3x8xf32>, tensor<2x3x8xf32>) outs(%132 : tensor<2x3x8xf32>) {
    ^bb0(%in: f32, %in_37: f32, %out: f32):
      %164 = arith.addf %in, %in_37 : f32
      linalg.yield %164 : f32
    } -> tensor<2x3x8xf32>
    %134 = tensor.empty() : tensor<2x3x1xf32>
    %135 = linalg.fill ins(%cst_1 : f32) outs(%134 : tensor<2x3x1xf32>) -> tensor<2x3x1xf32>
    %136 = linalg.generic {indexing_maps = [#map1, #map3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%133 : tensor<2x3x8xf32>) outs(%135 : tensor<2x3x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %164 = arith.addf %in, %out : f32
      linalg.yield %164 : f32
    } -> tensor<2x3x1xf32>
    %137 = tensor.empty() : tensor<2x3x1xf32>
    %138 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%136 : tensor<2x3x1xf32>) outs(%137 : tensor<2x3x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %164 = arith.divf %in, %cst_12 : f32
      linalg.yield %164 : f32
    } -> tensor<2x3x1xf32>
    %139 = tensor.empty() : tensor<2x3x8xf32>
    %140 = linalg.generic {indexing_maps = [#map1, #map3, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%133, %138 : tensor<2x3x8xf32>, tensor<2x3x1xf32>) outs(%139 : tensor<2x3x8xf32>) {
    ^bb0(%in: f32, %in_37: f32, %out: f32):
      %164 = arith.subf %in, %in_37 : f32
      linalg.yield %164 : f32
    } -> tensor<2x3x8xf32>
    %141 = tensor.empty() : tensor<2x3x8xf32>
    %142 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%140 : tensor<2x3x8xf32>) outs(%141 : tensor<2x3x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %164 = arith.mulf %in, %in : f32
      linalg.yield %164 : f32
    } -> tensor<2x3x8xf32>
    %143 = tensor.empty() : tensor<2x3x1xf32>
    %144 = linalg.fill ins(%cst_1 : f32) outs(%143 : tensor<2x3x1xf32>) -> tensor<2x3x1xf32>
    %145 = linalg.generic {indexing_maps = [#map1, #map3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%142 : tensor<2x3x8xf32>) outs(%144 : tensor<2x3x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %164 = arith.addf %in, %out : f32
      linalg.yield %164 : f32
    } -> tensor<2x3x1xf32>
    %146 = tensor.empty() : tensor<2x3x1xf32>
    %147 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%145 : tensor<2x3x1xf32>) outs(%146 : tensor<2x3x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %164 = arith.divf %in, %cst_12 : f32
      linalg.yield %164 : f32
    } -> tensor<2x3x1xf32>
    %148 = tensor.empty() : tensor<2x3x1xf32>
    %149 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%147 : tensor<2x3x1xf32>) outs(%148 : tensor<2x3x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %164 = arith.truncf %cst_13 : f64 to f32
      %165 = arith.addf %in, %164 : f32
      %166 = math.rsqrt %165 : f32
      linalg.yield %166 : f32
    } -> tensor<2x3x1xf32>
    %150 = tensor.empty() : tensor<2x3x8xf32>
    %151 = linalg.generic {indexing_maps = [#map1, #map3, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%140, %149 : tensor<2x3x8xf32>, tensor<2x3x1xf32>) outs(%150 : tensor<2x3x8xf32>) {
    ^bb0(%in: f32, %in_37: f32, %out: f32):
      %164 = arith.mulf %in, %in_37 : f32
      linalg.yield %164 : f32
    } -> tensor<2x3x8xf32>
    %152 = tensor.empty() : tensor<2x3x8xf32>
    %153 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%151, %cst_23 : tensor<2x3x8xf32>, tensor<8xf32>) outs(%152 : tensor<2x3x8xf32>) {
    ^bb0(%in: f32, %in_37: f32, %out: f32):
      %164 = arith.mulf %in, %in_37 : f32
      linalg.yield %164 : f32
    } -> tensor<2x3x8xf32>
    %154 = tensor.empty() : tensor<2x3x8xf32>
    %155 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%153, %cst_24 : tensor<2x3x8xf32>, tensor<8xf32>) outs(%154 : tensor<2x3x8xf32>) {
    ^bb0(%in: f32, %in_37: f32, %out: f32):
      %164 = arith.addf %in, %in_37 : f32
      linalg.yield %164 : f32
    } -> tensor<2x3x8xf32>
    %156 = tensor.empty() : tensor<8x6xf32>
    %transposed_36 = linalg.transpose ins(%cst_25 : tensor<6x8xf32>) outs(%156 : tensor<8x6xf32>) permutation = [1, 0] 
    %157 = tensor.empty() : tensor<2x8x6xf32>
    %158 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%transposed_36 : tensor<8x6xf32>) outs(%157 : tensor<2x8x6xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<2x8x6xf32>
    %159 = tensor.empty() : tensor<2x3x6xf32>
    %160 = linalg.fill ins(%cst_1 : f32) outs(%159 : tensor<2x3x6xf32>) -> tensor<2x3x6xf32>
    %161 = linalg.batch_matmul ins(%155, %158 : tensor<2x3x8xf32>, tensor<2x8x6xf32>) outs(%160 : tensor<2x3x6xf32>) -> tensor<2x3x6xf32>
    %162 = tensor.empty() : tensor<2x3x6xf32>
    %163 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%161, %cst_26 : tensor<2x3x6xf32>, tensor<6xf32>) outs(%162 : tensor<2x3x6xf32>) {
    ^bb0(%in: f32, %in_37: f32, %out: f32):
      %164 = arith.addf %in, %in_37 : f32
      linalg.yield %164 : f32
    } -> tensor<2x3x6xf32>
    return %163 : tensor<2x3x6xf32>
  }
}


