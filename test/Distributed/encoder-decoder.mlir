// Pipeline parallelism across processes on a tiny encoder-decoder (T5):
// 1F1B over 2 devices with global gradient-norm clipping, whose norm the
// two ranks add up together. One process and 2 MPI ranks must agree bit for
// bit.
// REQUIRES: mpi
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: pipe-gen --model=tiny-t5 | pipe-opt --pipe-lift-params --pipe-form-blocks=granularity=layer --pipe-differentiate -o %t/base.mlir
// RUN: %python %S/../e2e/Inputs/make-data.py %t/data.safetensors input0:I64:4x2x16:64 input1:I64:4x2x8:61 input2:I64:4x2x8:59
// RUN: env MPIRUN="%mpirun" %S/Inputs/run-both.sh %t 1f1b "devices=2" "kind=1f1b microbatches=4" --clip 0.5 | FileCheck %s

// CHECK: same: 4 steps, 47 tensors, bit for bit
// CHECK: ranks: 2 processes, each ran only its own devices and sent bytes
