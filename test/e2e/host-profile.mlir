// pipe-runner --profile on the host back end: tiny-gpt scheduled as
// constant-memory L2L on one device (parameter server, offload, prefetch,
// recompute). The profile leaves out the warm-up step, names every compute
// phase of the schedule, and its copy and optimizer figures are consistent:
// exposed copy time within the copy time, the fraction in [0, 1].
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: pipe-gen --model=tiny-gpt --vocab=256 -o %t/m.mlir
// RUN: pipe-opt %t/m.mlir --pipe-lift-params --pipe-form-blocks=granularity=layer --pipe-differentiate "--pipe-place=devices=1 stages-per-device=4" "--pipe-schedule=kind=l2l microbatches=2 constant-memory=true" -o %t/s.mlir
// RUN: pipe-compile %t/s.mlir -o %t/m.so --weights %t/w.safetensors
// RUN: for i in $(seq 1 40); do echo "line $i: layer to layer, one layer at a time."; done > %t/data.txt
// RUN: pipe-runner %t/m.so --weights %t/w.safetensors --data %t/data.txt --steps 3 --profile %t/p.json | FileCheck %s --check-prefix=TRAIN
// RUN: %python %S/Inputs/check-profile.py %t/p.json 2 | FileCheck %s
// RUN: pipe-runner %t/m.so --weights %t/w.safetensors --data %t/data.txt --steps 3 --profile %t/p0.json --profile-skip 0 > /dev/null
// RUN: %python %S/Inputs/check-profile.py %t/p0.json 3 | FileCheck %s
//
// Errors: no step left to measure, and an unwritable path (both found
// before training, nothing half-written).
// RUN: not pipe-runner %t/m.so --weights %t/w.safetensors --data %t/data.txt --steps 2 --profile %t/q.json --profile-skip 2 2>&1 | FileCheck %s --check-prefix=SKIP
// RUN: not pipe-runner %t/m.so --weights %t/w.safetensors --data %t/data.txt --steps 1 --profile %t/missing/p.json 2>&1 | FileCheck %s --check-prefix=PATH
// RUN: test ! -e %t/q.json
// RUN: not pipe-runner %t/m.so --weights %t/w.safetensors --profile-skip x 2>&1 | FileCheck %s --check-prefix=FLAG

// TRAIN: training '{{.*}}' (l2l, 1 devices, 2 micro-batches)
// TRAIN: summary: 3 steps

// CHECK: kind l2l devices 1 steps [[STEPS:[0-9]+]]
// CHECK-NEXT: phases forward recompute backward
// CHECK-NEXT: copies h2d d2h exposed<=copy fraction-in-range
// CHECK-NEXT: optimizer busy exposed<=busy
// CHECK-NEXT: window<=steps*step_ms ok
// CHECK-NEXT: peak bytes > 0
// CHECK-NEXT: median step > 0

// SKIP: --profile-skip 2: leaves out every one of the 2 steps, so --profile would measure none
// PATH: --profile '{{.*}}missing/p.json': directory '{{.*}}missing' does not exist
// FLAG: --profile-skip: 'x' is not a non-negative integer
