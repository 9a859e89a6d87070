// RUN: pipe-opt %s -split-input-file -verify-diagnostics --pipe-form-blocks=granularity=layer
// RUN: not pipe-opt %s -split-input-file --pipe-form-blocks=granularity=fine 2>&1 | FileCheck %s --check-prefix=GRAN
// RUN: not pipe-opt %s -split-input-file --pipe-form-blocks="granularity=coarse num-blocks=0" 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not pipe-opt %s -split-input-file --pipe-form-blocks="func=nosuch" 2>&1 | FileCheck %s --check-prefix=NOFUNC
// RUN: pipe-opt %S/Inputs/tiny-lm.mlir --pipe-form-blocks="granularity=coarse num-blocks=40" 2>&1 | FileCheck %s --check-prefix=FEW
// RUN: not pipe-opt %S/Inputs/dynamic.mlir --pipe-form-blocks="granularity=coarse" 2>&1 | FileCheck %s --check-prefix=DYN

// GRAN: error: pipe-form-blocks: unknown granularity 'fine' (expected op, layer or coarse)
// ZERO: error: pipe-form-blocks: granularity=coarse needs num-blocks > 0, got 0
// NOFUNC: error: pipe-form-blocks: found no function @nosuch with a body; set func=<name>
// FEW: warning: pipe-form-blocks: only 14 op-level blocks to merge into 40; forming 14
// FEW: pipe.run "part13"
// DYN: error: 'linalg.generic' op has an operand of dynamic type 'tensor<?x4xf32>'; the cost model needs static shapes

// expected-error @+1 {{pipe-form-blocks: found no function @forward with a body}}
module {
  pipe.param @w : tensor<4xf32>
}

// -----

// expected-error @+1 {{expects @forward to have a single basic block}}
func.func @forward(%x: tensor<4xf32>, %c: i1) -> tensor<4xf32> {
  cf.cond_br %c, ^a, ^b
^a:
  return %x : tensor<4xf32>
^b:
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{is referenced elsewhere; it cannot be replaced by a graph}}
func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
func.func @caller(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-note @+1 {{used here}}
  %y = func.call @forward(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Nothing repeats: one block, with a warning.
pipe.param @w : tensor<4x4xf32>
// expected-warning @+1 {{found no repeated layer structure}}
func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<2x4xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%empty : tensor<2x4xf32>) -> tensor<2x4xf32>
  %w = pipe.get_param @w : tensor<4x4xf32>
  %y = linalg.matmul ins(%x, %w : tensor<2x4xf32>, tensor<4x4xf32>) outs(%acc : tensor<2x4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// Hostile inputs: each is either formed or reported with a location, never
// a crash. A declaration is not a model.
// expected-error @+1 {{pipe-form-blocks: found no function @forward with a body}}
module {
  func.func private @forward(tensor<4xf32>) -> tensor<4xf32>
}

// -----

// Structured control flow is one op (an anchor); a parameter read inside
// its region is bound like any other.
pipe.param @w : tensor<4xf32>
// expected-warning @+1 {{found no repeated layer structure}}
func.func @forward(%a: tensor<4xf32>, %c: i1) -> tensor<4xf32> {
  %r = scf.if %c -> tensor<4xf32> {
    %w = pipe.get_param @w : tensor<4xf32>
    %e = tensor.empty() : tensor<4xf32>
    %s = linalg.add ins(%a, %w : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    scf.yield %s : tensor<4xf32>
  } else {
    scf.yield %a : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

// An op without results (a side effect) and 0-d tensors.
pipe.param @s : tensor<f32>
// expected-warning @+1 {{found no repeated layer structure}}
func.func @forward(%a: tensor<f32>, %c: i1) -> tensor<f32> {
  cf.assert %c, "must hold"
  %s = pipe.get_param @s : tensor<f32>
  %e = tensor.empty() : tensor<f32>
  %r = linalg.mul ins(%a, %s : tensor<f32>, tensor<f32>) outs(%e : tensor<f32>) -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// Nothing but a constant and a parameter returned as they are: no unit at
// all, so they come from the `results` block.
pipe.param @w : tensor<4xf32>
func.func @forward(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %c = arith.constant dense<1.0> : tensor<4xf32>
  %w = pipe.get_param @w : tensor<4xf32>
  return %c, %w, %a : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// No results at all.
func.func @forward(%a: tensor<4xf32>) {
  return
}
