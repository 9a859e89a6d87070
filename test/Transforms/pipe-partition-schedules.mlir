// Every registered schedule kind can be partitioned for: the placement is
// valid (it parses and verifies again), the kind's generator accepts it and
// the schedule plays (--pipe-verify-schedule).
// RUN: pipe-opt %s --pipe-partition="devices=2 schedule=gpipe microbatches=4 text-report=%t.gpipe.txt" --pipe-schedule=kind=gpipe --pipe-verify-schedule | pipe-opt | FileCheck %s --check-prefix=GPIPE
// RUN: FileCheck %s --check-prefix=GPIPE-REPORT < %t.gpipe.txt
// RUN: pipe-opt %s --pipe-partition="devices=2 schedule=1f1b microbatches=4 text-report=" --pipe-schedule=kind=1f1b --pipe-verify-schedule | pipe-opt | FileCheck %s --check-prefix=ONEFONEB
// RUN: pipe-opt %s --pipe-partition="devices=2 schedule=interleaved-1f1b microbatches=4 text-report=%t.interleaved.txt" --pipe-schedule=kind=interleaved-1f1b --pipe-verify-schedule | pipe-opt | FileCheck %s --check-prefix=INTERLEAVED
// RUN: FileCheck %s --check-prefix=INTERLEAVED-REPORT < %t.interleaved.txt
// RUN: pipe-opt %s --pipe-partition="devices=2 schedule=zb-h1 microbatches=4 text-report=%t.zb.txt" --pipe-schedule=kind=zb-h1 --pipe-verify-schedule | pipe-opt | FileCheck %s --check-prefix=ZB
// RUN: FileCheck %s --check-prefix=ZB-REPORT < %t.zb.txt
// RUN: pipe-opt %s --pipe-partition="devices=2 schedule=pipedream-async weight-stashing=true microbatches=4 text-report=" --pipe-schedule=kind=pipedream-async --pipe-verify-schedule | pipe-opt | FileCheck %s --check-prefix=ASYNC
// RUN: pipe-opt %s --pipe-partition="devices=2 schedule=mixed microbatches=4 text-report=" --pipe-schedule=kind=mixed --pipe-verify-schedule | pipe-opt | FileCheck %s --check-prefix=MIXED
// RUN: pipe-opt %s --pipe-partition="devices=2 schedule=l2l microbatches=4 text-report=%t.l2l.txt" --pipe-schedule=kind=l2l --pipe-verify-schedule | pipe-opt | FileCheck %s --check-prefix=L2L
// RUN: FileCheck %s --check-prefix=L2L-REPORT < %t.l2l.txt
// RUN: pipe-opt %s --pipe-partition="devices=2 schedule=looped-bfs microbatches=4 text-report=" --pipe-schedule=kind=looped-bfs --pipe-verify-schedule | pipe-opt | FileCheck %s --check-prefix=BFS
// Without the simulator the closed forms alone must still give placements
// the constrained kinds accept.
// RUN: pipe-opt %s --pipe-partition="devices=2 schedule=interleaved-1f1b microbatches=4 simulate=false text-report=" --pipe-schedule=kind=interleaved-1f1b --pipe-verify-schedule | pipe-opt | FileCheck %s --check-prefix=INTERLEAVED
// RUN: pipe-opt %s --pipe-partition="devices=2 schedule=l2l microbatches=4 algorithm=seq simulate=false text-report=" --pipe-schedule=kind=l2l --pipe-verify-schedule | pipe-opt | FileCheck %s --check-prefix=L2L

// Two light blocks then two heavy ones (1 ms and 8 ms forward on an RTX
// 2080 Ti at 13.4 TFLOP/s), each with as much weight-gradient as
// input-gradient work.

pipe.param @w0 : tensor<8x8xf32>
pipe.param @w1 : tensor<8x8xf32>
pipe.param @w2 : tensor<8x8xf32>
pipe.param @w3 : tensor<8x8xf32>

pipe.block @light params(%w: tensor<8x8xf32>) (%x: tensor<4x8xf32>) -> tensor<4x8xf32>
    attributes {cost = #pipe.cost<forward_flops = 13400000000, backward_input_flops = 13400000000,
                backward_weight_flops = 13400000000, param_bytes = 256, saved_bytes = 128,
                output_bytes = 128>} {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<4x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<4x8xf32>) -> tensor<4x8xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x8xf32>)
                      outs(%acc : tensor<4x8xf32>) -> tensor<4x8xf32>
  pipe.return %mm : tensor<4x8xf32>
}

