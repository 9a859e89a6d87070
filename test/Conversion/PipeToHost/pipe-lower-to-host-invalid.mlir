// Every error of --pipe-lower-to-host at its location. The weights option is
// on so that the parameter values are looked at too.
// RUN: pipe-opt %s -split-input-file -verify-diagnostics --pipe-lower-to-host=weights=%t.safetensors -o /dev/null

// No schedule: nothing says how to run the graph (reported at the graph).
pipe.param @w : tensor<4x4xf32> = dense<1.0>
pipe.block @id params(%w: tensor<4x4xf32>) (%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  pipe.return %x : tensor<4x4xf32>
}
// expected-error@+1 {{--pipe-lower-to-host needs a pipe.schedule; run --pipe-schedule first}}
pipe.graph @g(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %y = pipe.run "a" @id(%x) params [@w] : (tensor<4x4xf32>) -> tensor<4x4xf32>
  pipe.return %y : tensor<4x4xf32>
}

// -----

// Not even a graph: the error is on the module.
// expected-error@+1 {{--pipe-lower-to-host needs a pipe.schedule; run --pipe-schedule first}}
module {
  pipe.param @w : tensor<4x4xf32> = dense<1.0>
}

// -----

// Two schedules over two different graphs: one program runs one graph.
pipe.block @id (%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  pipe.return %x : tensor<4x4xf32>
}
pipe.graph @g(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %y = pipe.run "a" @id(%x) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  pipe.return %y : tensor<4x4xf32>
}
pipe.graph @h(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %y = pipe.run "b" @id(%x) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  pipe.return %y : tensor<4x4xf32>
}
pipe.placement @pg graph @g devices 1 {
  pipe.stage @s0 device 0 blocks ["a"]
}
pipe.placement @ph graph @h devices 1 {
  pipe.stage @t0 device 0 blocks ["b"]
}
pipe.schedule @xg placement @pg kind "gpipe" microbatches 1 forward_only {
  pipe.device 0 {
    pipe.forward @s0 mb 0
  }
}
// expected-error@+1 {{'pipe.schedule' op places graph @h, but an earlier schedule places @g; one program runs one graph}}
pipe.schedule @xh placement @ph kind "gpipe" microbatches 1 forward_only {
  pipe.device 0 {
    pipe.forward @t0 mb 0
  }
}

// -----

// Two placements of the same graph that differ: the schedules of one
// program share their stages.
pipe.block @id (%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  pipe.return %x : tensor<4x4xf32>
}
pipe.graph @g(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %y = pipe.run "a" @id(%x) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %z = pipe.run "b" @id(%y) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  pipe.return %z : tensor<4x4xf32>
}
pipe.placement @one graph @g devices 1 {
  pipe.stage @s0 device 0 blocks ["a", "b"]
}
pipe.placement @two graph @g devices 1 {
  pipe.stage @s0 device 0 blocks ["a"]
  pipe.stage @s1 device 0 blocks ["b"]
}
pipe.schedule @x1 placement @one kind "gpipe" microbatches 1 forward_only {
  pipe.device 0 {
    pipe.forward @s0 mb 0
  }
}
// expected-error@+1 {{'pipe.schedule' op uses placement @two, which differs from @one; the schedules of one program share their stages}}
pipe.schedule @x2 placement @two kind "gpipe" microbatches 1 forward_only {
  pipe.device 0 {
    pipe.forward @s0 mb 0
    pipe.forward @s1 mb 0
  }
}

// -----

// A training schedule over a graph that was not differentiated.
pipe.param @w : tensor<4x4xf32> = dense<1.0>
pipe.block @id params(%w: tensor<4x4xf32>) (%x: tensor<4x4xf32>) -> tensor<f32> {
  %c = arith.constant dense<0.0> : tensor<f32>
  pipe.return %c : tensor<f32>
}
// expected-error@+1 {{'pipe.graph' op is scheduled for training but has no loss marked with pipe.loss_seed; run --pipe-differentiate first}}
pipe.graph @g(%x: tensor<4x4xf32>) -> tensor<f32> {
  %y = pipe.run "a" @id(%x) params [@w] : (tensor<4x4xf32>) -> tensor<f32>
  pipe.return %y : tensor<f32>
}
pipe.placement @p graph @g devices 1 {
  pipe.stage @s0 device 0 blocks ["a"]
}
pipe.schedule @x placement @p kind "gpipe" microbatches 1 {
  pipe.device 0 {
    pipe.forward @s0 mb 0
    pipe.backward @s0 mb 0
    pipe.update @s0
  }
}

