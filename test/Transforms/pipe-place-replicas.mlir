// Data parallelism in the IR: --pipe-place=replicas=R records R copies of
// the placement, and every schedule of it reduces each trainable gradient
// (pipe.reduce_grad, an all-reduce over the replicas) before the update
// that reads it. The verifier requires those reductions and the simulator
// charges them to the device model's links between the replicas.
//
// RUN: pipe-opt %S/Inputs/sched-model.mlir --pipe-place="devices=2 replicas=2" --pipe-schedule="kind=1f1b microbatches=2" --pipe-verify-schedule | FileCheck %s
// RUN: pipe-opt %S/Inputs/sched-model.mlir --pipe-place=devices=2 --pipe-schedule="kind=1f1b microbatches=2" | FileCheck %s --check-prefix=ONE
// RUN: pipe-opt %S/Inputs/sched-model.mlir --pipe-place="devices=2 replicas=2" --pipe-schedule="kind=pipedream-async microbatches=2" --pipe-verify-schedule | FileCheck %s --check-prefix=ASYNC

// CHECK-LABEL: pipe.placement @model_placement graph @model devices 2 replicas 2
// CHECK:       pipe.device 0 {
// CHECK-NOT:   pipe.update
// CHECK:         pipe.reduce_grad @wte
// CHECK-NEXT:    pipe.reduce_grad @w1
// CHECK-NEXT:    pipe.update @s0
// CHECK:       pipe.device 1 {
// CHECK-NOT:   pipe.update
// CHECK:         pipe.reduce_grad @wte
// CHECK-NEXT:    pipe.reduce_grad @w2
// CHECK-NEXT:    pipe.update @s1

// One replica: only the tied embedding is reduced.
// ONE-LABEL: pipe.placement @model_placement graph @model devices 2 {
// ONE-NOT:   pipe.reduce_grad @w1
// ONE-NOT:   pipe.reduce_grad @w2

// ASYNC: pipe.reduce_grad @w1
// ASYNC: pipe.update @s0

// The verifier refuses a replicated placement whose schedule updates a
// gradient that was never reduced over the replicas.
// RUN: pipe-opt %S/Inputs/sched-model.mlir --pipe-place=devices=2 --pipe-schedule="kind=1f1b microbatches=2" | sed -e 's/devices 2 {/devices 2 replicas 2 {/' | not pipe-opt --pipe-verify-schedule 2>&1 | FileCheck %s --check-prefix=UNREDUCED
// UNREDUCED: error: {{.*}}@w1 before it is reduced (pipe.reduce_grad)

// The simulator charges each all-reduce to the links between the replicas'
// copies of the device: on rtx2080ti-x8 (PCIe) the replicated step is
// slower than one replica's, and the trace shows the collectives.
// RUN: pipe-opt %S/Inputs/sched-model.mlir --pipe-place="devices=2 replicas=2" --pipe-schedule="kind=1f1b microbatches=2" --pipe-simulate="device-model=rtx2080ti-x8 trace=%t.trace.json" -o /dev/null
// RUN: FileCheck %s --check-prefix=TRACE < %t.trace.json
// TRACE: "name":"reduce_grad @w1","cat":"collective","ph":"X","pid":0,"tid":0,"ts":{{[0-9.]+}},"dur":{{(0\.0*)?[1-9]}}

// A parameter-server schedule keeps one host copy of the weights: it has
// one replica.
// RUN: not pipe-opt %S/Inputs/sched-model.mlir --pipe-place="devices=1 stages-per-device=0 replicas=2" --pipe-schedule=kind=l2l 2>&1 | FileCheck %s --check-prefix=L2L
// L2L: error: pipe-schedule: placement @model_placement has 2 replicas, but 'l2l' keeps weights on the host parameter server, which supports one replica
