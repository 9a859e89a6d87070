pipe.graph @g() {
  pipe.return
}
pipe.placement @p graph @g devices 0 {
}
