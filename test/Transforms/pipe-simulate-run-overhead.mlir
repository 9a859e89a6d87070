// RUN: pipe-opt %s --pipe-simulate="device-model=%S/Inputs/device-model-run-overhead.json" -o /dev/null | FileCheck %s

// A device model's host.run_overhead (the runtime's own time per schedule
// run, measured by pipe-profile) is part of every run's wall time: two
// steps of 1 us forward and 2 us backward, plus 10 us, are 8 us a step.
pipe.param @w0 : tensor<4xf32>
pipe.block @a params(%w: tensor<4xf32>) (%x: tensor<4x8xf32>) -> tensor<4x8xf32>
    attributes {cost = #pipe.cost<forward_flops = 1000, backward_input_flops = 1000, backward_weight_flops = 1000, param_bytes = 16, saved_bytes = 0, output_bytes = 128, forward_time_ns = 1000, backward_time_ns = 2000>} {
  pipe.return %x : tensor<4x8xf32>
}
pipe.graph @model(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %h0 = pipe.run "l0" @a(%x) params [@w0] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  pipe.return %h0 : tensor<4x8xf32>
}
pipe.placement @one graph @model devices 1 {
  pipe.stage @s0 device 0 blocks ["l0"]
}
pipe.schedule @two placement @one kind "gpipe" microbatches 1 steps 2 {
  pipe.device 0 {
    pipe.forward @s0 mb 0
    pipe.backward @s0 mb 0
    pipe.forward @s0 mb 0 step 1
    pipe.backward @s0 mb 0 step 1
  }
}

// CHECK: @two on overhead: schedule gpipe: 1 micro-batches, 2 step(s)
// CHECK-NEXT: step time: 8e-06 s
