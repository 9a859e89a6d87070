// RUN: pipe-opt %s -split-input-file -verify-diagnostics --pipe-verify-schedule

// A two-stage chain on two devices; every case breaks one rule.
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
pipe.placement @placed graph @model devices 2 {
  pipe.stage @s0 device 0 blocks ["l0"]
  pipe.stage @s1 device 1 blocks ["l1"]
}
// Missing action: device 1 never runs the backward of @s1.
pipe.schedule @missing placement @placed kind "hand" microbatches 1 {
  pipe.device 0 {
    pipe.forward @s0 mb 0
    %a = pipe.send activation @s0 -> @s1 mb 0 payload [tensor<4x8xf32>]
    %g = pipe.recv gradient @s1 -> @s0 mb 0 payload [tensor<4x8xf32>]
    pipe.wait %g
    pipe.backward @s0 mb 0
    pipe.wait %a
    pipe.update @s0
  }
  // expected-error @+1 {{schedule @missing: device 1 never runs the backward of @s1 for micro-batch 0}}
  pipe.device 1 {
    %r = pipe.recv activation @s0 -> @s1 mb 0 payload [tensor<4x8xf32>]
    pipe.wait %r
    pipe.forward @s1 mb 0
    %g = pipe.send gradient @s1 -> @s0 mb 0 payload [tensor<4x8xf32>]
    pipe.wait %g
    pipe.update @s1
  }
}

// -----

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
pipe.placement @placed graph @model devices 2 {
  pipe.stage @s0 device 0 blocks ["l0"]
  pipe.stage @s1 device 1 blocks ["l1"]
}
// Wrong order: the backward of @s1 runs before its forward.
pipe.schedule @order placement @placed kind "hand" microbatches 1 {
  pipe.device 0 {
    pipe.forward @s0 mb 0
    %a = pipe.send activation @s0 -> @s1 mb 0 payload [tensor<4x8xf32>]
    %g = pipe.recv gradient @s1 -> @s0 mb 0 payload [tensor<4x8xf32>]
    pipe.wait %g
    pipe.backward @s0 mb 0
    pipe.wait %a
    pipe.update @s0
  }
  pipe.device 1 {
    %r = pipe.recv activation @s0 -> @s1 mb 0 payload [tensor<4x8xf32>]
    pipe.wait %r
    // expected-error @+1 {{schedule @order: device 1: pipe.backward @s1 mb 0 runs before the forward of @s1 for micro-batch 0}}
    pipe.backward @s1 mb 0
    pipe.forward @s1 mb 0
    %g = pipe.send gradient @s1 -> @s0 mb 0 payload [tensor<4x8xf32>]
    pipe.wait %g
    pipe.update @s1
  }
}

// -----

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
pipe.placement @placed graph @model devices 2 {
  pipe.stage @s0 device 0 blocks ["l0"]
  pipe.stage @s1 device 1 blocks ["l1"]
}
// Deadlock: device 0 waits for the gradient before it sends the
// activations that device 1 needs to produce it.
pipe.schedule @deadlock placement @placed kind "hand" microbatches 1 {
  pipe.device 0 {
    pipe.forward @s0 mb 0
    // expected-error @+1 {{schedule @deadlock: device 0: pipe.recv gradient @s1 -> @s0 mb 0 deadlocks: it can never run because its matching send is never issued (2 device(s) stuck)}}
    %g = pipe.recv gradient @s1 -> @s0 mb 0 payload [tensor<4x8xf32>]
    pipe.wait %g
    %a = pipe.send activation @s0 -> @s1 mb 0 payload [tensor<4x8xf32>]
    pipe.backward @s0 mb 0
    pipe.wait %a
    pipe.update @s0
  }
  pipe.device 1 {
    %r = pipe.recv activation @s0 -> @s1 mb 0 payload [tensor<4x8xf32>]
    pipe.wait %r
    pipe.forward @s1 mb 0
    pipe.backward @s1 mb 0
    %g = pipe.send gradient @s1 -> @s0 mb 0 payload [tensor<4x8xf32>]
    pipe.wait %g
    pipe.update @s1
  }
}

// -----

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
// Use after release: @s0's parameters are released before its backward.
pipe.schedule @released placement @one kind "hand" microbatches 1 {
  pipe.device 0 {
    %l0 = pipe.ps.load @s0
    %l1 = pipe.ps.load @s1
    pipe.wait %l0, %l1
    pipe.forward @s0 mb 0
    pipe.ps.release @s0
    pipe.forward @s1 mb 0
    pipe.backward @s1 mb 0
    %p1 = pipe.ps.push @s1
    %u1 = pipe.ps.update @s1
    pipe.ps.release @s1
    // expected-error @+1 {{schedule @released: device 0: pipe.backward @s0 mb 0 uses the parameters of @s0, which are not loaded (never loaded, or released)}}
    pipe.backward @s0 mb 0
    %p0 = pipe.ps.push @s0
    %u0 = pipe.ps.update @s0
    pipe.wait %p1, %u1, %p0, %u0
  }
}

// -----

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
// Offloaded activations used before they come back.
pipe.schedule @offloaded placement @one kind "hand" microbatches 1 {
  pipe.device 0 {
    pipe.forward @s0 mb 0
    %o = pipe.offload @s0 mb 0
    pipe.wait %o
    pipe.forward @s1 mb 0
    pipe.backward @s1 mb 0
    %p = pipe.prefetch @s0 mb 0
    // expected-error @+1 {{schedule @offloaded: device 0: pipe.backward @s0 mb 0 uses offloaded activations before waiting for their prefetch}}
    pipe.backward @s0 mb 0
    pipe.wait %p
    pipe.update @s0
    pipe.update @s1
  }
}
