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
  return %t : tensor<2x3xf32>
}
// Comments and strings are not rewritten:
// %e = tensor.expand_shape %x [[0, 1]] : tensor<6xf32> into tensor<2x3xf32>
func.func @untouched() attributes {note = "tosa.const() {value = 1}"} {
  return
}
