// RUN: pipe-opt %s -split-input-file --pipe-verify-schedule -verify-diagnostics

// Weight prediction (pipe.forward ... predict d): the forward looks ahead by
// the d updates of its stage that come before its backward, which computes
// on the latest weights. One stage on one device, two steps of one
// micro-batch: the forward of step 1 runs before step 0's update.
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
// The well-formed case.
pipe.schedule @ok placement @one kind "pipedream-async" microbatches 1 steps 2 weight_versions {
  pipe.device 0 {
    pipe.forward @s0 mb 0 version 0
    pipe.forward @s0 mb 0 step 1 version 0 predict 1
    pipe.backward @s0 mb 0 version 0
    pipe.update @s0
    pipe.backward @s0 mb 0 step 1 version 1
    pipe.update @s0 step 1
  }
}

// -----

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
// Looking further ahead than the updates its backward sees.
pipe.schedule @far placement @one kind "pipedream-async" microbatches 1 steps 2 weight_versions {
  pipe.device 0 {
    pipe.forward @s0 mb 0 version 0
    pipe.forward @s0 mb 0 step 1 version 0 predict 2
    pipe.backward @s0 mb 0 version 0
    pipe.update @s0
    // expected-error @below {{follows a forward that predicted 2 update(s) of @s0 ahead, but 1 came between them}}
    pipe.backward @s0 mb 0 step 1 version 1
    pipe.update @s0 step 1
  }
}

// -----

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
// A predicted forward's backward on the stashed version.
pipe.schedule @stashed placement @one kind "pipedream-async" microbatches 1 steps 2 weight_versions {
  pipe.device 0 {
    pipe.forward @s0 mb 0 version 0
    pipe.forward @s0 mb 0 step 1 version 0 predict 1
    pipe.backward @s0 mb 0 version 0
    pipe.update @s0
    // expected-error @below {{computes on weight version 0 although its forward predicted the weights: a predicted forward's backward uses the latest (1)}}
    pipe.backward @s0 mb 0 step 1 version 0
    pipe.update @s0 step 1
  }
}

// -----

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
// Nothing to predict in evaluation.
pipe.schedule @eval placement @one kind "gpipe" microbatches 1 forward_only {
  pipe.device 0 {
    // expected-error @below {{predicts weights in a forward-only schedule, where no update follows}}
    pipe.forward @s0 mb 0 predict 1
  }
}

// -----

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
// The optimizer state of a parameter-server stage is on the host.
pipe.schedule @ps placement @one kind "l2l" microbatches 1 ps_stages [@s0] {
  pipe.device 0 {
    %0 = pipe.ps.load @s0
    pipe.wait %0
    // expected-error @below {{predicts the weights of @s0, a parameter-server stage (its optimizer state is on the host)}}
    pipe.forward @s0 mb 0 predict 1
    pipe.backward @s0 mb 0
    %1 = pipe.ps.push @s0
    %2 = pipe.ps.update @s0
    pipe.ps.release @s0
    pipe.wait %2, %1
  }
}

// -----

// predict is a positive count.
pipe.schedule @zero placement @one kind "pipedream-async" microbatches 1 {
  pipe.device 0 {
    // expected-error @below {{attribute 'predict' failed to satisfy constraint}}
    pipe.forward @s0 mb 0 predict 0
  }
}
