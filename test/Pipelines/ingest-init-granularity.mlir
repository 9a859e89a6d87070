// --pipe-ingest passes init= and init-seed= to the lift pass and
// granularity= to block formation; bad values name the option.
// RUN: pipe-opt %s --pipe-ingest="init=zeros granularity=op" | FileCheck %s
// RUN: pipe-opt %s --pipe-ingest="init=zeros granularity=layer" | FileCheck %s --check-prefix=LAYER
// RUN: not pipe-opt %s --pipe-ingest="granularity=auto" 2>&1 | FileCheck %s --check-prefix=BADGRAN
// RUN: not pipe-opt %s --pipe-ingest="init=ones" 2>&1 | FileCheck %s --check-prefix=BADINIT
// RUN: not pipe-opt %s --pipe-ingest 2>&1 | FileCheck %s --check-prefix=NOINIT

// CHECK: pipe.param @w : tensor<4x4xf32> = dense<0.000000e+00>
// CHECK: pipe.graph @forward
// CHECK-COUNT-2: pipe.run "op
// LAYER: pipe.graph @forward
// LAYER-COUNT-1: pipe.run
// LAYER-NOT: pipe.run
// BADGRAN: pipe-ingest: granularity: 'auto' is not one of op, layer, coarse
// BADINIT: pipe-ingest: init: 'ones' is not one of normal, xavier-uniform, kaiming-uniform, zeros
// NOINIT: initialise it with init=<kind> (pipe-train --init <kind>)
func.func @forward(%x: tensor<2x4xf32>) -> tensor<f32> {
  %cst = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense_resource<__elided__> : tensor<4x4xf32> loc("w")
  %e = tensor.empty() : tensor<2x4xf32>
  %z = linalg.fill ins(%cst : f32) outs(%e : tensor<2x4xf32>) -> tensor<2x4xf32>
  %m = linalg.matmul ins(%x, %w : tensor<2x4xf32>, tensor<4x4xf32>) outs(%z : tensor<2x4xf32>) -> tensor<2x4xf32>
  %s = tensor.empty() : tensor<f32>
  %sz = linalg.fill ins(%cst : f32) outs(%s : tensor<f32>) -> tensor<f32>
  %r = linalg.reduce ins(%m : tensor<2x4xf32>) outs(%sz : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %a = arith.addf %in, %acc : f32
      linalg.yield %a : f32
    }
  return %r : tensor<f32>
}
