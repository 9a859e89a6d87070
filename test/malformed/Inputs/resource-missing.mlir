pipe.param @r : tensor<4xf32> = dense_resource<nowhere>
