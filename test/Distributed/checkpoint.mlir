// A checkpoint does not depend on how many processes wrote it: 2 ranks
// stop after 3 of 6 steps and one process resumes, and the other way round;
// both equal the uninterrupted run bit for bit (losses and final weights).
// Only rank 0 writes the checkpoint, after every rank got every param.
// REQUIRES: mpi
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: pipe-gen --model=tiny-gpt | pipe-opt --pipe-lift-params --pipe-form-blocks=granularity=layer --pipe-differentiate --pipe-place=devices=2 "--pipe-schedule=kind=1f1b microbatches=2" -o %t/gpt.mlir
// RUN: pipe-compile %t/gpt.mlir -o %t/gpt.so --weights %t/gpt.w0 -O 0
// RUN: %python %S/../e2e/Inputs/make-data.py %t/data.safetensors input0:I64:2x2x16:64 input1:I64:2x2x16:61
// RUN: pipe-runner %t/gpt.so --weights %t/gpt.w0 --data %t/data.safetensors --steps 6 --log-json %t/full.jsonl --save-weights %t/full.st
//
// RUN: not %mpirun -np 2 pipe-runner %t/gpt.so --weights %t/gpt.w0 --data %t/data.safetensors --steps 6 --stop-after 3 --checkpoint %t/a.ckpt --log-json %t/a.jsonl | FileCheck %s --check-prefix=STOPPED
// RUN: pipe-runner %t/gpt.so --weights %t/gpt.w0 --data %t/data.safetensors --steps 6 --checkpoint %t/a.ckpt --resume --log-json %t/a.jsonl --save-weights %t/a.st | FileCheck %s --check-prefix=RESUMED
// RUN: %python %S/Inputs/same-run.py %t/full.jsonl %t/a.jsonl %t/full.st %t/a.st | FileCheck %s
//
// RUN: not pipe-runner %t/gpt.so --weights %t/gpt.w0 --data %t/data.safetensors --steps 6 --stop-after 3 --checkpoint %t/b.ckpt --log-json %t/b.jsonl
// RUN: %mpirun -np 2 pipe-runner %t/gpt.so --weights %t/gpt.w0 --data %t/data.safetensors --steps 6 --checkpoint %t/b.ckpt --resume --log-json %t/b.jsonl --save-weights %t/b.st | FileCheck %s --check-prefix=RESUMED
// RUN: %python %S/Inputs/same-run.py %t/full.jsonl %t/b.jsonl %t/full.st %t/b.st | FileCheck %s

// STOPPED: checkpoint: step 3 ->
// STOPPED-NOT: checkpoint: step
// RESUMED: resumed from {{.*}} at step 3
// CHECK: same: 6 steps, 28 tensors, bit for bit
