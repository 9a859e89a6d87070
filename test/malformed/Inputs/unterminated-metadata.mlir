pipe.param @w : tensor<4xf32>
{-#
  dialect_resources: {
