// L2L data parallelism across ranks (docs/distributed.md, "Data
// parallelism"): each of 2 MPI ranks runs one replica of a 2-replica L2L
// program on its own device and its own parameter server (the weights'
// host copy of its host). After each layer's push, pipe.ps.reduce
// exchanges the ranks' gradients and sums them in replica order, and every
// rank applies the same update, so the masters stay identical. The run
// equals the same program run in one process (both replicas on one server,
// summed in the same order) bit for bit, plain and delayed; each rank ran
// only its own device and sent bytes.
// REQUIRES: mpi
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: pipe-gen --model=tiny-gpt | pipe-opt --pipe-lift-params --pipe-form-blocks=granularity=layer --pipe-differentiate -o %t/base.mlir
// RUN: %python %S/../e2e/Inputs/make-data.py %t/data.safetensors input0:I64:20x2x16:64 input1:I64:20x2x16:61
// RUN: pipe-opt %t/base.mlir "--pipe-place=devices=1 stages-per-device=0 replicas=2" "--pipe-schedule=kind=l2l microbatches=2" --pipe-verify-schedule -o %t/plain.mlir
// RUN: pipe-compile %t/plain.mlir -o %t/plain.so --weights %t/w0 -O 0
// RUN: %mpirun -np 2 pipe-runner %t/plain.so --weights %t/w0 --data %t/data.safetensors --steps 5 --eval-every 0 --optimizer sgd --lr 0.1 --log-json %t/ranks.jsonl --save-weights %t/ranks.st --profile %t/ranks.prof
// RUN: pipe-runner %t/plain.so --weights %t/w0 --data %t/data.safetensors --steps 5 --eval-every 0 --optimizer sgd --lr 0.1 --log-json %t/one.jsonl --save-weights %t/one.st
// RUN: %python %S/Inputs/same-run.py %t/one.jsonl %t/ranks.jsonl %t/one.st %t/ranks.st | FileCheck %s
// RUN: %python %S/Inputs/check-ranks.py %t/ranks.prof 2 1 2 | FileCheck %s --check-prefix=RANKS
//
// Delayed host updates (2 steps a run) with AdamW, the same way.
// RUN: pipe-opt %t/base.mlir "--pipe-place=devices=1 stages-per-device=0 replicas=2" "--pipe-schedule=kind=l2l microbatches=2 steps=2 host-update=delayed" --pipe-verify-schedule -o %t/delayed.mlir
// RUN: pipe-compile %t/delayed.mlir -o %t/delayed.so -O 0
// RUN: %mpirun -np 2 pipe-runner %t/delayed.so --weights %t/w0 --data %t/data.safetensors --steps 4 --eval-every 0 --log-json %t/dranks.jsonl --save-weights %t/dranks.st
// RUN: pipe-runner %t/delayed.so --weights %t/w0 --data %t/data.safetensors --steps 4 --eval-every 0 --log-json %t/done.jsonl --save-weights %t/done.st
// RUN: %python %S/Inputs/same-run.py %t/done.jsonl %t/dranks.jsonl %t/done.st %t/dranks.st | FileCheck %s --check-prefix=FOUR
//
// Two replicas on each rank's server: 4 replicas as 2 ranks equal 4 in
// one process bit for bit (each rank sends its replicas' gradients, and
// every rank sums all of them in replica order).
// RUN: pipe-opt %t/base.mlir "--pipe-place=devices=1 stages-per-device=0 replicas=4" "--pipe-schedule=kind=l2l microbatches=1" --pipe-verify-schedule -o %t/four.mlir
// RUN: pipe-compile %t/four.mlir -o %t/four.so -O 0
// RUN: %mpirun -np 2 pipe-runner %t/four.so --weights %t/w0 --data %t/data.safetensors --steps 5 --eval-every 0 --optimizer sgd --lr 0.1 --log-json %t/franks.jsonl --save-weights %t/franks.st
// RUN: pipe-runner %t/four.so --weights %t/w0 --data %t/data.safetensors --steps 5 --eval-every 0 --optimizer sgd --lr 0.1 --log-json %t/fone.jsonl --save-weights %t/fone.st
// RUN: %python %S/Inputs/same-run.py %t/fone.jsonl %t/franks.jsonl %t/fone.st %t/franks.st | FileCheck %s
//
// A rank's server serves whole replicas: other rank counts are refused by
// name.
// RUN: not %mpirun -np 3 pipe-runner %t/plain.so --weights %t/w0 --data %t/data.safetensors --steps 1 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not %mpirun -np 3 pipe-runner %t/four.so --weights %t/w0 --data %t/data.safetensors --steps 1 2>&1 | FileCheck %s --check-prefix=BAD4
// RUN: not pipe-train --schedule l2l --ranks 2 --steps 1 2>&1 | FileCheck %s --check-prefix=TRAIN

// CHECK: same: 5 steps, 28 tensors, bit for bit
// FOUR: same: 4 steps, 28 tensors, bit for bit
// RANKS: ranks: 2 processes, each ran only its own devices and sent bytes
// BAD: 3 ranks do not make 2 data-parallel replicas
// BAD4: 3 ranks do not make 4 data-parallel replicas (the rank count must be a multiple of --data-parallel, or divide it: a rank's parameter server serves whole replicas)
// TRAIN: pipe-train: --ranks 2: under --schedule l2l each rank runs whole data-parallel replicas on its own parameter server; give --data-parallel a multiple of 2
