pipe.param @wÿþ : tensor<4xf32>
