"pipe.block"() <{sym_name = "b", function_type = (tensor<4xf32>) -> (), num_params = 5}> ({
^bb0(%a: tensor<4xf32>):
  "pipe.return"() : () -> ()
}) : () -> ()
