//===- HostTarget.h - Compiling scheduled programs for the host -*- C++ -*-===//
//
// From a scheduled, differentiated module to machine code the runtime runs:
// in-process (JIT, for pipe-train and tests) or as a shared library that
// `pipe-runner`, which links only the runtime, loads. Both expose the symbols
// of include/pipe/Runtime/Program.h.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_TARGET_HOST_HOSTTARGET_H
#define PIPE_TARGET_HOST_HOSTTARGET_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/Support/Error.h"

#include <memory>

namespace mlir {
class ExecutionEngine;
} // namespace mlir

namespace mlir::pipe {

/// Runs --pipe-lower-to-host and --pipe-host-to-llvm on `module`; on failure
/// the diagnostics went to the context's handler.
LogicalResult lowerToHostLLVM(ModuleOp module, uint64_t deviceMemoryBytes = 0);

/// A program compiled in-process; runtime symbols resolve to the runtime
/// linked into this process.
class HostJIT {
public:
  /// `module` must be in the LLVM dialect (after lowerToHostLLVM).
  static llvm::Expected<std::unique_ptr<HostJIT>> create(ModuleOp module,
                                                         unsigned optLevel = 3);
  ~HostJIT();

  /// Address of a symbol of the program, or null.
  void *lookup(StringRef name) const;
  /// pipe_rt_symbol_lookup adaptor: `user_data` is the HostJIT.
  static void *lookupCallback(void *userData, const char *name);

private:
  HostJIT() = default;
  std::unique_ptr<ExecutionEngine> engine;
};

/// Compiles `module` (LLVM dialect) to an optimised object file for this
/// machine and links it into a shared library at `path` (written to a
/// temporary file first, renamed when complete). Needs a C compiler driver
/// (`cc`) to link.
llvm::Error writeSharedLibrary(ModuleOp module, StringRef path,
                               unsigned optLevel = 3);

/// Compiles `module` (LLVM dialect, host code, possibly with embedded GPU
/// binaries) to a PIC object file at `path`, for linking elsewhere (the GPU
/// machine, which has no MLIR).
llvm::Error writeObjectFile(ModuleOp module, StringRef path,
                            unsigned optLevel = 3);

} // namespace mlir::pipe

#endif // PIPE_TARGET_HOST_HOSTTARGET_H
