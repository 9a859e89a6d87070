pipe.param @Ã( : tensor<4xf32>
