// A 4-block model shared by the scheduling tests: three hidden layers and a
// head; @wte is read by the first and the last block (tied embedding).
pipe.param @wte : tensor<8x8xf32>
pipe.param @w1 : tensor<8x8xf32>
pipe.param @w2 : tensor<8x8xf32>

pipe.block @layer params(%w: tensor<8x8xf32>) (%x: tensor<4x8xf32>)
    -> tensor<4x8xf32> {
  pipe.return %x : tensor<4x8xf32>
}

pipe.graph @model(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %h0 = pipe.run "l0" @layer(%x) params [@wte]
      : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %h1 = pipe.run "l1" @layer(%h0) params [@w1]
      : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %h2 = pipe.run "l2" @layer(%h1) params [@w2]
      : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = pipe.run "head" @layer(%h2) params [@wte]
      : (tensor<4x8xf32>) -> tensor<4x8xf32>
  pipe.return %y : tensor<4x8xf32>
}
