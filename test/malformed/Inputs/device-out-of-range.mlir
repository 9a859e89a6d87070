pipe.graph @g() {
  pipe.return
}
pipe.placement @p graph @g devices 2 {
}
pipe.schedule @s placement @p kind "gpipe" microbatches 1 {
  pipe.device 18446744073709551615 {
  }
}