// -----

// f16 tensors: the runtime holds f32, f64, i64, i32 and i1 only.
// expected-error@+1 {{'pipe.param' op uses 'tensor<4x4xf16>', which the runtime cannot hold (static tensors of f32, f64, i64, i32 or i1 only)}}
pipe.param @w : tensor<4x4xf16> = dense<1.0>
pipe.block @id params(%w: tensor<4x4xf16>) (%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  pipe.return %x : tensor<4x4xf32>
}
pipe.graph @g(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %y = pipe.run "a" @id(%x) params [@w] : (tensor<4x4xf32>) -> tensor<4x4xf32>
  pipe.return %y : tensor<4x4xf32>
}
pipe.placement @p graph @g devices 1 {
  pipe.stage @s0 device 0 blocks ["a"]
}
pipe.schedule @x placement @p kind "gpipe" microbatches 1 forward_only {
  pipe.device 0 {
    pipe.forward @s0 mb 0
  }
}

// -----

// A bf16 graph input.
pipe.block @id (%x: tensor<4x4xbf16>) -> tensor<4x4xbf16> {
  pipe.return %x : tensor<4x4xbf16>
}
// expected-error@+1 {{'pipe.graph' op uses 'tensor<4x4xbf16>', which the runtime cannot hold}}
pipe.graph @g(%x: tensor<4x4xbf16>) -> tensor<4x4xbf16> {
  %y = pipe.run "a" @id(%x) : (tensor<4x4xbf16>) -> tensor<4x4xbf16>
  pipe.return %y : tensor<4x4xbf16>
}
pipe.placement @p graph @g devices 1 {
  pipe.stage @s0 device 0 blocks ["a"]
}
pipe.schedule @x placement @p kind "gpipe" microbatches 1 forward_only {
  pipe.device 0 {
    pipe.forward @s0 mb 0
  }
}

// -----

// A dynamically shaped block result.
pipe.block @dyn (%x: tensor<4x4xf32>) -> tensor<?x4xf32> {
  %d = tensor.cast %x : tensor<4x4xf32> to tensor<?x4xf32>
  pipe.return %d : tensor<?x4xf32>
}
pipe.graph @g(%x: tensor<4x4xf32>) -> tensor<?x4xf32> {
  // expected-error@+1 {{'pipe.run' op uses 'tensor<?x4xf32>', which the runtime cannot hold}}
  %y = pipe.run "a" @dyn(%x) : (tensor<4x4xf32>) -> tensor<?x4xf32>
  pipe.return %y : tensor<?x4xf32>
}
pipe.placement @p graph @g devices 1 {
  pipe.stage @s0 device 0 blocks ["a"]
}
pipe.schedule @x placement @p kind "gpipe" microbatches 1 forward_only {
  pipe.device 0 {
    pipe.forward @s0 mb 0
  }
}

// -----

// weights=...: a param without an initial value cannot be written.
// expected-error@+1 {{'pipe.param' op has no initial value; lift it with values (or bind it with --pipe-load-params) before writing the weights file}}
pipe.param @w : tensor<4x4xf32>
pipe.block @id params(%w: tensor<4x4xf32>) (%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  pipe.return %x : tensor<4x4xf32>
}
pipe.graph @g(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %y = pipe.run "a" @id(%x) params [@w] : (tensor<4x4xf32>) -> tensor<4x4xf32>
  pipe.return %y : tensor<4x4xf32>
}
pipe.placement @p graph @g devices 1 {
  pipe.stage @s0 device 0 blocks ["a"]
}
pipe.schedule @x placement @p kind "gpipe" microbatches 1 forward_only {
  pipe.device 0 {
    pipe.forward @s0 mb 0
  }
}

