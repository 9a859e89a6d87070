// Data parallelism in the IR: --pipe-place=replicas=R records R copies of
// the placement, and every schedule of it reduces each trainable gradient
// over the replicas before the update that reads it: a parameter read on
// one device by a bucketed pipe.reduce_bucket all-reduce, started after the
// device's last backward writing it and waited on before the update
// (pipe-schedule-reduce-buckets.mlir tests the buckets), one shared by
// stages on several devices (the tied embedding) by pipe.reduce_grad. The
// verifier requires those reductions and the simulator charges them to the
// device model's links between the replicas.
//
// RUN: pipe-opt %S/Inputs/sched-model.mlir --pipe-place="devices=2 replicas=2" --pipe-schedule="kind=1f1b microbatches=2" --pipe-verify-schedule | FileCheck %s
// RUN: pipe-opt %S/Inputs/sched-model.mlir --pipe-place="devices=2 replicas=2" --pipe-schedule="kind=1f1b microbatches=2 reduce-bucket-bytes=0" --pipe-verify-schedule | FileCheck %s --check-prefix=BLOCKING
// RUN: pipe-opt %S/Inputs/sched-model.mlir --pipe-place=devices=2 --pipe-schedule="kind=1f1b microbatches=2" | FileCheck %s --check-prefix=ONE
// RUN: pipe-opt %S/Inputs/sched-model.mlir --pipe-place="devices=2 replicas=2" --pipe-schedule="kind=pipedream-async microbatches=2" --pipe-verify-schedule | FileCheck %s --check-prefix=ASYNC

// CHECK-LABEL: pipe.placement @model_placement graph @model devices 2 replicas 2
// CHECK:       pipe.device 0 {
// CHECK-NOT:   pipe.update
// CHECK:         pipe.backward @s0 mb 1
// CHECK-NEXT:    %[[B0:.*]] = pipe.reduce_bucket [@w1]
// CHECK:         pipe.reduce_grad @wte
// CHECK-NEXT:    pipe.wait %[[B0]]
// CHECK-NEXT:    pipe.update @s0
// CHECK:       pipe.device 1 {
// CHECK-NOT:   pipe.update
// CHECK:         pipe.send gradient @s1 -> @s0 mb 1
// CHECK-NEXT:    %[[B1:.*]] = pipe.reduce_bucket [@w2]
// CHECK:         pipe.reduce_grad @wte
// CHECK-NEXT:    pipe.wait %[[B1]]
// CHECK-NEXT:    pipe.update @s1

// reduce-bucket-bytes=0: one blocking reduction per parameter at the end.
// BLOCKING:       pipe.device 0 {
// BLOCKING-NOT:   pipe.reduce_bucket
// BLOCKING:         pipe.reduce_grad @wte
// BLOCKING-NEXT:    pipe.reduce_grad @w1
// BLOCKING-NEXT:    pipe.update @s0
// BLOCKING:       pipe.device 1 {
// BLOCKING:         pipe.reduce_grad @wte
// BLOCKING-NEXT:    pipe.reduce_grad @w2
// BLOCKING-NEXT:    pipe.update @s1

// One replica: only the tied embedding is reduced.
// ONE-LABEL: pipe.placement @model_placement graph @model devices 2 {
// ONE-NOT:   pipe.reduce_grad @w1
// ONE-NOT:   pipe.reduce_grad @w2

// ASYNC: %[[A:.*]] = pipe.reduce_bucket [@w1]
// ASYNC: pipe.wait %[[A]]
// ASYNC-NEXT: pipe.update @s0

// The verifier refuses a replicated placement whose schedule updates a
// gradient that was never reduced over the replicas.
// RUN: pipe-opt %S/Inputs/sched-model.mlir --pipe-place=devices=2 --pipe-schedule="kind=1f1b microbatches=2" | sed -e 's/devices 2 {/devices 2 replicas 2 {/' | not pipe-opt --pipe-verify-schedule 2>&1 | FileCheck %s --check-prefix=UNREDUCED
// UNREDUCED: error: {{.*}}@w1 before it is reduced (by pipe.reduce_grad, or by the wait of its pipe.reduce_bucket)

