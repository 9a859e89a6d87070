"pipe.graph"() <{sym_name = "g", function_type = () -> ()}> ({
  "pipe.run"() <{callee = @b}> : () -> ()
  "pipe.run"() <{callee = @b}> : () -> ()
  "pipe.return"() : () -> ()
}) : () -> ()
