// The placement names itself as its graph.
pipe.placement @p graph @p devices 1 {
}
