// RUN: pipe-opt %s --pipe-simulate="device-model=%S/Inputs/device-model-round-rates.json" -o /dev/null | FileCheck %s

// A differentiated block's cost: each split part counts the FLOPs of its
// own code (here 1000 each, as each propagates the gradient through the
// block), the fused backward those it runs once (`backward_flops`, 1500),
// at 1 GFLOP/s and 1 GB/s over the block's 1000 bytes. The fused backward
// takes 1.5 + 1 us, not the parts' 2 + 1 us; run apart each part takes
// 1 + 1 us. Forward 2 us, update 0.128 us.
pipe.param @w0 : tensor<4xf32>
pipe.block @a params(%w: tensor<4xf32>) (%x: tensor<4x8xf32>) -> tensor<4x8xf32>
    attributes {cost = #pipe.cost<forward_flops = 1000, backward_input_flops = 1000, backward_weight_flops = 1000, param_bytes = 16, saved_bytes = 0, output_bytes = 128, bytes_accessed = 1000, backward_flops = 1500>} {
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

// CHECK: @fused on round-rates
// CHECK-NEXT: step time: 4.628e-06 s
// CHECK: @split on round-rates
// CHECK-NEXT: step time: 6.128e-06 s
