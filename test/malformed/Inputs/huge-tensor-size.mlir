// Every dimension fits in int64, the size in bits does not.
pipe.param @w : tensor<9223372036854775807x9223372036854775807xf32> = dense<0.0>
