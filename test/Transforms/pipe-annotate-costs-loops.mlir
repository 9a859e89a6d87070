// RUN: pipe-opt %s -split-input-file -verify-diagnostics --pipe-annotate-costs | FileCheck %s
// RUN: pipe-opt %s -split-input-file -verify-diagnostics --pipe-annotate-costs=transcendental-flops=10 | FileCheck %s --check-prefix=TRANS

// Ops inside a loop with constant bounds count once per iteration, nested
// loops multiply: 4 adds x 3 outer x 2 inner iterations = 24 FLOPs, plus 4
// for the add after the loops.
// CHECK-LABEL: pipe.block @loops
// CHECK-SAME: forward_flops = 28,
// TRANS-LABEL: pipe.block @loops
// TRANS-SAME: forward_flops = 28,
pipe.block @loops params(%w: tensor<4xf32>) (%a: tensor<4xf32>) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%acc = %a) -> tensor<4xf32> {
    %in = scf.for %j = %c0 to %c2 step %c1 iter_args(%acc2 = %acc) -> tensor<4xf32> {
      %e = tensor.empty() : tensor<4xf32>
      %s = linalg.add ins(%acc2, %w : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
      scf.yield %s : tensor<4xf32>
    }
    scf.yield %in : tensor<4xf32>
  }
  %e = tensor.empty() : tensor<4xf32>
  %o = linalg.add ins(%r, %w : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  pipe.return %o : tensor<4xf32>
}

// -----

// A loop whose trip count is not a constant cannot be costed.
pipe.block @dynamic params(%w: tensor<4xf32>) (%a: tensor<4xf32>, %n: index) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{'scf.for' op has no static trip count; the cost model needs loops with constant bounds}}
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %a) -> tensor<4xf32> {
    %e = tensor.empty() : tensor<4xf32>
    %s = linalg.add ins(%acc, %w : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    scf.yield %s : tensor<4xf32>
  }
  pipe.return %r : tensor<4xf32>
}

// -----

// transcendental-flops sets the cost of one exp: 4 elements x 1 (default)
// or x 10.
// CHECK-LABEL: pipe.block @exp
// CHECK-SAME: forward_flops = 4,
// TRANS-LABEL: pipe.block @exp
// TRANS-SAME: forward_flops = 40,
pipe.block @exp (%a: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.exp ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  pipe.return %r : tensor<4xf32>
}
