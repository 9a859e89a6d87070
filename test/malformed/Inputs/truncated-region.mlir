pipe.placement @p graph @g devices 2 {
  pipe.stage @s0 device 0 blocks ["l0"]
