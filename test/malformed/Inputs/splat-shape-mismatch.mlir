pipe.param @w : tensor<4xf32> = dense<[1.0, 2.0]>
