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
// RUN: env MPIRUN="%mpirun" %S/Inputs/kill-rank.sh %t STOP | FileCheck %s --check-prefix=STOP
// RUN: env MPIRUN="%mpirun" %S/Inputs/kill-rank.sh %t KILL | FileCheck %s --check-prefix=KILL

// STOP: job ended after {{[0-9]|1[0-3]}} s, exit non-zero
// STOP-NEXT: rank 0: {{.*}}rank 1 {{.*}}within 3 s: is rank 1 stuck?
// STOP-NEXT: no process remains

// KILL: job ended after {{[0-9]+}} s, exit non-zero
// KILL: no process remains
