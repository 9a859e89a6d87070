func.func @f(%x: tensor<3xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %t = linalg.broadcast ins(%x : tensor<3xf32>) outs(%y : tensor<2x3xf32>)
      dimensions = [-99999999999999999999999]
  return %t : tensor<2x3xf32>
}
