// RUN: pipe-opt %s --pipe-simulate="device-model=%S/Inputs/device-model-round-rates.json" -o /dev/null | FileCheck %s
// RUN: pipe-opt %s --pipe-simulate="device-model=%S/Inputs/device-model-round-backward-rates.json" -o /dev/null | FileCheck %s --check-prefix=BACKWARD

// Analytic part times (no measured ones): FLOPs / rate + bytes / bandwidth
// at 1 GFLOP/s and 1 GB/s. The forward does 1000 FLOPs over the block's
// 1000 bytes: 2 us. The fused backward passes over the bytes once for both
// parts' 2000 FLOPs: 3 us; run apart (zero bubble), each part pays the
// bytes: 2 + 2 us. The update of 4 f32 parameters moves 128 bytes: 0.128 us.
// With backward code at half the rates (backward_flops, backward_memory_
// bandwidth, as pipe-profile fits them apart), the backward parts take
// twice as long: 6 us fused, 4 + 4 us split; the forward and the update
// keep the forward's rates.
pipe.param @w0 : tensor<4xf32>
pipe.block @a params(%w: tensor<4xf32>) (%x: tensor<4x8xf32>) -> tensor<4x8xf32>
    attributes {cost = #pipe.cost<forward_flops = 1000, backward_input_flops = 1000, backward_weight_flops = 1000, param_bytes = 16, saved_bytes = 0, output_bytes = 128, bytes_accessed = 1000>} {
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
// CHECK-NEXT: step time: 5.128e-06 s
// CHECK: @split on round-rates
// CHECK-NEXT: step time: 6.128e-06 s

// BACKWARD: @fused on round-backward-rates
// BACKWARD-NEXT: step time: 8.128e-06 s
// BACKWARD: @split on round-backward-rates
// BACKWARD-NEXT: step time: 1.0128e-05 s
