// RUN: pipe-opt %s -verify-diagnostics --pipe-verify-schedule=memory-limit=1000
// RUN: pipe-opt %s --pipe-verify-schedule=memory-limit=4000

// Each stage keeps 256 bytes of parameters (no device update state: the
// optimizer runs on the host) and each forward 512 saved bytes: GPipe's two
// micro-batches in flight need more than 1000 bytes on device 0.
pipe.param @w0 : tensor<8x8xf32>
pipe.param @w1 : tensor<8x8xf32>
pipe.block @layer params(%w: tensor<8x8xf32>) (%x: tensor<4x8xf32>)
    -> tensor<4x8xf32> attributes {cost = #pipe.cost<forward_flops = 1024,
        backward_input_flops = 1024, backward_weight_flops = 1024,
        param_bytes = 256, saved_bytes = 512, output_bytes = 128>} {
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
pipe.schedule @gpipe placement @placed kind "gpipe" microbatches 2 {
  pipe.device 0 {
    pipe.forward @s0 mb 0
    %a0 = pipe.send activation @s0 -> @s1 mb 0 payload [tensor<4x8xf32>]
    // expected-error @+1 {{schedule @gpipe: device 0: pipe.forward @s0 mb 1 needs 1280 bytes of device memory, more than the device's 1000 bytes}}
    pipe.forward @s0 mb 1
    %a1 = pipe.send activation @s0 -> @s1 mb 1 payload [tensor<4x8xf32>]
    %g1 = pipe.recv gradient @s1 -> @s0 mb 1 payload [tensor<4x8xf32>]
    pipe.wait %g1
    pipe.backward @s0 mb 1
    %g0 = pipe.recv gradient @s1 -> @s0 mb 0 payload [tensor<4x8xf32>]
    pipe.wait %g0
    pipe.backward @s0 mb 0
    pipe.wait %a0, %a1
    %p = pipe.ps.push @s0
    %u = pipe.ps.update @s0
    pipe.wait %p, %u
  }
  pipe.device 1 {
    %r0 = pipe.recv activation @s0 -> @s1 mb 0 payload [tensor<4x8xf32>]
    pipe.wait %r0
    pipe.forward @s1 mb 0
    %r1 = pipe.recv activation @s0 -> @s1 mb 1 payload [tensor<4x8xf32>]
    pipe.wait %r1
    // expected-error @+1 {{schedule @gpipe: device 1: pipe.forward @s1 mb 1 needs 1280 bytes of device memory, more than the device's 1000 bytes}}
    pipe.forward @s1 mb 1
    pipe.backward @s1 mb 1
    %g1 = pipe.send gradient @s1 -> @s0 mb 1 payload [tensor<4x8xf32>]
    pipe.backward @s1 mb 0
    %g0 = pipe.send gradient @s1 -> @s0 mb 0 payload [tensor<4x8xf32>]
    pipe.wait %g0, %g1
    %p = pipe.ps.push @s1
    %u = pipe.ps.update @s1
    pipe.wait %p, %u
  }
}