// -----

// A forward block naming a backward block that does not exist.
pipe.param @w : tensor<4x4xf32> = dense<1.0>
// expected-error@+1 {{'pipe.block' op backward block @id_bwd_weight is missing}}
pipe.block @id params(%w: tensor<4x4xf32>) (%x: tensor<4x4xf32>) -> tensor<f32>
    attributes {pipe.backward_weight = @id_bwd_weight, pipe.saved_results = 0 : i64} {
  %c = arith.constant dense<0.0> : tensor<f32>
  pipe.return %c : tensor<f32>
}
pipe.graph @g(%x: tensor<4x4xf32>) -> (tensor<f32> {pipe.loss_seed = 1.0 : f32}) {
  %y = pipe.run "a" @id(%x) params [@w] : (tensor<4x4xf32>) -> tensor<f32>
  pipe.return %y : tensor<f32>
}
pipe.placement @p graph @g devices 1 {
  pipe.stage @s0 device 0 blocks ["a"]
}
pipe.schedule @x placement @p kind "gpipe" microbatches 1 {
  pipe.device 0 {
    pipe.forward @s0 mb 0
    pipe.backward @s0 mb 0
    pipe.update @s0
  }
}

// -----

// Names travel in the space-separated manifest: no whitespace.
pipe.block @"my block" (%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  pipe.return %x : tensor<4x4xf32>
}
pipe.graph @g(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error@+1 {{'pipe.run' op block name 'my block' cannot be exported}}
  %y = pipe.run "a" @"my block"(%x) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  pipe.return %y : tensor<4x4xf32>
}
pipe.placement @p graph @g devices 1 {
  pipe.stage @s0 device 0 blocks ["a"]
}
pipe.schedule @x placement @p kind "gpipe" microbatches 1 forward_only {
  pipe.device 0 {
    pipe.forward @s0 mb 0
  }
}

// -----

// A task metric's name travels in the manifest and the trainer's JSON log:
// letters, digits, '_', '-' and '.' only.
pipe.block @head (%x: tensor<4xf32>, %t: tensor<2xi64>) -> (tensor<f32>, tensor<2xi64>) {
  %c = arith.constant dense<0.0> : tensor<f32>
  pipe.return %c, %t : tensor<f32>, tensor<2xi64>
}
// expected-error@+1 {{'pipe.graph' op metric name 'acc"x' of result 1 cannot be exported (letters, digits, '_', '-' and '.' only)}}
pipe.graph @g(%x: tensor<4xf32>, %t: tensor<2xi64>) -> (tensor<f32> {pipe.loss_seed = 1.0 : f32}, tensor<2xi64> {pipe.metric = "acc\"x"}) {
  %l, %m = pipe.run "a" @head(%x, %t) : (tensor<4xf32>, tensor<2xi64>) -> (tensor<f32>, tensor<2xi64>)
  pipe.return %l, %m : tensor<f32>, tensor<2xi64>
}
pipe.placement @p graph @g devices 1 {
  pipe.stage @s0 device 0 blocks ["a"]
}
pipe.schedule @x placement @p kind "gpipe" microbatches 1 forward_only {
  pipe.device 0 {
    pipe.forward @s0 mb 0
  }
}

// -----

// weights=...: an external param whose file is missing.
// expected-error@+1 {{'pipe.param' op cannot read its weights: }}
pipe.param @w : tensor<4x4xf32> external("no-such-file.safetensors", "w")
pipe.block @id params(%w: tensor<4x4xf32>) (%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  pipe.return %x : tensor<4x4xf32>
}
pipe.graph @g(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %y = pipe.run "a" @id(%x) params [@w] : (tensor<4x4xf32>) -> tensor<4x4xf32>
  pipe.return %y : tensor<4x4xf32>
}
pipe.placement @p graph @g devices 1 {
  pipe.stage @s0 device 0 blocks ["a"]
}
pipe.schedule @x placement @p kind "gpipe" microbatches 1 forward_only {
  pipe.device 0 {
    pipe.forward @s0 mb 0
  }
}
