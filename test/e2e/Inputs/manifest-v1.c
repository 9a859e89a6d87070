/* The right ABI version but a manifest of format 1, from before the
   `versions` record (test/e2e/host-errors.mlir): the runtime must refuse it
   and say to recompile, not read it as its own format. */
int pipe_program_abi_version = 4;
const char pipe_program_manifest[] = "pipe-program 1\nend\n";
