// The schedule checker's rules for pipe.reduce_bucket (data parallelism):
// a bucket starts once every backward writing its gradients ran, the
// update of a stage reading them comes after the bucket's wait, and no
// gradient is reduced twice in a step.
// RUN: pipe-opt %s -split-input-file -verify-diagnostics --pipe-verify-schedule

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
pipe.placement @placed graph @model devices 1 replicas 2 {
  pipe.stage @s0 device 0 blocks ["l0"]
  pipe.stage @s1 device 0 blocks ["l1"]
}
// A bucket started after the last backward writing its gradients, and
// waited on before the update: valid (no diagnostic).
pipe.schedule @hand placement @placed kind "hand" microbatches 1 {
  pipe.device 0 {
    pipe.forward @s0 mb 0
    pipe.forward @s1 mb 0
    pipe.backward @s1 mb 0
    %b1 = pipe.reduce_bucket [@w1]
    pipe.backward @s0 mb 0
    %b0 = pipe.reduce_bucket [@w0]
    pipe.wait %b0, %b1
    pipe.update @s0
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
pipe.placement @placed graph @model devices 1 replicas 2 {
  pipe.stage @s0 device 0 blocks ["l0"]
  pipe.stage @s1 device 0 blocks ["l1"]
}
// Started before the backward that writes the gradient: the replicas
// would sum a partial gradient.
pipe.schedule @hand placement @placed kind "hand" microbatches 1 {
  pipe.device 0 {
    pipe.forward @s0 mb 0
    pipe.forward @s1 mb 0
    pipe.backward @s1 mb 0
    // expected-error @+1 {{schedule @hand: device 0: pipe.reduce_bucket [@w0, @w1] starts before the backward of @s0 for micro-batch 0 writes the gradient of @w0}}
    %b = pipe.reduce_bucket [@w0, @w1]
    pipe.backward @s0 mb 0
    pipe.wait %b
    pipe.update @s0
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
pipe.placement @placed graph @model devices 1 replicas 2 {
  pipe.stage @s0 device 0 blocks ["l0"]
  pipe.stage @s1 device 0 blocks ["l1"]
}
// The update reads the gradient before the bucket's wait.
pipe.schedule @hand placement @placed kind "hand" microbatches 1 {
  pipe.device 0 {
    pipe.forward @s0 mb 0
    pipe.forward @s1 mb 0
    pipe.backward @s1 mb 0
    pipe.backward @s0 mb 0
    %b = pipe.reduce_bucket [@w0, @w1]
    // expected-error @+1 {{schedule @hand: device 0: pipe.update @s1 uses the gradient of shared parameter @w1 before it is reduced (by pipe.reduce_grad, or by the wait of its pipe.reduce_bucket)}}
    pipe.update @s1
    pipe.wait %b
    pipe.update @s0
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
pipe.placement @placed graph @model devices 1 replicas 2 {
  pipe.stage @s0 device 0 blocks ["l0"]
  pipe.stage @s1 device 0 blocks ["l1"]
}
// The same gradient reduced twice in one step (a bucket and a
// reduce_grad): it would be summed over the replicas twice.
pipe.schedule @hand placement @placed kind "hand" microbatches 1 {
  pipe.device 0 {
    pipe.forward @s0 mb 0
    pipe.forward @s1 mb 0
    pipe.backward @s1 mb 0
    pipe.backward @s0 mb 0
    %b = pipe.reduce_bucket [@w0, @w1]
    // expected-error @+1 {{schedule @hand: device 0: pipe.reduce_grad @w1 reduces the gradient of @w1 a second time in step 0, which would add it up again}}
    pipe.reduce_grad @w1
    pipe.wait %b
    pipe.update @s0
    pipe.update @s1
  }
}
