// pipe-train --l2l-update overlap: the next step's forward of a layer waits
// only for that layer's host update, inside schedules of --l2l-steps
// steps. The arithmetic is plain L2L's: losses and final weights agree bit
// for bit, under a learning rate that changes every step (a run of several
// steps takes each step's own).
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: for i in $(seq 1 120); do echo "line $i: the host streams each layer to the device, then frees it."; done > %t/data.txt
// RUN: pipe-train --schedule l2l --constant-memory --layers 3 --d-model 16 --heads 2 --ff 32 --seq 8 --batch 4 --microbatches 2 -O 0 --data %t/data.txt --steps 8 --eval-every 4 --eval-batches 2 --lr-schedule cosine --warmup 3 --log-json %t/plain.jsonl --save-weights %t/plain.safetensors > /dev/null
// RUN: pipe-train --schedule l2l --l2l-update overlap --constant-memory --layers 3 --d-model 16 --heads 2 --ff 32 --seq 8 --batch 4 --microbatches 2 -O 0 --data %t/data.txt --steps 8 --eval-every 4 --eval-batches 2 --lr-schedule cosine --warmup 3 --log-json %t/overlap.jsonl --save-weights %t/overlap.safetensors --emit-scheduled %t/s.mlir | FileCheck %s
// CHECK: training '{{.*}}_l2l' (l2l, 1 devices, 2 micro-batches, 4 steps per run) from step 0 to 8
// RUN: cmp %t/plain.safetensors %t/overlap.safetensors
// RUN: grep -o '"loss":[^,}]*' %t/plain.jsonl > %t/plain.loss
// RUN: grep -o '"loss":[^,}]*' %t/overlap.jsonl > %t/overlap.loss
// RUN: wc -l < %t/overlap.loss | FileCheck %s --check-prefix=EIGHT
// EIGHT: 8
// RUN: cmp %t/plain.loss %t/overlap.loss
// RUN: grep -o '"lr":[^,}]*' %t/plain.jsonl > %t/plain.lr
// RUN: grep -o '"lr":[^,}]*' %t/overlap.jsonl > %t/overlap.lr
// RUN: cmp %t/plain.lr %t/overlap.lr
// (Seven distinct rates in 8 steps: the warm-up ends on the peak that the
// cosine starts from.)
// RUN: sort -u %t/overlap.lr | wc -l | FileCheck %s --check-prefix=DISTINCT
// DISTINCT: 7
//
// The schedule covers 4 steps; a later step's first load is waited together
// with the previous step's update of that layer.
// RUN: FileCheck %s --check-prefix=SCHED < %t/s.mlir
// SCHED: kind "l2l" microbatches 2 steps 4 ps_stages
// SCHED: %[[UPDATE:.*]] = pipe.ps.update @[[FIRST:[a-z0-9_]+]]{{$}}
// SCHED: %[[LOAD:.*]] = pipe.ps.load @[[FIRST]] step 1
// SCHED: pipe.wait %[[LOAD]], %[[UPDATE]]
//
// Only l2l has host updates to overlap.
// RUN: not pipe-train --l2l-update overlap --layers 1 --d-model 16 --heads 2 --ff 32 --seq 8 --data %t/data.txt --steps 2 2>&1 | FileCheck %s --check-prefix=ERR
// ERR: --l2l-update: only a parameter-server schedule (--schedule l2l) has host updates to overlap
