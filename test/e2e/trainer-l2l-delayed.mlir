// pipe-train --l2l-update delayed: step k > 0 of each run of --l2l-steps
// steps computes on the weights before step k-1's update (a delayed
// parameter update, fixed in the IR as ps.load weight versions), so the
// host applies step k-1's update while the device runs step k.
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: for i in $(seq 1 120); do echo "line $i: the host streams each layer to the device, then frees it."; done > %t/data.txt
// RUN: pipe-train --schedule l2l --l2l-update delayed --constant-memory --layers 3 --d-model 16 --heads 2 --ff 32 --seq 8 --batch 4 --microbatches 2 -O 0 --data %t/data.txt --steps 8 --eval-every 4 --eval-batches 2 --lr-schedule constant --warmup 0 --log-json %t/delayed.jsonl --save-weights %t/delayed.safetensors --emit-scheduled %t/s.mlir | FileCheck %s
// CHECK: training '{{.*}}_l2l' (l2l, 1 devices, 2 micro-batches, 4 steps per run) from step 0 to 8
//
// Steps 0 and 1 both compute on the initial weights: their losses are
// those of a run that does not learn (learning rate 0), bit for bit.
// RUN: pipe-train --schedule l2l --constant-memory --layers 3 --d-model 16 --heads 2 --ff 32 --seq 8 --batch 4 --microbatches 2 -O 0 --data %t/data.txt --steps 2 --eval-every 4 --eval-batches 2 --lr-schedule constant --warmup 0 --lr 0 --min-lr 0 --log-json %t/frozen.jsonl > /dev/null
// RUN: grep -o '"loss":[^,}]*' %t/frozen.jsonl > %t/frozen.loss
// RUN: grep -o '"loss":[^,}]*' %t/delayed.jsonl | head -2 > %t/delayed2.loss
// RUN: cmp %t/frozen.loss %t/delayed2.loss
// Later steps learn: the last loss is below the first.
// RUN: grep -o '"loss":[^,}]*' %t/delayed.jsonl | cut -d: -f2 > %t/delayed.loss
// RUN: %python -c "import sys; l = [float(x) for x in open(sys.argv[1])]; assert len(l) == 8 and l[-1] < l[0] - 0.1, l" %t/delayed.loss
//
// Deterministic across a resume: each run starts from the committed
// weights, so stopping at a checkpoint and resuming changes nothing.
// RUN: pipe-train --schedule l2l --l2l-update delayed --constant-memory --layers 3 --d-model 16 --heads 2 --ff 32 --seq 8 --batch 4 --microbatches 2 -O 0 --data %t/data.txt --steps 8 --eval-every 4 --eval-batches 2 --lr-schedule constant --warmup 0 --checkpoint %t/ck.ckpt --checkpoint-every 4 --stop-after 4 --log-json %t/first.jsonl > /dev/null; test $? -eq 3
// RUN: pipe-train --schedule l2l --l2l-update delayed --constant-memory --layers 3 --d-model 16 --heads 2 --ff 32 --seq 8 --batch 4 --microbatches 2 -O 0 --data %t/data.txt --steps 8 --eval-every 4 --eval-batches 2 --lr-schedule constant --warmup 0 --checkpoint %t/ck.ckpt --checkpoint-every 4 --resume --log-json %t/second.jsonl --save-weights %t/resumed.safetensors > /dev/null
// RUN: cmp %t/delayed.safetensors %t/resumed.safetensors
// RUN: cat %t/first.jsonl %t/second.jsonl | grep -o '"loss":[^,}]*' | cut -d: -f2 > %t/resumed.loss
// RUN: cmp %t/delayed.loss %t/resumed.loss
//
// One step per run has nothing to delay: plain L2L bit for bit.
// RUN: pipe-train --schedule l2l --l2l-update delayed --l2l-steps 1 --layers 2 --d-model 16 --heads 2 --ff 32 --seq 8 --batch 4 --microbatches 2 -O 0 --data %t/data.txt --steps 3 --eval-every 3 --eval-batches 1 --save-weights %t/one-delayed.safetensors > /dev/null
// RUN: pipe-train --schedule l2l --layers 2 --d-model 16 --heads 2 --ff 32 --seq 8 --batch 4 --microbatches 2 -O 0 --data %t/data.txt --steps 3 --eval-every 3 --eval-batches 1 --save-weights %t/one-plain.safetensors > /dev/null
// RUN: cmp %t/one-delayed.safetensors %t/one-plain.safetensors
//
// --l2l-delay-after K: the first K steps are plain updates (the program's
// plain schedule, one step per run), the delayed runs start at step K.
// Warming up for the whole run is plain L2L bit for bit.
// RUN: pipe-train --schedule l2l --constant-memory --layers 3 --d-model 16 --heads 2 --ff 32 --seq 8 --batch 4 --microbatches 2 -O 0 --data %t/data.txt --eval-every 4 --eval-batches 2 --lr-schedule constant --warmup 0 --l2l-update delayed --l2l-delay-after 4 --steps 4 --log-json %t/warm4.jsonl --save-weights %t/warm4.safetensors | FileCheck %s --check-prefix=WARM
// WARM: training '[[TRAIN:.*_l2l]]' (l2l, 1 devices, 2 micro-batches, 4 steps per run, '[[TRAIN]]_1' until step 4) from step 0 to 4
// RUN: pipe-train --schedule l2l --constant-memory --layers 3 --d-model 16 --heads 2 --ff 32 --seq 8 --batch 4 --microbatches 2 -O 0 --data %t/data.txt --eval-every 4 --eval-batches 2 --lr-schedule constant --warmup 0 --steps 4 --save-weights %t/plain4.safetensors > /dev/null
// RUN: cmp %t/warm4.safetensors %t/plain4.safetensors
// After the warm-up, delayed steps: the first 4 losses are plain L2L's,
// the next 4 differ from it, and a resume at the switch changes nothing.
// RUN: pipe-train --schedule l2l --constant-memory --layers 3 --d-model 16 --heads 2 --ff 32 --seq 8 --batch 4 --microbatches 2 -O 0 --data %t/data.txt --eval-every 4 --eval-batches 2 --lr-schedule constant --warmup 0 --steps 8 --log-json %t/plain8.jsonl > /dev/null
// RUN: pipe-train --schedule l2l --constant-memory --layers 3 --d-model 16 --heads 2 --ff 32 --seq 8 --batch 4 --microbatches 2 -O 0 --data %t/data.txt --eval-every 4 --eval-batches 2 --lr-schedule constant --warmup 0 --l2l-update delayed --l2l-delay-after 4 --steps 8 --log-json %t/warm8.jsonl --save-weights %t/warm8.safetensors > /dev/null
// RUN: grep -o '"loss":[^,}]*' %t/plain8.jsonl > %t/plain8.loss
// RUN: grep -o '"loss":[^,}]*' %t/warm8.jsonl > %t/warm8.loss
// RUN: head -4 %t/plain8.loss > %t/plain8.first; head -4 %t/warm8.loss > %t/warm8.first
// RUN: cmp %t/plain8.first %t/warm8.first
// RUN: tail -4 %t/plain8.loss > %t/plain8.last; tail -4 %t/warm8.loss > %t/warm8.last
// RUN: not cmp -s %t/plain8.last %t/warm8.last
// RUN: pipe-train --schedule l2l --constant-memory --layers 3 --d-model 16 --heads 2 --ff 32 --seq 8 --batch 4 --microbatches 2 -O 0 --data %t/data.txt --eval-every 4 --eval-batches 2 --lr-schedule constant --warmup 0 --l2l-update delayed --l2l-delay-after 4 --steps 8 --checkpoint %t/warm.ckpt --checkpoint-every 4 --stop-after 4 > /dev/null; test $? -eq 3
// RUN: pipe-train --schedule l2l --constant-memory --layers 3 --d-model 16 --heads 2 --ff 32 --seq 8 --batch 4 --microbatches 2 -O 0 --data %t/data.txt --eval-every 4 --eval-batches 2 --lr-schedule constant --warmup 0 --l2l-update delayed --l2l-delay-after 4 --steps 8 --checkpoint %t/warm.ckpt --checkpoint-every 4 --resume --save-weights %t/warm8-resumed.safetensors > /dev/null
// RUN: cmp %t/warm8.safetensors %t/warm8-resumed.safetensors
//
// The warm-up needs delayed updates to warm up for, and must end where a
// delayed run can start.
// RUN: not pipe-train --schedule l2l --constant-memory --layers 3 --d-model 16 --heads 2 --ff 32 --seq 8 --batch 4 --microbatches 2 -O 0 --data %t/data.txt --eval-every 4 --eval-batches 2 --lr-schedule constant --warmup 0 --l2l-delay-after 4 --steps 8 2>&1 | FileCheck %s --check-prefix=NODELAY
// NODELAY: --l2l-delay-after: schedule '{{.*}}' (l2l) has no delayed updates to warm up for (compile it with --schedule l2l --l2l-update delayed)
// RUN: not pipe-train --schedule l2l --constant-memory --layers 3 --d-model 16 --heads 2 --ff 32 --seq 8 --batch 4 --microbatches 2 -O 0 --data %t/data.txt --eval-every 4 --eval-batches 2 --lr-schedule constant --warmup 0 --l2l-update delayed --l2l-delay-after 2 --steps 8 2>&1 | FileCheck %s --check-prefix=MULTIPLE
// MULTIPLE: --l2l-delay-after 2: schedule '{{.*}}' runs 4 optimizer steps at a time, so the delayed steps can start only at a multiple of 4
//
// The schedule names the versions; the verifier accepted it.
// RUN: FileCheck %s --check-prefix=SCHED < %t/s.mlir
// SCHED: kind "l2l" microbatches 2 steps 4 ps_stages
// SCHED: pipe.ps.load @[[FIRST:[a-z0-9_]+]] version 0
// SCHED: pipe.ps.load @[[FIRST]] step 1 version 0
// SCHED: pipe.ps.load @[[FIRST]] step 2 version 1
// SCHED: pipe.ps.load @[[FIRST]] step 3 version 2
//
// bf16 transfers keep one shadow per param, the latest weights only.
// RUN: not pipe-train --schedule l2l --l2l-update delayed --layers 1 --d-model 16 --heads 2 --ff 32 --seq 8 --batch 4 --microbatches 2 -O 0 --data %t/data.txt --steps 4 --ps-transfer bf16 2>&1 | FileCheck %s --check-prefix=BF16
// BF16: ps.load stage '{{.*}}' step 0 version 0: param '{{.*}}' crosses the link as bf16, whose one shadow per param holds only the latest weights; versioned loads (delayed updates) need f32 transfers
