//===- Passes.h - Passes of the pipe dialect ----------------*- C++ -*-===//

#ifndef PIPE_DIALECT_PIPE_TRANSFORMS_PASSES_H
#define PIPE_DIALECT_PIPE_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"
#include "pipe/Dialect/Pipe/IR/Pipe.h"

namespace mlir::pipe {

#define GEN_PASS_DECL
#include "pipe/Dialect/Pipe/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "pipe/Dialect/Pipe/Transforms/Passes.h.inc"

/// Adds the lowering of `--pipe-lower-to-host`'s output to the LLVM dialect:
/// bufferization with deallocation, GEMMs to the runtime's BLAS entry, loops
/// for the rest, LLVM, and the packed entry points. `fuseElementwise` runs
/// `pipe-fuse-elementwise` on the block functions first (what the CUDA
/// pipeline does by default), to compare its numerics on the CPU.
void buildHostToLLVMPipeline(OpPassManager &pm, bool fuseElementwise = false);

/// Registers `--pipe-host-to-llvm` (the pipeline above).
void registerPipePipelines();

/// Adds the CUDA lowering of `--pipe-lower-to-host`'s output
/// (`--pipe-host-to-cuda`, docs/cuda-lowering.md): block functions run on
/// the GPU (kernels embedded as a cubin for `chip`, GEMMs through the
/// runtime's cuBLAS entry with compute type `gemmPrecision`), device
/// programs and packed entries stay host code. `fuseElementwise` fuses
/// elementwise producers into their consumers first (fewer kernels, see
/// pipe-fuse-elementwise). Fails on invalid options.
LogicalResult buildHostToCudaPipeline(OpPassManager &pm,
                                      StringRef chip = "sm_90",
                                      StringRef gemmPrecision = "f32",
                                      StringRef toolkit = "/usr/local/cuda",
                                      bool fuseElementwise = true);

/// Registers `--pipe-host-to-cuda` (the pipeline above).
void registerPipeCudaPipeline();

} // namespace mlir::pipe

#endif // PIPE_DIALECT_PIPE_TRANSFORMS_PASSES_H
