// Data x pipeline parallelism in one process (docs/distributed.md, "Data
// parallelism"): `pipe-train --data-parallel 2` without --ranks runs both
// replicas of the placed pipeline as devices of one run (2 x 2 simulated
// devices), each on its half of every step's micro-batches; reduce_grad
// sums a gradient over the replica's stages, then over the replicas in
// replica order, as MPI ranks do (test/Distributed/data-parallel.mlir shows
// the two bit for bit). Five steps equal the one-replica run with twice the
// micro-batches within rtol 1e-5 + atol 1e-7 (the sums are grouped
// differently) under every synchronous kind, with clipping too.
// (pipedream-async is not compared so: its staleness depends on the
// micro-batches per step; test/Distributed/data-parallel.mlir shows its
// in-process replicas equal to MPI ranks bit for bit.)
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: for i in $(seq 1 120); do echo "line $i: two replicas of one pipeline train on halves of a step."; done > %t/data.txt
// RUN: for kind in gpipe 1f1b zb-h1 "interleaved-1f1b --stages-per-device 2" "1f1b --clip 0.05"; do \
// RUN:   pipe-train --schedule $kind --data-parallel 2 --batch 4 --microbatches 2 --layers 2 --d-model 16 --heads 2 --ff 32 --seq 8 -O 0 --data %t/data.txt --steps 5 --eval-every 0 --optimizer sgd --lr 0.1 --lr-schedule constant --warmup 0 --log-json %t/dp.jsonl --save-weights %t/dp.st > %t/dp.out || exit 1; \
// RUN:   pipe-train --schedule $kind --batch 8 --microbatches 4 --layers 2 --d-model 16 --heads 2 --ff 32 --seq 8 -O 0 --data %t/data.txt --steps 5 --eval-every 0 --optimizer sgd --lr 0.1 --lr-schedule constant --warmup 0 --log-json %t/one.jsonl --save-weights %t/one.st > /dev/null || exit 1; \
// RUN:   grep -h "^training" %t/dp.out; %python %S/../Distributed/Inputs/same-run.py %t/one.jsonl %t/dp.jsonl %t/one.st %t/dp.st 1e-5 1e-7 || exit 1; \
// RUN: done | FileCheck %s
// CHECK-COUNT-5: same: 5 steps, {{[0-9]+}} tensors, within rtol 1e-05 atol 1e-07
// CHECK-NOT: same
//
// Replicas in one process print as such.
// RUN: grep -h "^training" %t/dp.out | FileCheck %s --check-prefix=TRAIN
// TRAIN: training '{{.*}}' (1f1b, 2 devices, 2 micro-batches each, 2 data-parallel replicas in this process)
//
// The replicas' gradients go in buckets (pipe.reduce_bucket) by default;
// small buckets and one blocking reduction per param
// (--reduce-bucket-bytes 0) give the same bits.
// RUN: pipe-train --schedule interleaved-1f1b --stages-per-device 2 --data-parallel 2 --batch 4 --microbatches 2 --layers 2 --d-model 16 --heads 2 --ff 32 --seq 8 -O 0 --data %t/data.txt --steps 5 --eval-every 0 --optimizer sgd --lr 0.1 --lr-schedule constant --warmup 0 --log-json %t/b.jsonl --save-weights %t/b.st --emit-scheduled %t/b.mlir > /dev/null
// RUN: pipe-train --schedule interleaved-1f1b --stages-per-device 2 --data-parallel 2 --reduce-bucket-bytes 512 --batch 4 --microbatches 2 --layers 2 --d-model 16 --heads 2 --ff 32 --seq 8 -O 0 --data %t/data.txt --steps 5 --eval-every 0 --optimizer sgd --lr 0.1 --lr-schedule constant --warmup 0 --log-json %t/small.jsonl --save-weights %t/small.st --emit-scheduled %t/small.mlir > /dev/null
// RUN: pipe-train --schedule interleaved-1f1b --stages-per-device 2 --data-parallel 2 --reduce-bucket-bytes 0 --batch 4 --microbatches 2 --layers 2 --d-model 16 --heads 2 --ff 32 --seq 8 -O 0 --data %t/data.txt --steps 5 --eval-every 0 --optimizer sgd --lr 0.1 --lr-schedule constant --warmup 0 --log-json %t/blocking.jsonl --save-weights %t/blocking.st --emit-scheduled %t/blocking.mlir > /dev/null
// RUN: %python %S/../Distributed/Inputs/same-run.py %t/b.jsonl %t/small.jsonl %t/b.st %t/small.st | FileCheck %s --check-prefix=BITS
// RUN: %python %S/../Distributed/Inputs/same-run.py %t/b.jsonl %t/blocking.jsonl %t/b.st %t/blocking.st | FileCheck %s --check-prefix=BITS
// BITS: same: 5 steps, {{[0-9]+}} tensors, bit for bit
// RUN: FileCheck %s --check-prefix=BUCKETS < %t/b.mlir
// RUN: FileCheck %s --check-prefix=SMALL < %t/small.mlir
// RUN: FileCheck %s --check-prefix=BLOCKING < %t/blocking.mlir
// BUCKETS-COUNT-4: = pipe.reduce_bucket [@
// BUCKETS-NOT: = pipe.reduce_bucket [@
// SMALL-COUNT-8: = pipe.reduce_bucket [@
// BLOCKING-NOT: pipe.reduce_bucket
// BLOCKING: pipe.reduce_grad
//
// A bad value is refused by name.
// RUN: not pipe-train --data-parallel 2 --reduce-bucket-bytes -1 --data %t/data.txt 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: --reduce-bucket-bytes wants an integer in [0, 1099511627776], got '-1'
