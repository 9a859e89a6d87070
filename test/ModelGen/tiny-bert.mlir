// BERT-style encoder: erf GELU, f64 layer-norm variance, pooler, MLM head
// tied to the word embedding, NSP head.
// RUN: pipe-gen --model=tiny-bert | FileCheck %s
// RUN: pipe-gen --model=tiny-bert | FileCheck %s --check-prefix=TIED
// RUN: pipe-gen --model=tiny-bert | pipe-opt > /dev/null
// RUN: pipe-gen --model=tiny-bert | mlir-opt > /dev/null
// RUN: pipe-gen --model=tiny-bert --layernorm-f64=false | FileCheck %s --check-prefix=F32

// CHECK: ml_program.global private mutable @global_seed
// CHECK-LABEL: func.func @forward(%arg0: tensor<2x16xi64>, %arg1: tensor<2x16xi64>, %arg2: tensor<2xi64>) -> tensor<f32>
// CHECK: %[[WORD:cst[_0-9]*]] = arith.constant dense_resource<torch_tensor_64_32_torch.float32> : tensor<64x32xf32>
// CHECK: tensor.extract %[[WORD]][
// Embedding LayerNorm: squared deviations accumulated in f64.
// CHECK: linalg.fill ins(%{{.*}} : f64) outs(%{{.*}} : tensor<2x16x1xf64>)
// CHECK: arith.extf %{{.*}} : f32 to f64
// CHECK: arith.truncf %{{.*}} : f64 to f32
// Q projection: x @ W^T as a generic contraction with the permuted weight map.
// CHECK: iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%{{.*}}, %{{.*}} : tensor<2x16x32xf32>, tensor<32x32xf32>)
// FFN: W^T materialised by a transpose copy, then linalg.matmul.
// CHECK: ins(%{{.*}} : tensor<64x32xf32>) outs(%{{.*}} : tensor<32x64xf32>)
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<32x32xf32>, tensor<32x64xf32>)
// CHECK: math.erf
// Pooler on token 0.
// CHECK: tensor.extract_slice %{{.*}}[0, 0, 0] [2, 1, 32] [1, 1, 1]
// CHECK: math.tanh
// MLM decoder: the word embedding again.
// CHECK: ins(%{{.*}}, %[[WORD]] : tensor<2x16x32xf32>, tensor<64x32xf32>)
// NSP loss on the pooled output, added to the MLM loss.
// CHECK: ins(%arg2 : tensor<2xi64>)
// CHECK: return

// F32-NOT: f64

// The word embedding has exactly two uses: the gather and the MLM decoder.
// TIED: %[[E:cst[_0-9]*]] = arith.constant dense_resource<torch_tensor_64_32_torch.float32> : tensor<64x32xf32>
// TIED-NOT: %[[E]]{{[^_0-9]}}
// TIED: tensor.extract %[[E]][
// TIED-NOT: %[[E]]{{[^_0-9]}}
// TIED: ins(%{{.*}}, %[[E]] : tensor<2x16x32xf32>, tensor<64x32xf32>)
// TIED-NOT: %[[E]]{{[^_0-9]}}
// TIED: return
