// RUN: pipe-opt %S/Inputs/sched-model.mlir --pipe-place=devices=2 | FileCheck %s
// RUN: pipe-opt %S/Inputs/sched-model.mlir --pipe-place="devices=2 stages-per-device=2" | FileCheck %s --check-prefix=RR
// RUN: not pipe-opt %S/Inputs/sched-model.mlir --pipe-place=devices=8 2>&1 | FileCheck %s --check-prefix=ERR
// RUN: not pipe-opt %S/Inputs/sched-model.mlir --pipe-place=algorithm=magic 2>&1 | FileCheck %s --check-prefix=ALG

// Contiguous stages balanced by cost (1 unit per block without #pipe.cost).
// CHECK-LABEL: pipe.placement @model_placement graph @model devices 2
// CHECK-NEXT:    pipe.stage @s0 device 0 blocks ["l0", "l1"]
// CHECK-NEXT:    pipe.stage @s1 device 1 blocks ["l2", "head"]

// Two stages per device, round-robin, as interleaved-1f1b wants.
// RR-LABEL: pipe.placement @model_placement graph @model devices 2
// RR-NEXT:    pipe.stage @s0 device 0 blocks ["l0"]
// RR-NEXT:    pipe.stage @s1 device 1 blocks ["l1"]
// RR-NEXT:    pipe.stage @s2 device 0 blocks ["l2"]
// RR-NEXT:    pipe.stage @s3 device 1 blocks ["head"]

// ERR: error: pipe-place: cannot make 8 stages (8 devices x 1 per device) from 4 block instances
// The one registry of placement algorithms: pipe-partition's.
// ALG: error: pipe-place: unknown algorithm 'magic' (known: balanced, exact, mixed, seq)
