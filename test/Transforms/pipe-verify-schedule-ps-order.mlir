// RUN: pipe-opt %s --pipe-verify-schedule -verify-diagnostics

// A load of step 1 issued before the update of step 0: the runtime would
// copy weights that miss step 0's update.
pipe.param @w0 : tensor<8x8xf32>
pipe.block @layer params(%w: tensor<8x8xf32>) (%x: tensor<4x8xf32>)
    -> tensor<4x8xf32> {
  pipe.return %x : tensor<4x8xf32>
}
pipe.graph @model(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %h0 = pipe.run "l0" @layer(%x) params [@w0] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  pipe.return %h0 : tensor<4x8xf32>
}
pipe.placement @one graph @model devices 1 {
  pipe.stage @s0 device 0 blocks ["l0"]
}
pipe.schedule @early placement @one kind "l2l" microbatches 1 steps 2 ps_stages [@s0] {
  pipe.device 0 {
    %0 = pipe.ps.load @s0
    pipe.wait %0
    pipe.forward @s0 mb 0
    pipe.recompute @s0 mb 0
    pipe.backward @s0 mb 0
    %1 = pipe.ps.push @s0
    pipe.ps.release @s0
    // expected-error @below {{loads @s0 for step 1 after only 0 updates of its parameters are issued}}
    %2 = pipe.ps.load @s0 step 1
    %3 = pipe.ps.update @s0
    pipe.wait %2, %3, %1
    pipe.forward @s0 mb 0 step 1
    pipe.recompute @s0 mb 0 step 1
    pipe.backward @s0 mb 0 step 1
    %4 = pipe.ps.push @s0 step 1
    %5 = pipe.ps.update @s0 step 1
    pipe.ps.release @s0 step 1
    pipe.wait %5, %4
  }
}
