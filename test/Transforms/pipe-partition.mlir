// RUN: pipe-opt %s --pipe-partition="devices=2 schedule=pipedream-async microbatches=4 text-report=%t.txt report=%t.json" | pipe-opt | FileCheck %s
// RUN: FileCheck %s --check-prefix=REPORT < %t.txt
// RUN: FileCheck %s --check-prefix=JSON < %t.json
// RUN: pipe-opt %s --pipe-partition="algorithm=seq devices=2 schedule=pipedream-async microbatches=4 text-report=" | FileCheck %s --check-prefix=SEQ
// RUN: pipe-opt %s --pipe-partition="algorithm=exact devices=2 schedule=gpipe microbatches=4 simulate=false placement=best text-report=" | FileCheck %s --check-prefix=EXACT
// RUN: pipe-opt %s --pipe-partition="algorithm=balanced devices=2 microbatches=4 text-report=" | FileCheck %s --check-prefix=BAL

// Two light blocks then two heavy ones (1 ms and 8 ms forward on an RTX
// 2080 Ti at 13.4 TFLOP/s). A contiguous split cannot balance them on two
// devices; Mixed-Pipe gives device 0 the first and the last block, as two
// stages that are not adjacent.

pipe.param @w0 : tensor<8x8xf32>
pipe.param @w1 : tensor<8x8xf32>
pipe.param @w2 : tensor<8x8xf32>
pipe.param @w3 : tensor<8x8xf32>

pipe.block @light params(%w: tensor<8x8xf32>) (%x: tensor<4x8xf32>) -> tensor<4x8xf32>
    attributes {cost = #pipe.cost<forward_flops = 13400000000, backward_input_flops = 13400000000,
                backward_weight_flops = 0, param_bytes = 256, saved_bytes = 128,
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
                backward_weight_flops = 0, param_bytes = 256, saved_bytes = 128,
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

// CHECK-LABEL: pipe.placement @model_mixed graph @model devices 2 microbatches 4 {
// CHECK-NEXT:    pipe.stage @s0 device 0 blocks ["l0"]
// CHECK-NEXT:    pipe.stage @s1 device 1 blocks ["l1", "h0"]
// CHECK-NEXT:    pipe.stage @s2 device 0 blocks ["h1"]
// CHECK-NEXT:  }

// REPORT:      pipe-partition: graph @model -> placement @model_mixed
// REPORT-NEXT:   algorithm mixed; 4 blocks; 2 devices of rtx2080ti-x8 (f32); schedule pipedream-async, 4 micro-batches; optimizer adamw
// REPORT-NEXT: stages: 3
// REPORT:      s0      0       1       1.000 ms     1.000 ms     128 B       256 B       3       3
// REPORT:      stage -> device: [0,1,0]
// REPORT:      0       s0,s2        18.000 ms
// REPORT-NEXT: 1       s1           18.000 ms
// REPORT:      communication: 256 B per micro-batch each way
// REPORT:      bottleneck 18.000 ms per micro-batch
// REPORT:      predicted step time: {{.*}} (simulated; analytic 72.000 ms)
// REPORT:      partitioning time:
// REPORT:      note: mixed: candidate seq: 2 stages

// JSON:      "algorithm": "mixed",
// JSON:      "schedule": "pipedream-async",
// JSON:      "analytic_step_seconds": 0.072
// JSON:      "simulated": true,
// JSON:      "balance_speedup": 2,
// JSON:      "stage_to_device": [
// JSON-NEXT:   0,
// JSON-NEXT:   1,
// JSON-NEXT:   0
// JSON-NEXT: ],
// JSON:      "blocks": [
// JSON-NEXT:   "l0"
// JSON-NEXT: ]

// SEQ-LABEL: pipe.placement @model_seq graph @model devices 2 microbatches 4 {
// SEQ-NEXT:    pipe.stage @s0 device 0 blocks ["l0", "l1", "h0"]
// SEQ-NEXT:    pipe.stage @s1 device 1 blocks ["h1"]
// SEQ-NEXT:  }

// EXACT-LABEL: pipe.placement @best graph @model devices 2 microbatches 4 {
// EXACT-COUNT-3: pipe.stage
// EXACT-NOT:     pipe.stage

// pipe-place's partitioner through pipe-partition: contiguous stages in
// graph order, the most expensive one as light as a contiguous split allows.
// BAL:      pipe.placement @model_balanced graph @model devices 2 microbatches 4 {
// BAL-NEXT:   pipe.stage @s0 device 0 blocks ["l0", "l1", "h0"]
// BAL-NEXT:   pipe.stage @s1 device 1 blocks ["h1"]
