// T5-style encoder-decoder: one shared embedding used by both stacks and the
// LM head, relative position bias, and every decoder layer's cross-attention
// reading the final encoder output (the graph is not a chain).
// RUN: pipe-gen --model=tiny-t5 | FileCheck %s
// RUN: pipe-gen --model=tiny-t5 | FileCheck %s --check-prefix=TIED
// RUN: pipe-gen --model=tiny-t5 | pipe-opt > /dev/null
// RUN: pipe-gen --model=tiny-t5 | mlir-opt > /dev/null
// RUN: pipe-gen --model=tiny-t5 --relative-bias=false | FileCheck %s --check-prefix=NOBIAS

// CHECK-LABEL: func.func @forward(%arg0: tensor<2x16xi64>, %arg1: tensor<2x8xi64>, %arg2: tensor<2x8xi64>) -> tensor<f32>
// CHECK: %[[SHARED:cst[_0-9]*]] = arith.constant dense_resource<torch_tensor_64_32_torch.float32> : tensor<64x32xf32>
// Encoder embedding.
// CHECK: ins(%arg0 : tensor<2x16xi64>)
// CHECK: tensor.extract %[[SHARED]][
// Relative position buckets from indices (log-spaced), then a gather of the
// [buckets, heads] table into a [1, heads, q, k] bias.
// CHECK: math.log
// CHECK: arith.fptosi
// CHECK: outs(%{{.*}} : tensor<1x4x16x16xf32>)
// CHECK: tensor.extract %{{.*}}[%{{.*}}, %{{.*}}] : tensor<32x4xf32>
// RMSNorm and ReLU FFN.
// CHECK: math.rsqrt
// CHECK: arith.maximumf %{{.*}}, %{{.*}} : f32
// Decoder embedding: the same constant.
// CHECK: ins(%arg2 : tensor<2x8xi64>)
// CHECK: tensor.extract %[[SHARED]][
// Cross-attention K and V of both decoder layers read one encoder output.
// CHECK: ins(%[[ENC:[0-9]+]], %{{.*}} : tensor<2x16x32xf32>, tensor<32x32xf32>)
// CHECK: ins(%[[ENC]], %{{.*}} : tensor<2x16x32xf32>, tensor<32x32xf32>)
// CHECK: ins(%[[ENC]], %{{.*}} : tensor<2x16x32xf32>, tensor<32x32xf32>)
// CHECK: ins(%[[ENC]], %{{.*}} : tensor<2x16x32xf32>, tensor<32x32xf32>)
// CHECK-NOT: tensor<2x16x32xf32>, tensor<32x32xf32>
// Tied LM head: transpose copy of the shared embedding, then linalg.matmul.
// CHECK: ins(%[[SHARED]] : tensor<64x32xf32>) outs(%{{.*}} : tensor<32x64xf32>)
// CHECK: linalg.matmul
// CHECK: return

// NOBIAS-NOT: tensor<32x4xf32>

// The shared embedding has exactly three uses: both gathers and the LM head.
// TIED: %[[E:cst[_0-9]*]] = arith.constant dense_resource<torch_tensor_64_32_torch.float32> : tensor<64x32xf32>
// TIED-NOT: %[[E]]{{[^_0-9]}}
// TIED: tensor.extract %[[E]][
// TIED-NOT: %[[E]]{{[^_0-9]}}
// TIED: tensor.extract %[[E]][
// TIED-NOT: %[[E]]{{[^_0-9]}}
// TIED: ins(%[[E]] : tensor<64x32xf32>) outs(%{{.*}} : tensor<32x64xf32>)
// TIED-NOT: %[[E]]{{[^_0-9]}}
// TIED: return
