// RUN: pipe-opt %S/Inputs/sched-model.mlir --pipe-place=devices=2 --pipe-schedule="kind=gpipe microbatches=4" --pipe-simulate="ideal=true microbatch-size=4" -o /dev/null | FileCheck %s
// RUN: pipe-opt %S/Inputs/sched-model.mlir --pipe-place=devices=2 --pipe-schedule="kind=1f1b microbatches=4" --pipe-simulate="device-model=rtx2080ti-x8 trace=%t.trace.json report=%t.report.json" -o /dev/null
// RUN: FileCheck %s --check-prefix=TRACE < %t.trace.json
// RUN: FileCheck %s --check-prefix=REPORT < %t.report.json
// RUN: not pipe-opt %S/Inputs/sched-model.mlir --pipe-place=devices=2 --pipe-schedule=kind=gpipe --pipe-simulate=device-model=no-such-model -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERR

// Two stages of two 1 ms blocks (no #pipe.cost): forward 2 ms, backward
// 4 ms; GPipe over 4 micro-batches takes (4 + 2 - 1) * 6 ms with a bubble
// of (p - 1) / (m + p - 1) = 1/5 on each device.
// CHECK:      @model_placement_gpipe on ideal: schedule gpipe: 4 micro-batches, 1 step(s)
// CHECK-NEXT:   step time: 0.03 s, throughput: 533.333 samples/s
// CHECK-NEXT:   device 0: busy 0.024 s, bubble 0.2000
// CHECK-NEXT:   device 1: busy 0.024 s, bubble 0.2000

// TRACE: "traceEvents":[
// TRACE-SAME: "name":"thread_name","ph":"M","pid":0,"tid":0,"args":{"name":"device 0 compute"}
// TRACE-SAME: "name":"forward @s0 mb 0","cat":"compute","ph":"X","pid":0,"tid":0,"ts":0,"dur":2000
// TRACE-SAME: "cat":"transfer","ph":"X"

// REPORT:      "name": "model_placement_1f1b"
// REPORT:      "step_time_s":
// REPORT:      "bubble_fraction":
// REPORT:      "capacity_bytes": 11000000000
// REPORT:      "links": [
// REPORT:        "utilisation":

// ERR: cannot use device model 'no-such-model'
