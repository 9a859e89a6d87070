// A torch-mlir-style model with a boolean mask stored as an i1
// dense_resource (which LLVM translation cannot lower: "no known conversion
// for innermost element type" before), reshaped by a tensor.expand_shape in
// the older syntax without output_shape: ingestion upgrades the one and
// turns the other into a dense literal, so the model trains in pipe-train,
// and its scheduled program compiles with pipe-compile and runs in
// pipe-runner. The first loss equals the reference computed with numpy on
// the same weights and data within 1e-4 (Inputs/bool-mask-model.py); the
// dense-literal mask trains alike.
// RUN: rm -rf %t && mkdir -p %t/resource %t/dense
// RUN: %python %S/Inputs/bool-mask-model.py make %t/resource resource
// RUN: %python %S/Inputs/bool-mask-model.py make %t/dense dense
// RUN: pipe-train %t/resource/model.mlir --loss mse --devices 1 --data %t/resource/data.safetensors --steps 3 --log-every 1 --log-json %t/resource/log.jsonl --emit-scheduled %t/resource/scheduled.mlir 2>&1 | FileCheck %s
// RUN: %python %S/Inputs/bool-mask-model.py check %t/resource %t/resource/log.jsonl 4 | FileCheck %s --check-prefix=REF
// RUN: pipe-train %t/dense/model.mlir --loss mse --devices 1 --data %t/dense/data.safetensors --steps 1 --log-json %t/dense/log.jsonl | FileCheck %s --check-prefix=DENSE
// RUN: %python %S/Inputs/bool-mask-model.py check %t/dense %t/dense/log.jsonl 4 | FileCheck %s --check-prefix=REF
// RUN: FileCheck %s --check-prefix=SCHED < %t/resource/scheduled.mlir
// RUN: pipe-compile %t/resource/scheduled.mlir -o %t/resource/model.so --weights %t/resource/w.safetensors -O 0
// RUN: pipe-runner %t/resource/model.so --weights %t/resource/w.safetensors --data %t/resource/data.safetensors --steps 1 | FileCheck %s --check-prefix=RUNNER

// CHECK: model.mlir:7:13: warning: upgraded older syntax: tensor.expand_shape without `output_shape` (MLIR before LLVM 19) now has `output_shape [4, 8]`
// CHECK: step 3/3  loss
// DENSE: step 1/1  loss
// REF: loss matches the reference
// SCHED-NOT: dense_resource<torch_tensor_32_torch.bool>
// SCHED: dense<{{.*}}true{{.*}}> : tensor<32xi1>
// RUNNER-NOT: nan
// RUNNER: step 1/1  loss 2.1405
