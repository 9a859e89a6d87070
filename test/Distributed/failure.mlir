// A rank that stops or dies ends the whole job. kill -STOP of rank 1: rank
// 0's watchdog (3 s here) names rank 1 and what it waited for, then ends
// the job (MPI_Abort), within the watchdog time + 10 s. kill -9 of rank 1:
// mpirun ends the job with a non-zero exit. In both cases no process of the
// job remains.
// REQUIRES: mpi
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: pipe-gen --model=tiny-gpt | pipe-opt --pipe-lift-params --pipe-form-blocks=granularity=layer --pipe-differentiate --pipe-place=devices=2 "--pipe-schedule=kind=1f1b microbatches=2" -o %t/kill.mlir
// RUN: pipe-compile %t/kill.mlir -o %t/kill.so --weights %t/kill.w0 -O 0
// RUN: %python %S/../e2e/Inputs/make-data.py %t/data.safetensors input0:I64:2x2x16:64 input1:I64:2x2x16:61
//
// A rank count that does not cover the program's devices is an error on
// every rank before any step; --devices-per-rank keeps several on one.
// RUN: not %mpirun -np 3 pipe-runner %t/kill.so --weights %t/kill.w0 --data %t/data.safetensors --steps 1 2>&1 | FileCheck %s --check-prefix=RANKS
// RUN: %mpirun -np 1 pipe-runner %t/kill.so --weights %t/kill.w0 --data %t/data.safetensors --steps 1 --devices-per-rank 2 | FileCheck %s --check-prefix=ONE
// Ranks started with other training options (mpirun's `:` form) would
// train a mix of them: an error on every rank before any step.
// RUN: not %mpirun -np 1 pipe-runner %t/kill.so --weights %t/kill.w0 --data %t/data.safetensors --steps 1 --lr 1e-3 : -np 1 pipe-runner %t/kill.so --weights %t/kill.w0 --data %t/data.safetensors --steps 1 --lr 0.5 2>&1 | FileCheck %s --check-prefix=OPTIONS
// RUN: env MPIRUN="%mpirun" %S/Inputs/kill-rank.sh %t STOP | FileCheck %s --check-prefix=STOP
// RUN: env MPIRUN="%mpirun" %S/Inputs/kill-rank.sh %t KILL | FileCheck %s --check-prefix=KILL

// RANKS: rank {{[0-2]}}: {{.*}}kill.so: schedule 'forward_placement_1f1b' runs on 2 devices, but 3 ranks x 1 devices per rank are 3: launch 2 ranks
// RANKS-NOT: step 1/1
// ONE: step 1/1
// OPTIONS: rank {{[01]}}: {{.*}}kill.so: rank 1 has other training options than rank 0 (the optimizer, learning rate and its schedule, steps, seed, clipping, evaluation or checkpoint settings): every rank must run the same command
// OPTIONS-NOT: step 1/1

// STOP: job ended after {{[0-9]|1[0-3]}} s, exit non-zero
// STOP-NEXT: rank 0: {{.*}}rank 1 {{.*}}within 3 s: is rank 1 stuck?
// STOP-NEXT: no process remains

// KILL: job ended after {{[0-9]+}} s, exit non-zero
// KILL: no process remains
