// L2L data parallelism (docs/trainer.md, "L2L"): `--schedule l2l
// --data-parallel 2` runs two replicas in this process, each on its own
// device and its half of every step's micro-batches, both loading each
// layer from the one host copy of the weights. After each layer's push,
// pipe.ps.reduce sums the replicas' gradients on the host in replica order
// and one ps.update applies the sum. Five steps equal single-device L2L with
// twice the micro-batches within rtol 1e-5 + atol 1e-7 (the sums are
// grouped differently; SGD, since AdamW's RMS normalisation magnifies
// last-bit differences of near-zero gradients), for plain, overlapped and
// delayed host updates.
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: for i in $(seq 1 120); do echo "line $i: two devices stream the same layers from one host."; done > %t/data.txt
// RUN: pipe-train --schedule l2l --data-parallel 2 --batch 4 --microbatches 2 --layers 2 --d-model 16 --heads 2 --ff 32 --seq 8 -O 0 --data %t/data.txt --steps 5 --eval-every 5 --eval-batches 2 --optimizer sgd --lr 0.1 --lr-schedule constant --warmup 0 --log-json %t/dp.jsonl --save-weights %t/dp.st --emit-scheduled %t/dp.mlir | FileCheck %s --check-prefix=TRAIN
// TRAIN: training '{{.*}}_l2l' (l2l, 1 devices, 2 micro-batches each, 2 data-parallel replicas in this process on one parameter server) from step 0 to 5
// TRAIN: eval step 5: loss {{.*}} (8 micro-batches)
// RUN: pipe-train --schedule l2l --batch 8 --microbatches 4 --layers 2 --d-model 16 --heads 2 --ff 32 --seq 8 -O 0 --data %t/data.txt --steps 5 --eval-every 5 --eval-batches 1 --optimizer sgd --lr 0.1 --lr-schedule constant --warmup 0 --log-json %t/one.jsonl --save-weights %t/one.st
// RUN: %python %S/../Distributed/Inputs/same-run.py %t/one.jsonl %t/dp.jsonl %t/one.st %t/dp.st 1e-5 1e-7 | FileCheck %s --check-prefix=SAME
// SAME: same: 5 steps, {{[0-9]+}} tensors, within rtol 1e-05 atol 1e-07
//
// The replicas and the reduction are in the IR: the placement's replica
// count, and a ps.reduce between each layer's push and its update.
// RUN: FileCheck %s --check-prefix=SCHED < %t/dp.mlir
// SCHED: pipe.placement @{{.*}} devices 1 replicas 2
// SCHED: pipe.schedule @{{.*}}_l2l placement
// SCHED: = pipe.ps.push @[[S:[a-z0-9_]+]]
// SCHED-NEXT: pipe.ps.reduce @[[S]]
// SCHED-NEXT: = pipe.ps.update @[[S]]
//
// Deterministic: the host sums in replica order, whichever replica pushes
// first, so a second run is bit-identical; so is a resume from a
// checkpoint, and the compiled artifact run by pipe-runner in one process.
// RUN: pipe-train --schedule l2l --data-parallel 2 --batch 4 --microbatches 2 --layers 2 --d-model 16 --heads 2 --ff 32 --seq 8 -O 0 --data %t/data.txt --steps 5 --eval-every 0 --optimizer sgd --lr 0.1 --lr-schedule constant --warmup 0 --log-json %t/again.jsonl --save-weights %t/again.st
// RUN: %python %S/../Distributed/Inputs/same-run.py %t/dp.jsonl %t/again.jsonl %t/dp.st %t/again.st | FileCheck %s --check-prefix=BITS
// BITS: same: 5 steps, {{[0-9]+}} tensors, bit for bit
// RUN: not pipe-train --schedule l2l --data-parallel 2 --batch 4 --microbatches 2 --layers 2 --d-model 16 --heads 2 --ff 32 --seq 8 -O 0 --data %t/data.txt --steps 5 --stop-after 3 --eval-every 0 --optimizer sgd --lr 0.1 --lr-schedule constant --warmup 0 --checkpoint %t/dp.ckpt --log-json %t/resumed.jsonl > /dev/null
// RUN: pipe-train --schedule l2l --data-parallel 2 --batch 4 --microbatches 2 --layers 2 --d-model 16 --heads 2 --ff 32 --seq 8 -O 0 --data %t/data.txt --steps 5 --eval-every 0 --optimizer sgd --lr 0.1 --lr-schedule constant --warmup 0 --checkpoint %t/dp.ckpt --resume --log-json %t/resumed.jsonl --save-weights %t/resumed.st > /dev/null
// RUN: %python %S/../Distributed/Inputs/same-run.py %t/dp.jsonl %t/resumed.jsonl %t/dp.st %t/resumed.st | FileCheck %s --check-prefix=BITS
// RUN: pipe-compile %t/dp.mlir -o %t/dp.so --weights %t/w0.st -O 0
// RUN: pipe-runner %t/dp.so --weights %t/w0.st --data %t/data.txt --steps 5 --eval-every 0 --optimizer sgd --lr 0.1 --lr-schedule constant --warmup 0 --log-json %t/runner.jsonl --save-weights %t/runner.st | FileCheck %s --check-prefix=RUNNER
// RUNNER: 2 data-parallel replicas in this process on one parameter server
// RUN: %python %S/../Distributed/Inputs/same-run.py %t/dp.jsonl %t/runner.jsonl %t/dp.st %t/runner.st | FileCheck %s --check-prefix=BITS
//
// Overlapped and delayed host updates keep their meaning with replicas.
// RUN: for mode in overlap delayed; do pipe-train --schedule l2l --l2l-update $mode --l2l-steps 2 --data-parallel 2 --batch 4 --microbatches 2 --layers 2 --d-model 16 --heads 2 --ff 32 --seq 8 -O 0 --data %t/data.txt --steps 4 --eval-every 0 --optimizer sgd --lr 0.1 --lr-schedule constant --warmup 0 --log-json %t/dp-$mode.jsonl --save-weights %t/dp-$mode.st > /dev/null || exit 1; pipe-train --schedule l2l --l2l-update $mode --l2l-steps 2 --batch 8 --microbatches 4 --layers 2 --d-model 16 --heads 2 --ff 32 --seq 8 -O 0 --data %t/data.txt --steps 4 --eval-every 0 --optimizer sgd --lr 0.1 --lr-schedule constant --warmup 0 --log-json %t/one-$mode.jsonl --save-weights %t/one-$mode.st > /dev/null || exit 1; done
// RUN: %python %S/../Distributed/Inputs/same-run.py %t/one-overlap.jsonl %t/dp-overlap.jsonl %t/one-overlap.st %t/dp-overlap.st 1e-5 1e-7 | FileCheck %s --check-prefix=STEPS4
// RUN: %python %S/../Distributed/Inputs/same-run.py %t/one-delayed.jsonl %t/dp-delayed.jsonl %t/one-delayed.st %t/dp-delayed.st 1e-5 1e-7 | FileCheck %s --check-prefix=STEPS4
// STEPS4: same: 4 steps, {{[0-9]+}} tensors, within rtol 1e-05 atol 1e-07
//
// Asking for devices instead of replicas, or for more ranks than replicas
// (each rank runs one replica on its own server), says what to change.
// RUN: not pipe-train --schedule l2l --devices 2 --steps 1 2>&1 | FileCheck %s --check-prefix=DEVICES
// DEVICES: --devices 2: --schedule l2l runs one device per replica {{.*}}use --data-parallel 2 instead of --devices
// RUN: not pipe-train --schedule l2l --data-parallel 2 --ranks 4 --steps 1 2>&1 | FileCheck %s --check-prefix=RANKS
// RANKS: --ranks 4: under --schedule l2l each rank runs whole data-parallel replicas on its own parameter server; give --data-parallel a multiple of 4
