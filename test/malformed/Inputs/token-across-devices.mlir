pipe.block @id (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pipe.run "a" @id(%x) : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %0 : tensor<4xf32>
}
pipe.placement @p graph @g devices 2 {
  pipe.stage @s0 device 0 blocks ["a"]
}
pipe.schedule @s placement @p kind "gpipe" microbatches 1 {
  pipe.device 0 {
    %t = pipe.ps.load @s0
  }
  pipe.device 1 {
    pipe.wait %t
  }
}