// The simulator charges each all-reduce to the links between the replicas'
// copies of the device: on rtx2080ti-x8 (PCIe) the replicated step is
// slower than one replica's, and the trace shows the collectives, a
// bucket's on the device's all-reduce track beside its compute.
// RUN: pipe-opt %S/Inputs/sched-model.mlir --pipe-place="devices=2 replicas=2" --pipe-schedule="kind=1f1b microbatches=2" --pipe-simulate="device-model=rtx2080ti-x8 trace=%t.trace.json" -o /dev/null
// RUN: FileCheck %s --check-prefix=TRACE < %t.trace.json
// TRACE-DAG: "name":"reduce_grad @wte","cat":"collective","ph":"X","pid":0,"tid":0,"ts":{{[0-9.]+}},"dur":{{(0\.0*)?[1-9]}}
// TRACE-DAG: "name":"reduce_bucket [@w1]","cat":"collective","ph":"X","pid":0,"tid":[[T:[0-9]+]],"ts":{{[0-9.]+}},"dur":{{(0\.0*)?[1-9]}}
// TRACE-DAG: "tid":[[T]],"args":{"name":"device 0 all-reduce"}

// Replicas of a parameter-server schedule (L2L) share the one host copy of
// the weights: each replica pushes its own gradient, pipe.ps.reduce sums
// the replicas' pushes on the host, and one ps.update applies the sum; no
// reduce_grad on the device.
// RUN: pipe-opt %S/Inputs/sched-model.mlir --pipe-place="devices=1 stages-per-device=0 replicas=2" "--pipe-schedule=kind=l2l microbatches=2" --pipe-verify-schedule -o %t.l2l.mlir
// RUN: FileCheck %s --check-prefix=L2L < %t.l2l.mlir
// L2L: pipe.placement @model_placement graph @model devices 1 {{.*}}replicas 2
// L2L-NOT: reduce_
// L2L: = pipe.ps.push @[[S:[a-z0-9_]+]]
// L2L-NEXT: pipe.ps.reduce @[[S]]
// L2L-NEXT: = pipe.ps.update @[[S]]
// L2L-NOT: reduce_
//
// The verifier refuses an update of a replicated placement before the
// replicas' gradients are summed, and the dialect a ps.reduce in a
// placement of one replica.
// RUN: grep -v pipe.ps.reduce %t.l2l.mlir | not pipe-opt --pipe-verify-schedule 2>&1 | FileCheck %s --check-prefix=L2L-UNREDUCED
// L2L-UNREDUCED: error: {{.*}}updates @s{{[0-9]+}} before a ps.reduce sums the 2 replicas' gradients of it
// RUN: sed -e 's/ replicas 2//' %t.l2l.mlir | not pipe-opt 2>&1 | FileCheck %s --check-prefix=L2L-ONE
// L2L-ONE: error: 'pipe.ps.reduce' op sums the replicas' gradients, but placement @model_placement has one replica
//
// The simulator: the replicas' loads and pushes share the one host's link,
// and the host sums their gradients before each update, so on a host-bound
// device model two replicas take longer per step than one (and process
// twice the samples).
// RUN: pipe-opt %t.l2l.mlir "--pipe-simulate=device-model=rtx2080ti-x8 report=%t.l2l2.json" -o /dev/null
// RUN: pipe-opt %S/Inputs/sched-model.mlir --pipe-place="devices=1 stages-per-device=0" "--pipe-schedule=kind=l2l microbatches=2" "--pipe-simulate=device-model=rtx2080ti-x8 report=%t.l2l1.json" -o /dev/null
// RUN: %python -c "import json,sys; a,b=(json.load(open(p))['schedules'][0]['report'] for p in sys.argv[1:]); print('slower' if b['step_time_s'] > a['step_time_s'] else 'not slower', 'throughput x%.2f' % (b['throughput_samples_per_s'] / a['throughput_samples_per_s']))" %t.l2l1.json %t.l2l2.json | FileCheck %s --check-prefix=L2L-SIM
// L2L-SIM: slower throughput x{{1\.9[0-9]|2\.00}}
