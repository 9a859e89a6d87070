// Older syntax that MLIR 22 rejects and that the input guard upgrades
// (older-syntax.test).
func.func @expand(%x: tensor<6x4xf32>) -> tensor<2x3x4xf32> {
  %e = tensor.expand_shape %x [[0, 1], [2]] : tensor<6x4xf32> into tensor<2x3x4xf32>
  return %e : tensor<2x3x4xf32>
}
func.func @tosa(%x: tensor<6xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %c = "tosa.const"() <{value = dense<1.0> : tensor<2x3xf32>}> : () -> tensor<2x3xf32>
  %r = tosa.reshape %x {new_shape = array<i64: 2, 3>} : (tensor<6xf32>) -> tensor<2x3xf32>
  %m = tosa.mul %r, %c {shift = 0 : i8} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %s = tosa.slice %m {size = array<i64: 1, 3>, start = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<1x3xf32>
  %t = tosa.tile %s {multiples = array<i64: 2, 1>} : (tensor<1x3xf32>) -> tensor<2x3xf32>
  %k = tosa.clamp %t {max_fp = 6.0 : f32, max_int = 6 : i64, min_fp = 0.0 : f32, min_int = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %k : tensor<2x3xf32>
}
func.func @conv(%x: tensor<1x2x2x4xf32>, %w: tensor<2x1x1x4xf32>, %b: tensor<2xf32>) -> tensor<1x2x2x2xf32> {
  %y = tosa.conv2d %x, %w, %b {dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x2x2x4xf32>, tensor<2x1x1x4xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  return %y : tensor<1x2x2x2xf32>
}
// Comments and strings are not rewritten:
// %e = tensor.expand_shape %x [[0, 1]] : tensor<6xf32> into tensor<2x3xf32>
func.func @untouched() attributes {note = "tosa.const() {value = 1}"} {
  return
}
