func.func @f(%x: tensor<2x3xf32>, %y: tensor<2xf32>) -> tensor<2xf32> {
  %r = linalg.reduce ins(%x : tensor<2x3xf32>) outs(%y : tensor<2xf32>)
      dimensions = [10000000000000000000000000000000000000000]
      (%a: f32, %b: f32) {
        %s = arith.addf %a, %b : f32
        linalg.yield %s : f32
      }
  return %r : tensor<2xf32>
}
