pipe.param @r : tensor<4xf32> = dense_resource<b>
{-#
  dialect_resources: {
    builtin: {
      b: "0x040000000000803F"
    }
  }
#-}
