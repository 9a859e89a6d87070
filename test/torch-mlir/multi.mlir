// A function with several results, as torch-mlir's torchscript.compile
// prints a module returning a tuple: (hidden, logits, probabilities) of an
// MLP with tanh and a sigmoid written as torch-mlir lowers it
// (1 / (1 + exp(-x))), weights elided. --loss-result picks the result the
// loss reads; the others and the ops only they use are dropped.
// RUN: rm -rf %t && mkdir -p %t/ce %t/mse
// RUN: %python %S/Inputs/conformance.py data multi %t/ce --result 1
// RUN: pipe-train %s --loss cross-entropy --loss-result 1 --init kaiming-uniform --init-seed 4 --save-init-weights %t/ce/init.safetensors --devices 2 --data %t/ce/data.safetensors --steps 3 --log-every 1 --log-json %t/ce/log.jsonl | FileCheck %s --check-prefix=CE
// RUN: %python %S/Inputs/conformance.py check multi %t/ce --result 1 | FileCheck %s --check-prefix=REF
// RUN: %python %S/Inputs/conformance.py data multi %t/mse --loss mse --result 2
// RUN: pipe-train %s --loss mse --loss-result 2 --init xavier-uniform --init-seed 4 --save-init-weights %t/mse/init.safetensors --devices 2 --data %t/mse/data.safetensors --steps 3 --log-every 1 --log-json %t/mse/log.jsonl | FileCheck %s --check-prefix=MSE
// RUN: %python %S/Inputs/conformance.py check multi %t/mse --loss mse --result 2 | FileCheck %s --check-prefix=REF
// The check fails when the weights differ from those pipe-train used.
// RUN: not %python %S/Inputs/conformance.py check multi %t/mse --loss mse --result 2 --perturb 2>&1 | FileCheck %s --check-prefix=PERTURB

// CE: == model: loss cross-entropy (mean) of result 1, attached (--loss)
// CE-NEXT: inputs: 0: tensor<4x8xf32> 1: tensor<4xi64> (target)
// CE-NEXT: parameters: 229 in 4 tensors
// CE: step 3/3  loss
// MSE: == model: loss mse (mean) of result 2, attached (--loss)
// MSE-NEXT: inputs: 0: tensor<4x8xf32> 1: tensor<4x5xf32> (target)
// MSE: step 3/3  loss
// REF: multi: first loss matches PyTorch
// PERTURB: multi: first loss {{.*}}, PyTorch
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d1)>
module attributes {torch.debug_module_name = "MultiHead"} {
  func.func @forward(%arg0: tensor<4x8xf32>) -> (tensor<4x16xf32>, tensor<4x5xf32>, tensor<4x5xf32>) {
    %cst = arith.constant dense_resource<__elided__> : tensor<16x8xf32>
    %cst_0 = arith.constant dense_resource<__elided__> : tensor<16xf32>
    %cst_1 = arith.constant 0.000000e+00 : f32
    %cst_2 = arith.constant dense_resource<__elided__> : tensor<5x16xf32>
    %cst_3 = arith.constant dense_resource<__elided__> : tensor<5xf32>
    %cst_4 = arith.constant 1.000000e+00 : f32
    %0 = tensor.empty() : tensor<8x16xf32>
    %transposed = linalg.transpose ins(%cst : tensor<16x8xf32>) outs(%0 : tensor<8x16xf32>) permutation = [1, 0] 
    %1 = tensor.empty() : tensor<4x16xf32>
    %2 = linalg.fill ins(%cst_1 : f32) outs(%1 : tensor<4x16xf32>) -> tensor<4x16xf32>
    %3 = linalg.matmul ins(%arg0, %transposed : tensor<4x8xf32>, tensor<8x16xf32>) outs(%2 : tensor<4x16xf32>) -> tensor<4x16xf32>
    %4 = tensor.empty() : tensor<4x16xf32>
    %5 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%3, %cst_0 : tensor<4x16xf32>, tensor<16xf32>) outs(%4 : tensor<4x16xf32>) {
    ^bb0(%in: f32, %in_6: f32, %out: f32):
      %16 = arith.addf %in, %in_6 : f32
      linalg.yield %16 : f32
    } -> tensor<4x16xf32>
    %6 = tensor.empty() : tensor<4x16xf32>
    %7 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%5 : tensor<4x16xf32>) outs(%6 : tensor<4x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %16 = math.tanh %in : f32
      linalg.yield %16 : f32
    } -> tensor<4x16xf32>
    %8 = tensor.empty() : tensor<16x5xf32>
    %transposed_5 = linalg.transpose ins(%cst_2 : tensor<5x16xf32>) outs(%8 : tensor<16x5xf32>) permutation = [1, 0] 
    %9 = tensor.empty() : tensor<4x5xf32>
    %10 = linalg.fill ins(%cst_1 : f32) outs(%9 : tensor<4x5xf32>) -> tensor<4x5xf32>
    %11 = linalg.matmul ins(%7, %transposed_5 : tensor<4x16xf32>, tensor<16x5xf32>) outs(%10 : tensor<4x5xf32>) -> tensor<4x5xf32>
    %12 = tensor.empty() : tensor<4x5xf32>
    %13 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%11, %cst_3 : tensor<4x5xf32>, tensor<5xf32>) outs(%12 : tensor<4x5xf32>) {
    ^bb0(%in: f32, %in_6: f32, %out: f32):
      %16 = arith.addf %in, %in_6 : f32
      linalg.yield %16 : f32
    } -> tensor<4x5xf32>
    %14 = tensor.empty() : tensor<4x5xf32>
    %15 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%13 : tensor<4x5xf32>) outs(%14 : tensor<4x5xf32>) {
    ^bb0(%in: f32, %out: f32):
      %16 = arith.negf %in : f32
      %17 = math.exp %16 : f32
      %18 = arith.addf %17, %cst_4 : f32
      %19 = arith.divf %cst_4, %18 : f32
      linalg.yield %19 : f32
    } -> tensor<4x5xf32>
    return %7, %13, %15 : tensor<4x16xf32>, tensor<4x5xf32>, tensor<4x5xf32>
  }
}


