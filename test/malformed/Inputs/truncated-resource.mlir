pipe.param @r : tensor<2xf32> = dense_resource<b>
{-#
  dialect_resources: {
    builtin: {
      b: "0x0400