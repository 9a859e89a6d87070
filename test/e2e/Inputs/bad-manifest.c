/* The right ABI version but a manifest whose first type record lacks its
   dimensions (test/e2e/host-errors.mlir): the error names the line. */
int pipe_program_abi_version = 4;
const char pipe_program_manifest[] = "pipe-program 5\ntype 0 f32 2 4\nend\n";
