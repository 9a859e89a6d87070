// GPT-2 as a sequence classifier (--classes): the ids are the only input,
// the last position's (or, with --pooling mean, the mean) final hidden
// state goes through score.weight [C, d] without bias, and the function
// returns the logits. The head's C * d parameters are the task head's.
// RUN: pipe-gen --model=tiny-gpt --classes 3 | FileCheck %s --check-prefix=LAST
// RUN: pipe-gen --model=tiny-gpt --classes 3 --pooling mean | FileCheck %s --check-prefix=MEAN
// RUN: pipe-gen --model=tiny-gpt --classes 3 | pipe-opt --verify-roundtrip > /dev/null
// RUN: pipe-gen --model=tiny-gpt --classes 3 --print-param-count | FileCheck %s --check-prefix=COUNT
// RUN: not pipe-gen --model=tiny-bert --classes 3 2>&1 | FileCheck %s --check-prefix=BERT
// RUN: not pipe-gen --model=tiny-gpt --pooling mean 2>&1 | FileCheck %s --check-prefix=NOCLASSES
// RUN: not pipe-gen --model=tiny-gpt --classes 3 --pooling max 2>&1 | FileCheck %s --check-prefix=BADPOOL
// RUN: not pipe-gen --model=tiny-gpt --classes 1 2>&1 | FileCheck %s --check-prefix=ONE
// RUN: not pipe-gen --model=tiny-gpt --classes 3 --emit-main 2>&1 | FileCheck %s --check-prefix=MAIN
// pipe-train trains it on an attached cross-entropy and reports accuracy.
// RUN: pipe-train --preset tiny-gpt --classes 3 --pooling mean --compile-only --emit-scheduled %t.mlir | FileCheck %s --check-prefix=TRAIN
// RUN: FileCheck %s --check-prefix=GRAPH < %t.mlir
// RUN: not pipe-train --pooling mean --compile-only 2>&1 | FileCheck %s --check-prefix=TRAINNOCLASSES

// LAST-LABEL: func.func @forward(%arg0: tensor<2x16xi64>) -> tensor<2x3xf32>
// LAST: %[[SCORE:.*]] = arith.constant dense_resource<torch_tensor_3_32_torch.float32> : tensor<3x32xf32>
// LAST: %[[LASTPOS:.*]] = tensor.extract_slice %{{.*}}[0, 15, 0] [2, 1, 32] [1, 1, 1] : tensor<2x16x32xf32> to tensor<2x1x32xf32>
// LAST: %[[POOLED:.*]] = tensor.collapse_shape %[[LASTPOS]] {{\[\[}}0], [1, 2]] : tensor<2x1x32xf32> into tensor<2x32xf32>
// LAST: %[[LOGITS:.*]] = linalg.generic {{.*}} ins(%[[POOLED]], %[[SCORE]] : tensor<2x32xf32>, tensor<3x32xf32>)
// LAST: return %[[LOGITS]] : tensor<2x3xf32>

// MEAN: %[[SUM:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]} ins(%{{.*}} : tensor<2x16x32xf32>) outs(%{{.*}} : tensor<2x32xf32>)
// MEAN: arith.addf
// MEAN: %[[POOLED:.*]] = linalg.generic {{.*}} ins(%[[SUM]] : tensor<2x32xf32>)
// MEAN: arith.mulf %{{.*}}, %{{.*}} : f32
// MEAN: linalg.generic {{.*}} ins(%[[POOLED]], %{{.*}} : tensor<2x32xf32>, tensor<3x32xf32>)
// MEAN: return %{{.*}} : tensor<2x3xf32>

// COUNT: task-head parameters: 96

// BERT: --classes applies to GPT-2 models only
// NOCLASSES: --pooling applies to a classifier (--classes)
// BADPOOL: --pooling must be 'last' or 'mean', got 'max'
// ONE: classes = 1 is out of range: expected 2..4194304
// MAIN: a main that prints the loss needs a model returning one; a classifier returns logits

// TRAIN: == compiling
// GRAPH: pipe.graph @forward(%{{.*}}: tensor<4x16xi64>, %{{.*}}: tensor<4xi64>) -> (tensor<f32> {pipe.loss_seed = 1.000000e+00 : f32}, tensor<2xi64> {pipe.metric = "accuracy"})
// TRAINNOCLASSES: pipe-train: --pooling applies to a classifier (--classes)
