pipe.schedule @s placement @p kind "gpipe" microbatches 1 {
  pipe.device 0 {
    pipe.forward @s0 mb -1
  }
}
