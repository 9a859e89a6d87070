pipe.param @w : tensor<2xf32>
