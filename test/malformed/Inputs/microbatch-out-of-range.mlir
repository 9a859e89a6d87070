pipe.block @id (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pipe.run "a" @id(%x) : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %0 : tensor<4xf32>
}
pipe.placement @p graph @g devices 1 {
  pipe.stage @s0 device 0 blocks ["a"]
}
pipe.schedule @s placement @p kind "gpipe" microbatches 4611686018427387904 {
  pipe.device 0 {
    pipe.forward @s0 mb 4611686018427387904
  }
}
