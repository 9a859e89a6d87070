// Generic syntax can leave out required attributes of nested ops; the
// verifiers of the enclosing ops must not read them before they are checked.
"pipe.schedule"() <{sym_name = "s", placement = @p, kind = "x", microbatches = 1 : i64}> ({
  "pipe.device"() ({
    %t = "pipe.send"() : () -> !pipe.token
    "pipe.wait"(%t) : (!pipe.token) -> ()
  }) : () -> ()
}) : () -> ()
