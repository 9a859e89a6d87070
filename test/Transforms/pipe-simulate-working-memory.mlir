// RUN: pipe-opt %s -split-input-file --pipe-simulate="device-model=rtx2080ti-x8" -o /dev/null | FileCheck %s

// A measured working memory (#pipe.cost *_working_bytes, from pipe-profile)
// is charged while its part runs, on top of what the device holds; a stage
// of two blocks runs the second block's forward on top of the first one's
// saved activations, and the first backward of a step on top of the
// gradients its earlier blocks (in backward order) left.
pipe.param @w0 : tensor<256xf32>
pipe.param @w1 : tensor<256xf32>
pipe.block @a params(%w: tensor<256xf32>) (%x: tensor<4x8xf32>) -> tensor<4x8xf32>
    attributes {cost = #pipe.cost<forward_flops = 1000, backward_input_flops = 1000, backward_weight_flops = 1000, param_bytes = 1024, saved_bytes = 100, output_bytes = 128, forward_working_bytes = 5000, backward_working_bytes = 7000>} {
  pipe.return %x : tensor<4x8xf32>
}
pipe.block @b params(%w: tensor<256xf32>) (%x: tensor<4x8xf32>) -> tensor<4x8xf32>
    attributes {cost = #pipe.cost<forward_flops = 1000, backward_input_flops = 1000, backward_weight_flops = 1000, param_bytes = 1024, saved_bytes = 300, output_bytes = 128, forward_working_bytes = 4000, backward_working_bytes = 9000>} {
  pipe.return %x : tensor<4x8xf32>
}
pipe.graph @model(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %h0 = pipe.run "l0" @a(%x) params [@w0] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %h1 = pipe.run "l1" @b(%h0) params [@w1] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  pipe.return %h1 : tensor<4x8xf32>
}
pipe.placement @one graph @model devices 1 {
  pipe.stage @s0 device 0 blocks ["l0", "l1"]
}
pipe.schedule @train placement @one kind "gpipe" microbatches 2 {
  pipe.device 0 {
    pipe.forward @s0 mb 0
    pipe.forward @s0 mb 1
    pipe.backward @s0 mb 0
    pipe.backward @s0 mb 1
    pipe.update @s0
  }
}

// Params 2048. Forward: max(5000, 100 + 4000) = 5000. Backward (b, then a):
// max(9000, 1024 + 7000) = 9000. The second backward runs it on params,
// the first backward's gradients and its own saved activations:
// 2048 + 2048 + 400 + 9000.
// CHECK: @train on rtx2080ti-x8
// CHECK: device 0: {{.*}} peak memory 13496 bytes

// -----

// Without measured working memory the forward's outputs are charged while
// it runs. An offload frees its kept activations at its wait, once the
// device's earlier computes are done (the runtime's copy job frees them at
// the latest then), not when its copy would be done; a prefetch holds them
// from its issue. So mb 0 and mb 1 (4000 bytes each) count until the third
// forward ends, and the prefetches of both, issued while it runs, count
// too: params 64 + mb 2 + 2 offloaded + 2 prefetched = 64 + 5 x 4000, an
// upper bound over when the copy engines get to them. Freed when the
// copies end, it would be 64 + 64 + 2 x 4000.
pipe.param @w0 : tensor<16xf32>
pipe.block @a params(%w: tensor<16xf32>) (%x: tensor<4x8xf32>) -> tensor<4x8xf32>
    attributes {cost = #pipe.cost<forward_flops = 1000000000, backward_input_flops = 1000, backward_weight_flops = 1000, param_bytes = 64, saved_bytes = 4000, output_bytes = 128>} {
  pipe.return %x : tensor<4x8xf32>
}
pipe.graph @model(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %h0 = pipe.run "l0" @a(%x) params [@w0] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  pipe.return %h0 : tensor<4x8xf32>
}
pipe.placement @one graph @model devices 1 {
  pipe.stage @s0 device 0 blocks ["l0"]
}
pipe.schedule @offload placement @one kind "gpipe" microbatches 3 {
  pipe.device 0 {
    pipe.forward @s0 mb 0
    %t0 = pipe.offload @s0 mb 0
    pipe.forward @s0 mb 1
    %t1 = pipe.offload @s0 mb 1
    pipe.forward @s0 mb 2
    pipe.wait %t0, %t1
    pipe.backward @s0 mb 2
    %t2 = pipe.prefetch @s0 mb 1
    pipe.wait %t2
    pipe.backward @s0 mb 1
    %t3 = pipe.prefetch @s0 mb 0
    pipe.wait %t3
    pipe.backward @s0 mb 0
    pipe.update @s0
  }
}

// CHECK: @offload on rtx2080ti-x8
// CHECK: device 0: {{.*}} peak memory 20064 bytes (activations 20000)
