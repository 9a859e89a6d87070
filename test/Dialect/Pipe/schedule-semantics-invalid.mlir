// One case per verifier rule of the schedule semantics the IR states
// instead of schedule names (PipeOps.cpp): a placement's micro-batch and
// replica counts, a schedule's weight versions and parameter-server stages.
// RUN: pipe-opt %s -split-input-file -verify-diagnostics

pipe.param @w : tensor<4xf32>
pipe.block @lin params(%w: tensor<4xf32>) (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pipe.run "a" @lin(%x) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  %1 = pipe.run "b" @lin(%0) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %1 : tensor<4xf32>
}
// expected-error @+1 {{'pipe.placement' op attribute 'replicas' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
pipe.placement @p graph @g devices 1 replicas 0 {
  pipe.stage @s0 device 0 blocks ["a", "b"]
}

// -----

pipe.param @w : tensor<4xf32>
pipe.block @lin params(%w: tensor<4xf32>) (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pipe.run "a" @lin(%x) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  %1 = pipe.run "b" @lin(%0) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %1 : tensor<4xf32>
}
// expected-error @+1 {{'pipe.placement' op attribute 'microbatches' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
pipe.placement @p graph @g devices 1 microbatches 0 {
  pipe.stage @s0 device 0 blocks ["a", "b"]
}

// -----

pipe.param @w : tensor<4xf32>
pipe.block @lin params(%w: tensor<4xf32>) (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pipe.run "a" @lin(%x) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  %1 = pipe.run "b" @lin(%0) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %1 : tensor<4xf32>
}
// expected-note @+1 {{placement defined here}}
pipe.placement @p graph @g devices 1 microbatches 2 {
  pipe.stage @s0 device 0 blocks ["a"]
  pipe.stage @s1 device 0 blocks ["b"]
}
// expected-error @+1 {{'pipe.schedule' op has 4 micro-batches, but placement @p was partitioned for 2}}
pipe.schedule @s placement @p kind "gpipe" microbatches 4 {
  pipe.device 0 {
  }
}

// -----

pipe.param @w : tensor<4xf32>
pipe.block @lin params(%w: tensor<4xf32>) (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pipe.run "a" @lin(%x) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  %1 = pipe.run "b" @lin(%0) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %1 : tensor<4xf32>
}
pipe.placement @p graph @g devices 1 microbatches 2 {
  pipe.stage @s0 device 0 blocks ["a"]
  pipe.stage @s1 device 0 blocks ["b"]
}
// expected-error @+1 {{'pipe.schedule' op keeps weight versions, but is forward_only and never updates weights}}
pipe.schedule @s placement @p kind "x" microbatches 2 forward_only weight_versions {
  pipe.device 0 {
  }
}

// -----

pipe.param @w : tensor<4xf32>
pipe.block @lin params(%w: tensor<4xf32>) (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pipe.run "a" @lin(%x) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  %1 = pipe.run "b" @lin(%0) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %1 : tensor<4xf32>
}
pipe.placement @p graph @g devices 1 microbatches 2 {
  pipe.stage @s0 device 0 blocks ["a"]
  pipe.stage @s1 device 0 blocks ["b"]
}
// expected-error @+1 {{'pipe.schedule' op lists parameter-server stage @s0 twice}}
pipe.schedule @s placement @p kind "x" microbatches 2 ps_stages [@s0, @s0] {
  pipe.device 0 {
  }
}

// -----

pipe.param @w : tensor<4xf32>
pipe.block @lin params(%w: tensor<4xf32>) (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pipe.run "a" @lin(%x) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  %1 = pipe.run "b" @lin(%0) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %1 : tensor<4xf32>
}
pipe.placement @p graph @g devices 1 microbatches 2 {
  pipe.stage @s0 device 0 blocks ["a"]
  pipe.stage @s1 device 0 blocks ["b"]
}
// expected-error @+1 {{'pipe.schedule' op lists parameter-server stage @s7, which placement @p does not have}}
pipe.schedule @s placement @p kind "x" microbatches 2 ps_stages [@s0, @s7] {
  pipe.device 0 {
  }
}

// -----

pipe.param @w : tensor<4xf32>
pipe.block @lin params(%w: tensor<4xf32>) (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pipe.run "a" @lin(%x) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  %1 = pipe.run "b" @lin(%0) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %1 : tensor<4xf32>
}
pipe.placement @p graph @g devices 1 microbatches 2 {
  pipe.stage @s0 device 0 blocks ["a"]
  pipe.stage @s1 device 0 blocks ["b"]
}
pipe.schedule @s placement @p kind "x" microbatches 2 ps_stages [@s0] {
  pipe.device 0 {
    // expected-error @+1 {{'pipe.ps.load' op serves stage @s1 from the parameter server, but schedule @s does not list it in ps_stages}}
    %t = pipe.ps.load @s1
    pipe.wait %t
  }
}
