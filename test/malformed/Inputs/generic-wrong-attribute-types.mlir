"pipe.schedule"() <{sym_name = "s", placement = "p", kind = 3, microbatches = 1.5 : f32}> ({
}) : () -> ()
