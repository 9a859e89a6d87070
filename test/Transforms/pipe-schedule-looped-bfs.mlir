// The tutorial's schedule (examples/schedules/LoopedBFS.cpp): generated,
// verified and simulated like any built-in kind.
// RUN: pipe-opt %S/Inputs/sched-model.mlir --pipe-place="devices=2 stages-per-device=2" --pipe-schedule="kind=looped-bfs microbatches=3" --pipe-verify-schedule | FileCheck %s
// RUN: pipe-opt %S/Inputs/sched-model.mlir --pipe-place="devices=2 stages-per-device=2" --pipe-schedule="kind=looped-bfs microbatches=3" --pipe-simulate=ideal=true -o /dev/null | FileCheck %s --check-prefix=SIM

// CHECK-LABEL: pipe.schedule @model_placement_looped_bfs placement @model_placement kind "looped-bfs" microbatches 3
// CHECK:         pipe.device 0 {
// CHECK:           pipe.forward @s0 mb 0
// CHECK:           pipe.forward @s0 mb 1
// CHECK:           pipe.forward @s0 mb 2
// CHECK:           pipe.forward @s2 mb 0
// CHECK:           pipe.backward @s2 mb 0
// CHECK:           pipe.backward @s0 mb 0
// CHECK:           pipe.reduce_grad @wte
// CHECK:           pipe.update @s0
// CHECK-NEXT:      pipe.update @s2

// SIM: @model_placement_looped_bfs on ideal: schedule looped-bfs: 3 micro-batches, 1 step(s)
// SIM: device 0: busy
