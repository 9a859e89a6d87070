// Data x pipeline parallelism: a 2-device 1F1B program of a tiny GPT with
// 2 micro-batches per step, placed with 2 data-parallel replicas and trained
// as 4 MPI ranks (2 pipeline x 2 data). Each replica trains on its half of
// every step's 4 micro-batches and the schedule's reduce_grad actions sum
// the replicas' gradients before each update, so 5 steps equal the
// one-process run of the same model scheduled with 4 micro-batches, within
// rtol 1e-5 + atol 1e-7 (the sums are grouped differently); with gradient
// clipping too. SGD: AdamW divides by the gradients' running RMS, which
// turns the last-bit differences of near-zero gradients into visible ones.
// REQUIRES: mpi
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: pipe-gen --model=tiny-gpt | pipe-opt --pipe-lift-params --pipe-form-blocks=granularity=layer --pipe-differentiate -o %t/base.mlir
// RUN: pipe-opt %t/base.mlir "--pipe-place=devices=2 replicas=2" "--pipe-schedule=kind=1f1b microbatches=2" -o %t/dp.mlir
// RUN: pipe-opt %t/base.mlir --pipe-place=devices=2 "--pipe-schedule=kind=1f1b microbatches=4" -o %t/mb4.mlir
// RUN: pipe-compile %t/dp.mlir -o %t/dp.so --weights %t/w0 -O 0
// RUN: pipe-compile %t/mb4.mlir -o %t/mb4.so -O 0
// RUN: %python %S/../e2e/Inputs/make-data.py %t/data.safetensors input0:I64:4x2x16:64 input1:I64:4x2x16:61
//
// RUN: pipe-runner %t/mb4.so --weights %t/w0 --data %t/data.safetensors --steps 5 --optimizer sgd --lr 0.1 --log-json %t/mb4.jsonl --save-weights %t/mb4.st
// RUN: %mpirun -np 4 pipe-runner %t/dp.so --weights %t/w0 --data %t/data.safetensors --steps 5 --optimizer sgd --lr 0.1 --data-parallel 2 --log-json %t/dp.jsonl --save-weights %t/dp.st --profile %t/dp.prof | FileCheck %s --check-prefix=TRAIN
// RUN: %python %S/Inputs/same-run.py %t/mb4.jsonl %t/dp.jsonl %t/mb4.st %t/dp.st 1e-5 1e-7 | FileCheck %s
// RUN: %python %S/Inputs/check-ranks.py %t/dp.prof 4 1 2 | FileCheck %s --check-prefix=RANKS
// RUN: pipe-runner %t/mb4.so --weights %t/w0 --data %t/data.safetensors --steps 5 --optimizer sgd --lr 0.1 --clip 0.05 --log-json %t/mb4-clip.jsonl --save-weights %t/mb4-clip.st
// RUN: %mpirun -np 4 pipe-runner %t/dp.so --weights %t/w0 --data %t/data.safetensors --steps 5 --optimizer sgd --lr 0.1 --clip 0.05 --log-json %t/dp-clip.jsonl --save-weights %t/dp-clip.st
// RUN: %python %S/Inputs/same-run.py %t/mb4-clip.jsonl %t/dp-clip.jsonl %t/mb4-clip.st %t/dp-clip.st 1e-5 1e-7 | FileCheck %s
// RUN: not cmp -s %t/mb4.st %t/mb4-clip.st
//
// A checkpoint of the 2 x 2 run at step 3 resumes in one process with the
// equivalent 4-micro-batch program (the data cursor counts every replica's
// micro-batches) and ends within the same tolerance of the uninterrupted
// run; the one-replica 2-micro-batch program refuses it by name.
// RUN: pipe-opt %t/base.mlir --pipe-place=devices=2 "--pipe-schedule=kind=1f1b microbatches=2" -o %t/mb2.mlir
// RUN: pipe-compile %t/mb2.mlir -o %t/mb2.so -O 0
// RUN: not %mpirun -np 4 pipe-runner %t/dp.so --weights %t/w0 --data %t/data.safetensors --steps 5 --stop-after 3 --optimizer sgd --lr 0.1 --data-parallel 2 --checkpoint %t/dp.ckpt --log-json %t/resumed.jsonl
// RUN: not pipe-runner %t/mb2.so --weights %t/w0 --data %t/data.safetensors --steps 5 --checkpoint %t/dp.ckpt --resume 2>&1 | FileCheck %s --check-prefix=CURSOR
// RUN: pipe-runner %t/mb4.so --weights %t/w0 --data %t/data.safetensors --steps 5 --optimizer sgd --lr 0.1 --checkpoint %t/dp.ckpt --resume --log-json %t/resumed.jsonl --save-weights %t/resumed.st | FileCheck %s --check-prefix=RESUMED
// RUN: %python %S/Inputs/same-run.py %t/mb4.jsonl %t/resumed.jsonl %t/mb4.st %t/resumed.st 1e-5 1e-7 | FileCheck %s
//
// And the other way: a checkpoint of the one-replica program on 2 ranks
// resumes as 2 x 2 ranks with the two-replica program.
// RUN: not %mpirun -np 2 pipe-runner %t/mb4.so --weights %t/w0 --data %t/data.safetensors --steps 5 --stop-after 3 --optimizer sgd --lr 0.1 --checkpoint %t/mb4.ckpt --log-json %t/grown.jsonl
// RUN: %mpirun -np 4 pipe-runner %t/dp.so --weights %t/w0 --data %t/data.safetensors --steps 5 --optimizer sgd --lr 0.1 --checkpoint %t/mb4.ckpt --resume --log-json %t/grown.jsonl --save-weights %t/grown.st | FileCheck %s --check-prefix=RESUMED4
// RUN: %python %S/Inputs/same-run.py %t/mb4.jsonl %t/grown.jsonl %t/mb4.st %t/grown.st 1e-5 1e-7 | FileCheck %s
//
// The same program run in one process (its 2 x 2 devices as threads, the
// replicas' gradients summed in replica order as the ranks sum them)
// equals the 4-rank run bit for bit, with clipping too.
// RUN: pipe-runner %t/dp.so --weights %t/w0 --data %t/data.safetensors --steps 5 --optimizer sgd --lr 0.1 --log-json %t/inproc.jsonl --save-weights %t/inproc.st
// RUN: %python %S/Inputs/same-run.py %t/dp.jsonl %t/inproc.jsonl %t/dp.st %t/inproc.st | FileCheck %s --check-prefix=BITS
// RUN: pipe-runner %t/dp.so --weights %t/w0 --data %t/data.safetensors --steps 5 --optimizer sgd --lr 0.1 --clip 0.05 --log-json %t/inproc-clip.jsonl --save-weights %t/inproc-clip.st
// RUN: %python %S/Inputs/same-run.py %t/dp-clip.jsonl %t/inproc-clip.jsonl %t/dp-clip.st %t/inproc-clip.st | FileCheck %s --check-prefix=BITS
// BITS: same: 5 steps, 28 tensors, bit for bit
//
// The replicas' gradients of a device's own params travel in buckets
// (pipe.reduce_bucket, one per device here, started after its last
// backward; the tied embedding, read on both devices, by reduce_grad).
// Several 4 KiB buckets in flight at once, and one blocking reduce_grad
// per param (reduce-bucket-bytes=0), give the same bits, in ranks and in
// one process.
// RUN: FileCheck %s --check-prefix=IR < %t/dp.mlir
// RUN: pipe-opt %t/base.mlir "--pipe-place=devices=2 replicas=2" "--pipe-schedule=kind=1f1b microbatches=2 reduce-bucket-bytes=4096" -o %t/dp-small.mlir
// RUN: FileCheck %s --check-prefix=SMALL < %t/dp-small.mlir
// RUN: pipe-opt %t/base.mlir "--pipe-place=devices=2 replicas=2" "--pipe-schedule=kind=1f1b microbatches=2 reduce-bucket-bytes=0" -o %t/dp-blocking.mlir
// RUN: pipe-compile %t/dp-small.mlir -o %t/dp-small.so -O 0
// RUN: pipe-compile %t/dp-blocking.mlir -o %t/dp-blocking.so -O 0
// RUN: %mpirun -np 4 pipe-runner %t/dp-small.so --weights %t/w0 --data %t/data.safetensors --steps 5 --optimizer sgd --lr 0.1 --data-parallel 2 --log-json %t/dp-small.jsonl --save-weights %t/dp-small.st
// RUN: %python %S/Inputs/same-run.py %t/dp.jsonl %t/dp-small.jsonl %t/dp.st %t/dp-small.st | FileCheck %s --check-prefix=BITS
// RUN: %mpirun -np 4 pipe-runner %t/dp-blocking.so --weights %t/w0 --data %t/data.safetensors --steps 5 --optimizer sgd --lr 0.1 --data-parallel 2 --log-json %t/dp-blocking.jsonl --save-weights %t/dp-blocking.st
// RUN: %python %S/Inputs/same-run.py %t/dp.jsonl %t/dp-blocking.jsonl %t/dp.st %t/dp-blocking.st | FileCheck %s --check-prefix=BITS
// Two device threads of one rank exchange their buckets at once
// (--devices-per-rank 2: each rank runs one replica's two devices).
// RUN: %mpirun -np 2 pipe-runner %t/dp-small.so --weights %t/w0 --data %t/data.safetensors --steps 5 --optimizer sgd --lr 0.1 --data-parallel 2 --devices-per-rank 2 --log-json %t/dp-small-2.jsonl --save-weights %t/dp-small-2.st
// RUN: %python %S/Inputs/same-run.py %t/dp.jsonl %t/dp-small-2.jsonl %t/dp.st %t/dp-small-2.st | FileCheck %s --check-prefix=BITS
// RUN: pipe-runner %t/dp-small.so --weights %t/w0 --data %t/data.safetensors --steps 5 --optimizer sgd --lr 0.1 --log-json %t/inproc-small.jsonl --save-weights %t/inproc-small.st
// RUN: %python %S/Inputs/same-run.py %t/dp.jsonl %t/inproc-small.jsonl %t/dp.st %t/inproc-small.st | FileCheck %s --check-prefix=BITS
// IR:    pipe.device 0 {
// IR:      pipe.backward
// IR:      = pipe.reduce_bucket [@
// IR:      pipe.reduce_grad @
// IR:      pipe.update
// IR-NOT:  pipe.reduce_bucket
// IR:    pipe.device 1 {
// SMALL-COUNT-4: = pipe.reduce_bucket [@
//
// So does pipedream-async (stale weights, 5 steps per pipeline fill), on
// 20 distinct micro-batches: each replica takes its share of every step's
// micro-batches, in ranks as in one process.
// RUN: pipe-opt %t/base.mlir "--pipe-place=devices=2 replicas=2" "--pipe-schedule=kind=pipedream-async microbatches=2 steps=5 weights=stale" -o %t/async.mlir
// RUN: pipe-compile %t/async.mlir -o %t/async.so -O 0
// RUN: %python %S/../e2e/Inputs/make-data.py %t/data20.safetensors input0:I64:20x2x16:64 input1:I64:20x2x16:61
// RUN: %mpirun -np 4 pipe-runner %t/async.so --weights %t/w0 --data %t/data20.safetensors --steps 5 --optimizer sgd --lr 0.1 --data-parallel 2 --log-json %t/async-ranks.jsonl --save-weights %t/async-ranks.st
// RUN: pipe-runner %t/async.so --weights %t/w0 --data %t/data20.safetensors --steps 5 --optimizer sgd --lr 0.1 --log-json %t/async-inproc.jsonl --save-weights %t/async-inproc.st
// RUN: %python %S/Inputs/same-run.py %t/async-ranks.jsonl %t/async-inproc.jsonl %t/async-ranks.st %t/async-inproc.st | FileCheck %s --check-prefix=BITS
//
// The replica count must divide the ranks, and be the program's: a
// one-replica program is not run as two.
// RUN: not %mpirun -np 3 pipe-runner %t/dp.so --weights %t/w0 --data %t/data.safetensors --steps 1 --data-parallel 2 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not %mpirun -np 4 pipe-runner %t/mb4.so --weights %t/w0 --data %t/data.safetensors --steps 1 --data-parallel 2 2>&1 | FileCheck %s --check-prefix=ONEREPLICA

// TRAIN: step 5/5
// CHECK: same: 5 steps, 28 tensors, within rtol 1e-05 atol 1e-07
// RANKS: ranks: 4 processes, each ran only its own devices and sent bytes
// BAD: 3 ranks do not make 2 data-parallel replicas
// ONEREPLICA: --data-parallel 2: the program was compiled for 1 replica(s) (pipe-opt --pipe-place=replicas=R, pipe-train --data-parallel R)
// RESUMED: resumed from {{.*}}dp.ckpt at step 3
// RESUMED4: resumed from {{.*}}mb4.ckpt at step 3
// CURSOR: dp.ckpt: trainer.data_cursor is 12: 3 steps of schedule '{{.*}}' consume 6 micro-batches (2 each); not a checkpoint of this program and schedule
