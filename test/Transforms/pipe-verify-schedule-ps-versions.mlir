// RUN: pipe-opt %s -split-input-file --pipe-verify-schedule -verify-diagnostics

// Versioned loads (delayed host updates, ps.load ... version v): a version
// is the weights after exactly v updates of the stage, so v of them must be
// issued before the load.
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
pipe.schedule @future placement @one kind "l2l" microbatches 1 ps_stages [@s0] {
  pipe.device 0 {
    // expected-error @below {{loads weight version 1 of @s0, but only 0 updates of its parameters are issued before it}}
    %0 = pipe.ps.load @s0 version 1
    pipe.wait %0
    pipe.forward @s0 mb 0
    pipe.backward @s0 mb 0
    %1 = pipe.ps.push @s0
    %2 = pipe.ps.update @s0
    pipe.ps.release @s0
    pipe.wait %2, %1
  }
}

// -----

// The parameter server keeps the latest two versions: after two updates,
// version 0 is gone.
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
pipe.schedule @stale placement @one kind "l2l" microbatches 1 steps 3 ps_stages [@s0] {
  pipe.device 0 {
    %0 = pipe.ps.load @s0 version 0
    pipe.wait %0
    pipe.forward @s0 mb 0
    pipe.backward @s0 mb 0
    %1 = pipe.ps.push @s0
    %2 = pipe.ps.update @s0
    pipe.ps.release @s0
    pipe.wait %2, %1
    %3 = pipe.ps.load @s0 step 1 version 1
    pipe.wait %3
    pipe.forward @s0 mb 0 step 1
    pipe.backward @s0 mb 0 step 1
    %4 = pipe.ps.push @s0 step 1
    %5 = pipe.ps.update @s0 step 1
    pipe.ps.release @s0 step 1
    pipe.wait %5, %4
    // expected-error @below {{loads weight version 0 of @s0 after 2 updates of its parameters are issued; the parameter server keeps only the latest two versions}}
    %6 = pipe.ps.load @s0 step 2 version 0
    pipe.wait %6
    pipe.forward @s0 mb 0 step 2
    pipe.backward @s0 mb 0 step 2
    %7 = pipe.ps.push @s0 step 2
    %8 = pipe.ps.update @s0 step 2
    pipe.ps.release @s0 step 2
    pipe.wait %8, %7
  }
}

// -----

// A backward on weights other than those its forward used computes the
// gradient of no loss.
pipe.param @w0 : tensor<8x8xf32>
pipe.param @w1 : tensor<8x8xf32>
pipe.block @layer params(%w: tensor<8x8xf32>) (%x: tensor<4x8xf32>)
    -> tensor<4x8xf32> {
  pipe.return %x : tensor<4x8xf32>
}
pipe.graph @model(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %h0 = pipe.run "l0" @layer(%x) params [@w0] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %h1 = pipe.run "l1" @layer(%h0) params [@w1] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  pipe.return %h1 : tensor<4x8xf32>
}
pipe.placement @one graph @model devices 1 {
  pipe.stage @s0 device 0 blocks ["l0"]
  pipe.stage @s1 device 0 blocks ["l1"]
}
pipe.schedule @mixed placement @one kind "l2l" microbatches 1 steps 2 ps_stages [@s0, @s1] {
  pipe.device 0 {
    %0 = pipe.ps.load @s0 version 0
    %1 = pipe.ps.load @s1 version 0
    pipe.wait %0
    pipe.forward @s0 mb 0
    pipe.ps.release @s0
    pipe.wait %1
    pipe.forward @s1 mb 0
    %2 = pipe.ps.load @s0 version 0
    pipe.backward @s1 mb 0
    %3 = pipe.ps.push @s1
    %4 = pipe.ps.update @s1
    pipe.ps.release @s1
    pipe.wait %2
    pipe.backward @s0 mb 0
    %5 = pipe.ps.push @s0
    %6 = pipe.ps.update @s0
    pipe.ps.release @s0
    pipe.wait %3, %5, %4
    %7 = pipe.ps.load @s0 step 1 version 0
    %8 = pipe.ps.load @s1 step 1 version 0
    pipe.wait %7
    pipe.forward @s0 mb 0 step 1
    pipe.ps.release @s0 step 1
    pipe.wait %8
    pipe.forward @s1 mb 0 step 1
    %9 = pipe.ps.load @s0 step 1 version 1
    pipe.backward @s1 mb 0 step 1
    %10 = pipe.ps.push @s1 step 1
    %11 = pipe.ps.update @s1 step 1
    pipe.ps.release @s1 step 1
    pipe.wait %9, %6
    // expected-error @below {{computes on weight version 1 of @s0, but its forward used version 0; the gradient would not be of the loss}}
    pipe.backward @s0 mb 0 step 1
    %12 = pipe.ps.push @s0 step 1
    %13 = pipe.ps.update @s0 step 1
    pipe.ps.release @s0 step 1
    pipe.wait %10, %12, %11, %13
  }
}

// -----

// The host sums pushes until an update consumes them: a push issued while
// the previous update of its stage may not have run joins that update.
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
pipe.schedule @early_push placement @one kind "l2l" microbatches 1 steps 2 ps_stages [@s0] {
  pipe.device 0 {
    %0 = pipe.ps.load @s0 version 0
    pipe.wait %0
    pipe.forward @s0 mb 0
    pipe.backward @s0 mb 0
    %1 = pipe.ps.push @s0
    %2 = pipe.ps.update @s0
    pipe.ps.release @s0
    pipe.wait %1
    %3 = pipe.ps.load @s0 step 1 version 0
    pipe.wait %3
    pipe.forward @s0 mb 0 step 1
    pipe.backward @s0 mb 0 step 1
    // expected-error @below {{pushes the gradient of @s0 before waiting for the previous ps.update of its parameters, which would consume this gradient too}}
    %4 = pipe.ps.push @s0 step 1
    %5 = pipe.ps.update @s0 step 1
    pipe.ps.release @s0 step 1
    pipe.wait %2, %5, %4
  }
}
