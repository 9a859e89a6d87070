pipe.param @w : tensor<4xf32> = dense<0.0>
}}}])>>
