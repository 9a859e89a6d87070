pipe.param @w : tensor<99999999999999999999xf32>
