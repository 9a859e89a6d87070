// A TFLite->TOSA export as older exporters print it (a conv2d without zero
// points, a clamp with min_fp/max_fp, a zero bias as a splat constant):
// pipe-train upgrades the syntax and trains it; the zero bias, read per
// channel, stays a literal with a warning unless --lift-splats lifts it.
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/Inputs/make-data.py %t/data.safetensors input0:F32:4x1x2x2x4:13:0.5 input1:F32:4x1x2x2x2:11:0.5
// RUN: pipe-train %s --loss mse --devices 1 --data %t/data.safetensors --steps 2 --log-every 1 2>&1 | FileCheck %s --check-prefix=LITERAL
// RUN: pipe-train %s --loss mse --devices 1 --data %t/data.safetensors --steps 2 --log-every 1 --lift-splats 2>&1 | FileCheck %s --check-prefix=LIFTED

// LITERAL: :[[# @LINE + 11]]:8: warning: upgraded older syntax: tosa.conv2d without zero points
// LITERAL: :[[# @LINE + 11]]:8: warning: upgraded older syntax: tosa.clamp `min_fp`/`max_fp` are now `min_val`/`max_val`
// LITERAL: warning: 1 splat constant(s) (all elements equal) are read per channel
// LITERAL: parameters: 8 in 1 tensors
// LITERAL: step 2/2  loss {{[0-9]+\.[0-9]+}}
// LIFTED-NOT: splat constant(s)
// LIFTED: parameters: 10 in 2 tensors
// LIFTED: step 2/2  loss {{[0-9]+\.[0-9]+}}
func.func @forward(%x: tensor<1x2x2x4xf32>) -> tensor<1x2x2x2xf32> {
  %b = "tosa.const"() <{value = dense<0.0> : tensor<2xf32>}> : () -> tensor<2xf32>
  %w = "tosa.const"() <{value = dense<[[[[-0.5, -0.4, -0.3, 0.8]]], [[[-0.1, 0.8, -0.4, 0.4]]]]> : tensor<2x1x1x4xf32>}> : () -> tensor<2x1x1x4xf32>
  %y = tosa.conv2d %x, %w, %b {dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x2x2x4xf32>, tensor<2x1x1x4xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  %r = tosa.clamp %y {max_fp = 6.0 : f32, max_int = 6 : i64, min_fp = 0.0 : f32, min_int = 0 : i64} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  return %r : tensor<1x2x2x2xf32>
}
