pipe.block @id (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pipe.run "a" @id(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = pipe.run "b" @id(%0) : (tensor<4xf32>) -> tensor<4xf32>
  %2 = pipe.run "c" @id(%1) : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %2 : tensor<4xf32>
}
pipe.placement @p graph @g devices 2 {
  pipe.stage @s0 device 0 blocks ["a", "c"]
  pipe.stage @s1 device 1 blocks ["b"]
}
