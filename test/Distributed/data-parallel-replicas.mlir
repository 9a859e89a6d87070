// Data parallelism over more than two replicas: 4 replicas of a 1-device
// program of a tiny GPT as 4 MPI ranks. Each replica owns a range of every
// bucket: the others send it their values of that range when the bucket
// starts, it adds them in replica order and sends the sum back at the
// wait, so a rank sends 2 (R - 1) / R = 1.5 times its gradients' bytes per
// step (a ring all-reduce's volume; each rank sent all of them to every
// other replica before, 3 times). The sums are those of the replicas in one
// process bit for bit, with one bucket, with 19 buckets of at most 4 KiB
// (whose ranges split params at element boundaries) and with one blocking
// reduce_grad per param.
// REQUIRES: mpi
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: pipe-gen --model=tiny-gpt | pipe-opt --pipe-lift-params --pipe-form-blocks=granularity=layer --pipe-differentiate -o %t/base.mlir
// RUN: %python %S/../e2e/Inputs/make-data.py %t/data.safetensors input0:I64:4x2x16:64 input1:I64:4x2x16:61
// RUN: pipe-opt %t/base.mlir "--pipe-place=devices=1 replicas=4" "--pipe-schedule=kind=1f1b microbatches=1" -o %t/one.mlir
// RUN: pipe-opt %t/base.mlir "--pipe-place=devices=1 replicas=4" "--pipe-schedule=kind=1f1b microbatches=1 reduce-bucket-bytes=4096" -o %t/small.mlir
// RUN: FileCheck %s --check-prefix=ONE < %t/one.mlir
// RUN: pipe-compile %t/one.mlir -o %t/one.so --weights %t/w0 -O 0
// RUN: pipe-compile %t/small.mlir -o %t/small.so -O 0
//
// RUN: pipe-runner %t/one.so --weights %t/w0 --data %t/data.safetensors --steps 4 --optimizer sgd --lr 0.1 --clip 0.05 --log-json %t/inproc.jsonl --save-weights %t/inproc.st
// RUN: %mpirun -np 4 pipe-runner %t/one.so --weights %t/w0 --data %t/data.safetensors --steps 4 --optimizer sgd --lr 0.1 --clip 0.05 --data-parallel 4 --log-json %t/one.jsonl --save-weights %t/one.st --profile %t/one.prof
// RUN: %python %S/Inputs/same-run.py %t/inproc.jsonl %t/one.jsonl %t/inproc.st %t/one.st | FileCheck %s
// RUN: %python %S/Inputs/check-ranks.py %t/one.prof 4 1 4 | FileCheck %s --check-prefix=RANKS
// RUN: %python %S/Inputs/sent-per-step.py %t/one.prof 4 4 %t/w0 | FileCheck %s --check-prefix=SENT
// RUN: %mpirun -np 4 pipe-runner %t/small.so --weights %t/w0 --data %t/data.safetensors --steps 4 --optimizer sgd --lr 0.1 --clip 0.05 --data-parallel 4 --log-json %t/small.jsonl --save-weights %t/small.st --profile %t/small.prof
// RUN: %python %S/Inputs/same-run.py %t/inproc.jsonl %t/small.jsonl %t/inproc.st %t/small.st | FileCheck %s
// RUN: %python %S/Inputs/sent-per-step.py %t/small.prof 4 4 %t/w0 | FileCheck %s --check-prefix=SENT
// One blocking reduce_grad per param (reduce-bucket-bytes=0) sums the same
// way, each param a bucket of one.
// RUN: pipe-opt %t/base.mlir "--pipe-place=devices=1 replicas=4" "--pipe-schedule=kind=1f1b microbatches=1 reduce-bucket-bytes=0" -o %t/blocking.mlir
// RUN: pipe-compile %t/blocking.mlir -o %t/blocking.so -O 0
// RUN: %mpirun -np 4 pipe-runner %t/blocking.so --weights %t/w0 --data %t/data.safetensors --steps 4 --optimizer sgd --lr 0.1 --clip 0.05 --data-parallel 4 --log-json %t/blocking.jsonl --save-weights %t/blocking.st --profile %t/blocking.prof
// RUN: %python %S/Inputs/same-run.py %t/inproc.jsonl %t/blocking.jsonl %t/inproc.st %t/blocking.st | FileCheck %s
// RUN: %python %S/Inputs/sent-per-step.py %t/blocking.prof 4 4 %t/w0 | FileCheck %s --check-prefix=SENT
// 4 replicas of a 2-device pipeline on 4 ranks of two devices each
// (--devices-per-rank 2): both device threads of a rank exchange their own
// buckets with their peers at once; the tied embedding, read on both
// devices, is summed over the devices and then over the replicas.
// RUN: pipe-opt %t/base.mlir "--pipe-place=devices=2 replicas=4" "--pipe-schedule=kind=1f1b microbatches=1 reduce-bucket-bytes=4096" -o %t/pipe.mlir
// RUN: pipe-compile %t/pipe.mlir -o %t/pipe.so -O 0
// RUN: pipe-runner %t/pipe.so --weights %t/w0 --data %t/data.safetensors --steps 4 --optimizer sgd --lr 0.1 --log-json %t/pipe-inproc.jsonl --save-weights %t/pipe-inproc.st
// RUN: %mpirun -np 4 pipe-runner %t/pipe.so --weights %t/w0 --data %t/data.safetensors --steps 4 --optimizer sgd --lr 0.1 --data-parallel 4 --devices-per-rank 2 --log-json %t/pipe.jsonl --save-weights %t/pipe.st
// RUN: %python %S/Inputs/same-run.py %t/pipe-inproc.jsonl %t/pipe.jsonl %t/pipe-inproc.st %t/pipe.st | FileCheck %s
// The same on memory the host cannot address (staged through host memory).
// RUN: env PIPE_RT_BACKEND=staged %mpirun -np 4 pipe-runner %t/small.so --weights %t/w0 --data %t/data.safetensors --steps 4 --optimizer sgd --lr 0.1 --clip 0.05 --data-parallel 4 --log-json %t/staged.jsonl --save-weights %t/staged.st
// RUN: %python %S/Inputs/same-run.py %t/inproc.jsonl %t/staged.jsonl %t/inproc.st %t/staged.st | FileCheck %s

// ONE-COUNT-1: pipe.reduce_bucket
// CHECK: same: 4 steps, 28 tensors, bit for bit
// RANKS: ranks: 4 processes, each ran only its own devices and sent bytes
// SENT: rank 0: sent 1.50 x the weights' bytes per step
// SENT: rank 1: sent 1.50 x the weights' bytes per step
// SENT: rank 2: sent 1.50 x the weights' bytes per step
// SENT: rank 3: sent 1.50 x the weights' bytes per step
