// RUN: pipe-opt %s -split-input-file -verify-diagnostics --pipe-attach-loss
// Bad options fail on every module (FileCheck: the first is enough).
// RUN: not pipe-opt %s -split-input-file --pipe-attach-loss=kind=hinge 2>&1 | FileCheck %s --check-prefix=KIND
// RUN: not pipe-opt %s -split-input-file --pipe-attach-loss=reduction=none 2>&1 | FileCheck %s --check-prefix=RED
// RUN: not pipe-opt %s -split-input-file --pipe-attach-loss=func=missing 2>&1 | FileCheck %s --check-prefix=FUNC
// RUN: not pipe-opt %s -split-input-file "--pipe-attach-loss=func=scores result=1" 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: not pipe-opt %s -split-input-file --pipe-attach-loss=metrics=top5 2>&1 | FileCheck %s --check-prefix=METRIC
// RUN: not pipe-opt %s -split-input-file "--pipe-attach-loss=metrics=accuracy,accuracy" 2>&1 | FileCheck %s --check-prefix=TWICE
// RUN: not pipe-opt %s -split-input-file "--pipe-attach-loss=kind=mse metrics=accuracy" 2>&1 | FileCheck %s --check-prefix=MSE

// KIND: error: pipe-attach-loss: unknown kind 'hinge' (cross-entropy, mse or nll)
// RED: error: pipe-attach-loss: unknown reduction 'none' (mean or sum)
// FUNC: error: pipe-attach-loss: no function @missing with a body in the module
// RANGE: error: 'func.func' op pipe-attach-loss: result 1 is out of range: @scores has 1 results
// METRIC: error: pipe-attach-loss: unknown metric 'top5' (accuracy)
// TWICE: error: pipe-attach-loss: metric 'accuracy' named twice
// MSE: error: pipe-attach-loss: metric 'accuracy' needs class scores (cross-entropy or nll), not mse

// expected-error @+1 {{pipe-attach-loss: result 0 is out of range: @f has 0 results}}
func.func @f(%x: tensor<4x3xf32>) {
  return
}

// -----

// expected-error @+1 {{pipe-attach-loss: result 0 is 'tensor<4xi64>', not a tensor of floats}}
func.func @f(%x: tensor<4xi64>) -> tensor<4xi64> {
  return %x : tensor<4xi64>
}

// -----

// expected-error @+1 {{pipe-attach-loss: result 0 is 'f32', not a tensor of floats}}
func.func @f(%x: f32) -> f32 {
  return %x : f32
}

// -----

// expected-error @+1 {{pipe-attach-loss: cross-entropy needs class scores over the last dimension, but result 0 is 'tensor<f32>' (rank 0)}}
func.func @f(%x: tensor<f32>) -> tensor<f32> {
  return %x : tensor<f32>
}

// -----

// expected-error @+1 {{pipe-attach-loss: result 0 is 'tensor<?x3xf32>', which has no static shape}}
func.func @f(%x: tensor<?x3xf32>) -> tensor<?x3xf32> {
  return %x : tensor<?x3xf32>
}

// -----

// Every candidate is listed (up to eight), at the second one's location.
module {
  // expected-note @+1 {{the first is here}}
  func.func @a(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
    return %x : tensor<4x3xf32>
  }
  // expected-error @+1 {{pipe-attach-loss: 3 public functions (@a, @b, @c) could each be the model: name one with func=<function>, or make the others private}}
  func.func @b(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
    return %x : tensor<4x3xf32>
  }
  func.func @c(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
    return %x : tensor<4x3xf32>
  }
  func.func private @helper(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
    return %x : tensor<4x3xf32>
  }
}

// -----

// expected-error @+1 {{pipe-attach-loss: no public function with a body}}
module {
  func.func private @a(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
    return %x : tensor<4x3xf32>
  }
  func.func private @ext(tensor<4x3xf32>) -> tensor<4x3xf32>
}

// -----

// expected-error @+1 {{pipe-attach-loss: needs a function of one block, this one has 2}}
func.func @f(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  cf.br ^bb1
^bb1:
  return %x : tensor<4x3xf32>
}

// -----

// expected-error @+1 {{pipe-attach-loss: @f is called from elsewhere in the module; its signature cannot change}}
func.func @f(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  return %x : tensor<4x3xf32>
}
func.func private @caller(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %0 = func.call @f(%x) : (tensor<4x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @scores(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  return %x : tensor<4x3xf32>
}
