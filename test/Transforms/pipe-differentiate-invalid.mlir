// RUN: pipe-opt %s -split-input-file -verify-diagnostics --pipe-differentiate

// A scalar op without a derivative rule inside a linalg.generic body.
pipe.block @atan (%x: tensor<4xf32>) -> tensor<f32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>],
                       iterator_types = ["reduction"]}
      ins(%x : tensor<4xf32>) outs(%f : tensor<f32>) {
  ^bb0(%in: f32, %out: f32):
    // expected-error @+1 {{no derivative rule for 'math.atan'}}
    %a = math.atan %in : f32
    %r = arith.addf %out, %a : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  pipe.return %s : tensor<f32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<f32> {
  %l = pipe.run "a" @atan(%x) : (tensor<4xf32>) -> tensor<f32>
  pipe.return %l : tensor<f32>
}

// -----

// A product reduction has no rule (only sum, max and min combiners).
pipe.block @prod (%x: tensor<4xf32>) -> tensor<f32> {
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%one : f32) outs(%e : tensor<f32>) -> tensor<f32>
  // expected-error @+1 {{no derivative rule for this reduction: float result #0 must yield arith.addf, arith.maximumf/maxnumf or arith.minimumf/minnumf of its accumulator and a value}}
  %s = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>],
                       iterator_types = ["reduction"]}
      ins(%x : tensor<4xf32>) outs(%f : tensor<f32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.mulf %out, %in : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  pipe.return %s : tensor<f32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<f32> {
  %l = pipe.run "p" @prod(%x) : (tensor<4xf32>) -> tensor<f32>
  pipe.return %l : tensor<f32>
}

// -----

// A tensor-level op without a rule.
pipe.param @w : tensor<4xf32>
pipe.block @rev params(%w: tensor<4xf32>) () -> tensor<4xf32> {
  %c = arith.constant 1 : index
  %e = tensor.empty() : tensor<4xf32>
  // expected-error @+1 {{no derivative rule for 'scf.for'}}
  %r = scf.for %i = %c to %c step %c iter_args(%acc = %w) -> (tensor<4xf32>) {
    scf.yield %acc : tensor<4xf32>
  }
  pipe.return %r : tensor<4xf32>
}
pipe.block @first (%x: tensor<4xf32>) -> tensor<1xf32> {
  %s = tensor.extract_slice %x[0] [1] [1] : tensor<4xf32> to tensor<1xf32>
  pipe.return %s : tensor<1xf32>
}
pipe.graph @g() -> tensor<1xf32> {
  %x = pipe.run "r" @rev() params [@w] : () -> tensor<4xf32>
  %l = pipe.run "f" @first(%x) : (tensor<4xf32>) -> tensor<1xf32>
  pipe.return %l : tensor<1xf32>
}

// -----

// The graph must return a scalar loss.
pipe.block @id (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
// expected-error @+1 {{must return a scalar float loss (a one-element tensor) first to be differentiated; an inference function returning logits or activations gets one from --pipe-attach-loss (pipe-train --loss)}}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = pipe.run "i" @id(%x) : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %y : tensor<4xf32>
}

// -----

// After the loss, only task metrics: tensor<2xi64> counts marked pipe.metric.
pipe.block @sum (%x: tensor<4xf32>) -> tensor<f32> {
  %z = arith.constant dense<0.0> : tensor<f32>
  %s = linalg.reduce ins(%x : tensor<4xf32>) outs(%z : tensor<f32>) dimensions = [0]
    (%a: f32, %b: f32) {
      %t = arith.addf %a, %b : f32
      linalg.yield %t : f32
    }
  pipe.return %s : tensor<f32>
}
// expected-error @+1 {{result 1 ('tensor<4xf32>') is not a task metric: after the loss, a graph returns only tensor<2xi64> counts marked pipe.metric (--pipe-attach-loss metrics=)}}
pipe.graph @g(%x: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>) {
  %l = pipe.run "s" @sum(%x) : (tensor<4xf32>) -> tensor<f32>
  pipe.return %l, %x : tensor<f32>, tensor<4xf32>
}

// -----

// An unmarked tensor<2xi64> is not a metric either.
pipe.block @sum (%x: tensor<4xf32>) -> tensor<f32> {
  %z = arith.constant dense<0.0> : tensor<f32>
  %s = linalg.reduce ins(%x : tensor<4xf32>) outs(%z : tensor<f32>) dimensions = [0]
    (%a: f32, %b: f32) {
      %t = arith.addf %a, %b : f32
      linalg.yield %t : f32
    }
  pipe.return %s : tensor<f32>
}
// expected-error @+1 {{result 1 ('tensor<2xi64>') is not a task metric}}
pipe.graph @g(%x: tensor<4xf32>, %c: tensor<2xi64>) -> (tensor<f32>, tensor<2xi64>) {
  %l = pipe.run "s" @sum(%x) : (tensor<4xf32>) -> tensor<f32>
  pipe.return %l, %c : tensor<f32>, tensor<2xi64>
}

// -----

// A bad per-block policy.
// expected-error @+1 {{has pipe.recompute = "everything"; expected "save-all", "save-inputs" or "recompute"}}
pipe.block @id (%x: tensor<1xf32>) -> tensor<1xf32> attributes {pipe.recompute = "everything"} {
  pipe.return %x : tensor<1xf32>
}
pipe.graph @g(%x: tensor<1xf32>) -> tensor<1xf32> {
  %y = pipe.run "i" @id(%x) : (tensor<1xf32>) -> tensor<1xf32>
  pipe.return %y : tensor<1xf32>
}
