// pipe-train --schedule l2l from its defaults (docs/trainer.md, "L2L"): it
// places the model on one device with one stage per block by itself, and
// evaluates with a forward-only L2L schedule that streams each block's
// weights from the parameter server as training does.
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: for i in $(seq 1 120); do echo "line $i: the host streams each layer to the device, then frees it."; done > %t/data.txt
// RUN: pipe-train --schedule l2l --layers 2 --d-model 16 --heads 2 --ff 32 --seq 8 --batch 4 --microbatches 2 -O 0 --data %t/data.txt --steps 4 --eval-every 2 --eval-batches 4 --emit-scheduled %t/s.mlir | FileCheck %s --check-prefix=TRAIN
// TRAIN: training '{{.*}}_l2l' (l2l, 1 devices, 2 micro-batches) from step 0 to 4
// TRAIN: eval step 4: loss
// RUN: FileCheck %s --check-prefix=SCHED < %t/s.mlir
// SCHED: pipe.schedule @[[NAME:.*]]_l2l placement @[[P:.*]] kind "l2l" microbatches 2 ps_stages [{{.*}}] {
// SCHED: pipe.schedule @{{.*}}_l2l_1 placement @[[P]] kind "l2l" microbatches 2 forward_only ps_stages [{{.*}}] {
// SCHED: pipe.ps.load
// SCHED: pipe.ps.release
// SCHED-NOT: pipe.backward
// SCHED-NOT: pipe.ps.push
//
// The schedule changes where the weights live, not the arithmetic: the
// same program evaluated with a forward-only GPipe schedule (every weight
// resident) gives the same losses bit for bit.
// RUN: pipe-opt %t/s.mlir "--pipe-schedule=kind=gpipe microbatches=2 forward-only=true" --pipe-verify-schedule -o %t/both.mlir
// RUN: pipe-compile %t/both.mlir -o %t/m.so --weights %t/w.safetensors -O 0
// RUN: pipe-runner %t/m.so --weights %t/w.safetensors --data %t/data.txt --steps 4 --eval-every 2 --eval-batches 4 --eval-schedule forward_placement_l2l_1 --log-json %t/l2l.jsonl

// RUN: pipe-runner %t/m.so --weights %t/w.safetensors --data %t/data.txt --steps 4 --eval-every 2 --eval-batches 4 --eval-schedule forward_placement_gpipe --log-json %t/gpipe.jsonl
// RUN: grep -o '"eval_loss":[^,}]*' %t/l2l.jsonl > %t/l2l.eval
// RUN: grep -o '"eval_loss":[^,}]*' %t/gpipe.jsonl > %t/gpipe.eval
// RUN: wc -l < %t/l2l.eval | FileCheck %s --check-prefix=TWO
// TWO: 2
// RUN: cmp %t/l2l.eval %t/gpipe.eval
//
// The whole run's peak (training and evaluation; --profile's
// peak_device_bytes is the session's) is flat in depth with
// --constant-memory: 4, 16 and 48 layers within 5%.
// RUN: for l in 4 16 48; do pipe-train --schedule l2l --constant-memory --layers $l --d-model 16 --heads 2 --ff 32 --seq 8 --batch 4 --microbatches 2 -O 0 --data %t/data.txt --steps 2 --eval-every 1 --eval-batches 2 --profile %t/p$l.json > /dev/null || exit 1; done
// RUN: %python %S/Inputs/check-flat-peak.py 0.05 %t/p4.json %t/p16.json %t/p48.json | FileCheck %s --check-prefix=FLAT
// FLAT: {{^}}flat{{$}}
