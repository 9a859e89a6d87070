// RUN: pipe-opt %s --pipe-simulate="device-model=rtx2080ti-x8" -o /dev/null | FileCheck %s

// A pipe-profile table measures a block's split backward apart from its
// fused one (each split part recomputes what they share): a fused backward
// costs backward_time_ns, backward.input and backward.weight their own
// times. Forward 1 us, fused backward 2 us, split 1.5 + 1.25 us; the
// measured update of the block's parameters 0.5 us.
pipe.param @w0 : tensor<4xf32>
pipe.block @a params(%w: tensor<4xf32>) (%x: tensor<4x8xf32>) -> tensor<4x8xf32>
    attributes {cost = #pipe.cost<forward_flops = 1000, backward_input_flops = 1000, backward_weight_flops = 1000, param_bytes = 16, saved_bytes = 0, output_bytes = 128, forward_time_ns = 1000, backward_time_ns = 2000, backward_input_time_ns = 1500, backward_weight_time_ns = 1250, update_time_ns = 500>} {
  pipe.return %x : tensor<4x8xf32>
}
pipe.graph @model(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %h0 = pipe.run "l0" @a(%x) params [@w0] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  pipe.return %h0 : tensor<4x8xf32>
}
pipe.placement @one graph @model devices 1 {
  pipe.stage @s0 device 0 blocks ["l0"]
}
pipe.schedule @fused placement @one kind "gpipe" microbatches 1 {
  pipe.device 0 {
    pipe.forward @s0 mb 0
    pipe.backward @s0 mb 0
    pipe.update @s0
  }
}
pipe.schedule @split placement @one kind "zb-h1" microbatches 1 {
  pipe.device 0 {
    pipe.forward @s0 mb 0
    pipe.backward.input @s0 mb 0
    pipe.backward.weight @s0 mb 0
    pipe.update @s0
  }
}

// CHECK: @fused on rtx2080ti-x8
// CHECK-NEXT: step time: 3.5e-06 s
// CHECK: @split on rtx2080ti-x8
// CHECK-NEXT: step time: 4.25e-06 s
