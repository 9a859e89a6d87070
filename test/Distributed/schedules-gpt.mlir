// Pipeline parallelism across processes: the same compiled 2-device program
// of a tiny GPT (its tied embedding makes a reduce_grad across the ranks)
// trained in one process and as 2 MPI ranks, one device each, under every
// synchronous and asynchronous schedule. Losses and final weights must be
// the same bit for bit, and each rank's profile must show its own process
// running only its own device and sending bytes.
// REQUIRES: mpi
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: pipe-gen --model=tiny-gpt | pipe-opt --pipe-lift-params --pipe-form-blocks=granularity=layer --pipe-differentiate -o %t/base.mlir
// RUN: %python %S/../e2e/Inputs/make-data.py %t/data.safetensors input0:I64:4x2x16:64 input1:I64:4x2x16:61
//
// RUN: env MPIRUN="%mpirun" %S/Inputs/run-both.sh %t gpipe "devices=2" "kind=gpipe microbatches=4" | FileCheck %s
// RUN: env MPIRUN="%mpirun" %S/Inputs/run-both.sh %t 1f1b "devices=2" "kind=1f1b microbatches=4" | FileCheck %s
// Non-adjacent stages on one rank: stages 0 and 2 on rank 0, 1 and 3 on 1.
// RUN: env MPIRUN="%mpirun" %S/Inputs/run-both.sh %t interleaved "devices=2 stages-per-device=2" "kind=interleaved-1f1b microbatches=4" | FileCheck %s
// RUN: env MPIRUN="%mpirun" %S/Inputs/run-both.sh %t zb-h1 "devices=2" "kind=zb-h1 microbatches=4" | FileCheck %s
// RUN: env MPIRUN="%mpirun" %S/Inputs/run-both.sh %t mixed "devices=2 stages-per-device=2" "kind=mixed microbatches=4" | FileCheck %s
// RUN: env MPIRUN="%mpirun" %S/Inputs/run-both.sh %t stash "devices=2" "kind=pipedream-async microbatches=4 weights=stash steps=2" | FileCheck %s
// RUN: env MPIRUN="%mpirun" %S/Inputs/run-both.sh %t stale "devices=2" "kind=pipedream-async microbatches=4 weights=stale steps=2" | FileCheck %s

// CHECK: same: 4 steps, 28 tensors, bit for bit
// CHECK: ranks: 2 processes, each ran only its own devices and sent bytes
