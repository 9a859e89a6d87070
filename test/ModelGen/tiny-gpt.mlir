// Structure of the generated GPT-2-style model: torch-mlir idioms, the tied
// LM head, and the inline weights. Both optimizers parse and verify it.
// RUN: pipe-gen --model=tiny-gpt | FileCheck %s
// RUN: pipe-gen --model=tiny-gpt | FileCheck %s --check-prefix=TIED
// RUN: pipe-gen --model=tiny-gpt | pipe-opt --verify-roundtrip > /dev/null
// RUN: pipe-gen --model=tiny-gpt | mlir-opt > /dev/null
// RUN: pipe-gen --model=tiny-gpt --weights=zero | FileCheck %s --check-prefix=ZERO
// RUN: pipe-gen --model=tiny-gpt --weights=none | FileCheck %s --check-prefix=NONE
// RUN: pipe-gen --model=tiny-gpt --weights=none | mlir-opt | FileCheck %s --check-prefix=NONE
// RUN: pipe-gen --model=tiny-gpt --dtype=bf16 | mlir-opt | FileCheck %s --check-prefix=BF16

// CHECK: ml_program.global private mutable @global_seed(dense<0> : tensor<i64>) : tensor<i64>
// CHECK-LABEL: func.func @forward(%arg0: tensor<2x16xi64>, %arg1: tensor<2x16xi64>) -> tensor<f32>
// CHECK: %[[WTE:cst[_0-9]*]] = arith.constant dense_resource<torch_tensor_64_32_torch.float32> : tensor<64x32xf32>
// CHECK: %[[WPE:cst[_0-9]*]] = arith.constant dense_resource<torch_tensor_64_32_torch.float32_1> : tensor<64x32xf32>

// Token embedding: torch-mlir's gather form.
// CHECK: linalg.generic {{.*}} ins(%arg0 : tensor<2x16xi64>) outs(%{{.*}} : tensor<2x16x32xf32>)
// CHECK-NEXT: ^bb0(%[[ID:.*]]: i64, %{{.*}}: f32):
// CHECK-NEXT: %[[ROW:.*]] = arith.index_cast %[[ID]] : i64 to index
// CHECK-NEXT: %[[COL:.*]] = linalg.index 2 : index
// CHECK-NEXT: tensor.extract %[[WTE]][%[[ROW]], %[[COL]]] : tensor<64x32xf32>
// Position embedding from an arange generic.
// CHECK: linalg.index 1 : index
// CHECK: tensor.extract %[[WPE]][

// Pre-LN layer: mean, variance (f32 here), rsqrt.
// CHECK: math.rsqrt
// Conv1D c_attn [in, out] through linalg.matmul, then the q/k/v split.
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<32x32xf32>, tensor<32x96xf32>)
// CHECK: tensor.extract_slice %{{.*}}[0, 0, 0] [2, 16, 32] [1, 1, 1] : tensor<2x16x96xf32> to tensor<2x16x32xf32>
// CHECK: tensor.extract_slice %{{.*}}[0, 0, 32] [2, 16, 32] [1, 1, 1]
// CHECK: tensor.extract_slice %{{.*}}[0, 0, 64] [2, 16, 32] [1, 1, 1]
// Head split: expand_shape, permute copy, collapse_shape; scores by batch_matmul.
// CHECK: tensor.expand_shape %{{.*}} {{\[}}[0], [1], [2, 3]] output_shape [2, 16, 2, 16]
// CHECK: linalg.batch_matmul ins(%{{.*}}, %{{.*}} : tensor<4x16x16xf32>, tensor<4x16x16xf32>)
// Causal mask on indices, then softmax with max subtraction.
// CHECK: arith.cmpi ugt
// CHECK: arith.select %{{.*}}, %{{.*}}, %{{.*}} : f32
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: arith.divf
// GELU, tanh approximation.
// CHECK: math.tanh

// Tied LM head: the same constant as the gather, as a permuted contraction.
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%{{.*}}, %[[WTE]] : tensor<2x16x32xf32>, tensor<64x32xf32>) outs(%{{.*}} : tensor<2x16x64xf32>)
// Cross-entropy: log-softmax, label gather with ignore_index, mean.
// CHECK: math.log
// CHECK: arith.cmpi ne, %{{.*}}, %{{.*}} : i64
// CHECK: tensor.extract %{{.*}}[%{{.*}}, %{{.*}}] : tensor<32x64xf32>
// CHECK: return %{{.*}} : tensor<f32>

// CHECK: dialect_resources
// CHECK: torch_tensor_64_32_torch.float32: "0x04000000

// The tied embedding has exactly two uses: the gather and the LM head.
// TIED: %[[E:cst[_0-9]*]] = arith.constant dense_resource<torch_tensor_64_32_torch.float32> : tensor<64x32xf32>
// TIED-NOT: %[[E]]{{[^_0-9]}}
// TIED: tensor.extract %[[E]][
// TIED-NOT: %[[E]]{{[^_0-9]}}
// TIED: ins(%{{.*}}, %[[E]] : tensor<2x16x32xf32>, tensor<64x32xf32>)
// TIED-NOT: %[[E]]{{[^_0-9]}}
// TIED: return

// ZERO: torch_tensor_32_torch.float32: "0x0400000000000000000000000000000000

// NONE: arith.constant dense_resource<torch_tensor_64_32_torch.float32> : tensor<64x32xf32>
// NONE-NOT: dialect_resources

// BF16: func.func @forward(%arg0: tensor<2x16xi64>, %arg1: tensor<2x16xi64>) -> tensor<bf16>
// BF16: arith.constant dense_resource<torch_tensor_64_32_torch.bfloat16> : tensor<64x32xbf16>
// BF16: torch_tensor_64_32_torch.bfloat16: "0x02000000