pipe.block @heavy params(%w: tensor<8x8xf32>) (%x: tensor<4x8xf32>) -> tensor<4x8xf32>
    attributes {cost = #pipe.cost<forward_flops = 107200000000, backward_input_flops = 107200000000,
                backward_weight_flops = 107200000000, param_bytes = 256, saved_bytes = 128,
                output_bytes = 128>} {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<4x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<4x8xf32>) -> tensor<4x8xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x8xf32>)
                      outs(%acc : tensor<4x8xf32>) -> tensor<4x8xf32>
  pipe.return %mm : tensor<4x8xf32>
}

pipe.graph @model(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a = pipe.run "l0" @light(%x) params [@w0] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %b = pipe.run "l1" @light(%a) params [@w1] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %c = pipe.run "h0" @heavy(%b) params [@w2] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %d = pipe.run "h1" @heavy(%c) params [@w3] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  pipe.return %d : tensor<4x8xf32>
}

// Each kind is simulated itself for the final candidates.
// GPIPE:       pipe.placement @model_mixed graph @model devices 2 microbatches 4 {
// GPIPE:       pipe.schedule @model_mixed_gpipe placement @model_mixed kind "gpipe" microbatches 4 {
// GPIPE-REPORT: schedule gpipe, 4 micro-batches
// GPIPE-REPORT: predicted step time: {{.*}} (simulated;

// ONEFONEB:    pipe.placement @model_mixed graph @model devices 2 microbatches 4 {
// ONEFONEB:    pipe.schedule @model_mixed_1f1b placement @model_mixed kind "1f1b" microbatches 4 {

// interleaved-1f1b runs only round-robin placements with the same number
// of stages on every device (here one or two each).
// INTERLEAVED:      pipe.placement @model_mixed graph @model devices 2 microbatches 4 {
// INTERLEAVED-NEXT:   pipe.stage @s0 device 0
// INTERLEAVED-NEXT:   pipe.stage @s1 device 1
// INTERLEAVED-NOT:    pipe.stage @s2 device 1
// INTERLEAVED:      pipe.schedule @model_mixed_interleaved_1f1b placement @model_mixed kind "interleaved-1f1b" microbatches 4 {
// INTERLEAVED-REPORT: schedule interleaved-1f1b, 4 micro-batches
// INTERLEAVED-REPORT: predicted step time: {{.*}} (simulated;

// zb-h1: every stage keeps the pipeline's depth of micro-batches in flight
// (the last column), and the weight gradients shorten the analytic step
// below GPipe's and 1F1B's (135 ms on this placement).
// ZB:          pipe.placement @model_mixed graph @model devices 2 microbatches 4 {
// ZB:          pipe.schedule @model_mixed_zb_h1 placement @model_mixed kind "zb-h1" microbatches 4 {
// ZB-REPORT:   schedule zb-h1, 4 micro-batches
// ZB-REPORT:   s3      1       1       8.000 ms     16.000 ms    128 B       256 B       1       4
// ZB-REPORT:   predicted step time: {{.*}} (simulated; analytic 115.000 ms)

// ASYNC:       pipe.placement @model_mixed graph @model devices 2 microbatches 4 {
// ASYNC:       pipe.schedule @model_mixed_pipedream_async placement @model_mixed kind "pipedream-async" microbatches 4 weight_versions {

// MIXED:       pipe.placement @model_mixed graph @model devices 2 microbatches 4 {
// MIXED:       pipe.schedule @model_mixed_mixed placement @model_mixed kind "mixed" microbatches 4 {

// l2l prescribes the placement: one stage per block, all on device 0, and
// its closed form (m times every stage's forward, recompute and backward)
// is what the simulator plays.
// L2L:      pipe.placement @model_{{mixed|seq}} graph @model devices 2 microbatches 4 {
// L2L-NEXT:   pipe.stage @s0 device 0 blocks ["l0"]
// L2L-NEXT:   pipe.stage @s1 device 0 blocks ["l1"]
// L2L-NEXT:   pipe.stage @s2 device 0 blocks ["h0"]
// L2L-NEXT:   pipe.stage @s3 device 0 blocks ["h1"]
// L2L-NEXT: }
// L2L:      pipe.schedule @model_{{mixed|seq}}_l2l placement @model_{{mixed|seq}} kind "l2l" microbatches 4 ps_stages [@s0, @s1, @s2, @s3] {
// L2L-REPORT: schedule l2l, 4 micro-batches
// L2L-REPORT: predicted step time: 288.000 ms (simulated; analytic 288.000 ms)
// L2L-REPORT: note: seq: schedule l2l prescribes the placement

// BFS:         pipe.placement @model_mixed graph @model devices 2 microbatches 4 {
// BFS:         pipe.schedule @model_mixed_looped_bfs placement @model_mixed kind "looped-bfs" microbatches 4 {
