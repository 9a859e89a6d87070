/* A "program" built for a runtime ABI that does not exist (test/e2e/
   host-errors.mlir): pipe-runner must refuse it before reading anything. */
int pipe_program_abi_version = 999;
const char pipe_program_manifest[] = "pipe-program 999\nend\n";
