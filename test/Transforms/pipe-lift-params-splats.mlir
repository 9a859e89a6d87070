// RUN: pipe-opt %s --pipe-lift-params -verify-diagnostics -o /dev/null
// RUN: pipe-opt %s --pipe-lift-params="lift-splats=true" | FileCheck %s

// A fresh export's per-channel scale (all ones) and shift (all zeros),
// each one constant read by two layers, as torch-mlir prints equal values
// once. Without lift-splats they stay literals, with a warning; with it,
// each use is its own parameter. The full-size splat is read elementwise,
// not per channel: it is no reason to warn (lift-splats lifts it too).

// CHECK-DAG: pipe.param @[[S0:[a-z0-9_.]+]] : tensor<4xf32> = dense<1.000000e+00>
// CHECK-DAG: pipe.param @[[S1:[a-z0-9_.]+]] : tensor<4xf32> = dense<1.000000e+00>
// CHECK-DAG: pipe.param @{{.*}} : tensor<4xf32> = dense<0.000000e+00>
// CHECK-DAG: pipe.param @{{.*}} : tensor<4xf32> = dense<0.000000e+00>
// CHECK-DAG: pipe.param @{{.*}} : tensor<2x4xf32> = dense<5.000000e-01>
// CHECK-LABEL: func.func @forward
// CHECK-COUNT-5: pipe.get_param
// CHECK-NOT: pipe.get_param
#x = affine_map<(d0, d1) -> (d0, d1)>
#c = affine_map<(d0, d1) -> (d1)>
func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // expected-warning @below {{2 splat constant(s) (all elements equal) are read per channel, as a fresh export's BatchNorm scales and shifts or zero biases are: they stay literals and are not trained; lift-splats=true (pipe-train --lift-splats) makes each use of one a parameter}}
  %scale = arith.constant dense<1.0> : tensor<4xf32>
  %shift = arith.constant dense<0.0> : tensor<4xf32>
  %mask = arith.constant dense<0.5> : tensor<2x4xf32>
  %e = tensor.empty() : tensor<2x4xf32>
  %a = linalg.generic {indexing_maps = [#x, #c, #c, #x], iterator_types = ["parallel", "parallel"]} ins(%x, %scale, %shift : tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<2x4xf32>) {
  ^bb0(%v: f32, %s: f32, %b: f32, %o: f32):
    %m = arith.mulf %v, %s : f32
    %r = arith.addf %m, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x4xf32>
  %b = linalg.generic {indexing_maps = [#x, #c, #c, #x], iterator_types = ["parallel", "parallel"]} ins(%a, %scale, %shift : tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<2x4xf32>) {
  ^bb0(%v: f32, %s: f32, %b: f32, %o: f32):
    %m = arith.mulf %v, %s : f32
    %r = arith.addf %m, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x4xf32>
  %c = linalg.generic {indexing_maps = [#x, #x, #x], iterator_types = ["parallel", "parallel"]} ins(%b, %mask : tensor<2x4xf32>, tensor<2x4xf32>) outs(%e : tensor<2x4xf32>) {
  ^bb0(%v: f32, %m: f32, %o: f32):
    %r = arith.mulf %v, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4xf32>
  return %c : tensor<2x4xf32>
}
