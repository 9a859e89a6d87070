// Older syntax that MLIR 22 rejects and that has no unique MLIR 22 form:
// each is reported with the way around it (older-syntax.test).
func.func @dyn(%x: tensor<?x4xf32>) -> tensor<?x2x4xf32> {
  %e = tensor.expand_shape %x [[0, 1], [2]] : tensor<?x4xf32> into tensor<?x2x4xf32>
  return %e : tensor<?x2x4xf32>
}
func.func @t(%x: tensor<2x3xf32>, %h: tensor<3x2xf16>) -> tensor<3x2xf32> {
  %p = "tosa.const"() <{values = dense<[1, 0]> : tensor<2xi32>}> : () -> tensor<2xi32>
  %t = tosa.transpose %x, %p : (tensor<2x3xf32>, tensor<2xi32>) -> tensor<3x2xf32>
  %q = "tosa.const"() <{values = dense<[[0, 0], [1, 1]]> : tensor<2x2xi32>}> : () -> tensor<2x2xi32>
  %d = tosa.pad %t, %q : (tensor<3x2xf32>, tensor<2x2xi32>) -> tensor<5x4xf32>
  %c = tosa.clamp %h {min_fp = 0.0 : f32, max_fp = 6.0 : f32, min_int = 0 : i64, max_int = 6 : i64} : (tensor<3x2xf16>) -> tensor<3x2xf16>
  %g = "tosa.reshape"(%x) <{new_shape = array<i64: 6>}> : (tensor<2x3xf32>) -> tensor<6xf32>
  %f = tosa.fully_connected %x, %x, %x : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %u = "tosa.transpose"(%x, %p) : (tensor<2x3xf32>, tensor<2xi32>) -> tensor<3x2xf32>
  return %t : tensor<3x2xf32>
}
