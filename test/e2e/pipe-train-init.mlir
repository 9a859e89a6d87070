// pipe-train --init on an export whose weights are all elided
// (Inputs/elided-cnn.mlir: conv2d, eval-mode batch_norm, relu, linear in
// torch-mlir's style): it trains with each initialisation on 2 devices
// (granularity auto falls back to op blocks: the model has no repeated
// layers), the BatchNorm running statistics stay frozen at 0 and 1, and
// --save-init-weights writes a file that --init-weights reloads to the same
// first loss.
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/Inputs/make-data.py %t/data.safetensors input0:F32:8x2x3x4x4:17:0.5 input1:I64:8x2:5
// RUN: for init in normal xavier-uniform kaiming-uniform zeros; do pipe-train %S/Inputs/elided-cnn.mlir --loss cross-entropy --init $init --init-seed 5 --data %t/data.safetensors --steps 3 --log-every 1 2>&1; done | FileCheck %s
// RUN: pipe-train %S/Inputs/elided-cnn.mlir --loss cross-entropy --init kaiming-uniform --init-seed 5 --data %t/data.safetensors --steps 3 --log-every 1 --log-json %t/a.jsonl --save-init-weights %t/init.safetensors --save-weights %t/final.safetensors | FileCheck %s --check-prefix=SUMMARY
// RUN: %python %S/Inputs/elided-cnn-data.py frozen %t/init.safetensors %t/final.safetensors | FileCheck %s --check-prefix=FROZEN
// Reloaded over another initialisation, the saved weights give the same
// first loss; another seed does not.
// RUN: pipe-train %S/Inputs/elided-cnn.mlir --loss cross-entropy --init zeros --init-weights %t/init.safetensors --data %t/data.safetensors --steps 1 --log-json %t/b.jsonl
// RUN: %python %S/Inputs/elided-cnn-data.py same %t/a.jsonl %t/b.jsonl | FileCheck %s --check-prefix=SAME
// RUN: pipe-train %S/Inputs/elided-cnn.mlir --loss cross-entropy --init kaiming-uniform --init-seed 6 --data %t/data.safetensors --steps 1 --log-json %t/c.jsonl
// RUN: %python %S/Inputs/elided-cnn-data.py same %t/a.jsonl %t/c.jsonl | FileCheck %s --check-prefix=DIFFER
// Without --init the error names it; a bad kind is a usage error.
// RUN: %expect_error --exit 1 -- pipe-train %S/Inputs/elided-cnn.mlir --loss cross-entropy --data %t/data.safetensors 2>&1 | FileCheck %s --check-prefix=NOINIT
// RUN: %expect_error --exit 2 -- pipe-train %S/Inputs/elided-cnn.mlir --init uniform 2>&1 | FileCheck %s --check-prefix=BADINIT
// RUN: %expect_error --exit 2 -- pipe-train --init zeros 2>&1 | FileCheck %s --check-prefix=NOMODEL
// Layer granularity asked for explicitly: one block cannot fill 2 stages.
// RUN: %expect_error --exit 1 -- pipe-train %S/Inputs/elided-cnn.mlir --loss cross-entropy --init zeros --granularity layer --data %t/data.safetensors 2>&1 | FileCheck %s --check-prefix=LAYER
// RUN: pipe-train %S/Inputs/elided-cnn.mlir --loss cross-entropy --init zeros --granularity coarse --data %t/data.safetensors --steps 1 | FileCheck %s --check-prefix=COARSE

// CHECK-COUNT-4: step 3/3  loss {{[0-9]+\.[0-9]+}}
// SUMMARY: == granularity auto: 1 layer block(s) for 2 stages; one block per op instead (--granularity op)
// SUMMARY: == model: loss cross-entropy (mean) of result 0, attached (--loss)
// SUMMARY-NEXT: inputs: 0: tensor<2x3x4x4xf32> 1: tensor<2xi64> (target)
// SUMMARY-NEXT: parameters: 453 in 8 tensors (those without data: --init kaiming-uniform, seed 5), 2 frozen (no gradient, no update: BatchNorm running statistics)
// SUMMARY-NEXT: blocks: 20 (granularity op)
// SUMMARY: == initial weights written to {{.*}}init.safetensors
// SUMMARY: step 3/3  loss
// FROZEN: statistics frozen
// SAME: same first loss
// DIFFER: first losses differ
// NOINIT: weight '__elided__' has no data: {{.*}}initialise it with init=<kind> (pipe-train --init <kind>)
// BADINIT: pipe-train: --init wants one of normal, xavier-uniform, kaiming-uniform, zeros; got 'uniform'
// NOMODEL: pipe-train: --init applies to a MODEL.mlir
// LAYER: error: pipe-place: cannot make 2 stages (2 devices x 1 per device) from 1 block instances
// COARSE: blocks: 2 (granularity coarse)
// COARSE: step 1/1  loss
