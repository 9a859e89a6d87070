pipe.schedule @s placement @p kind "gpipe" microbatches 1 {
  pipe.device 0 {
    %c = "arith.constant"() <{value = 0 : i32}> : () -> i32
  }
}
