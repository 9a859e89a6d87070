//===- HostPipeline.h - The host target's pass pipeline -----*- C++ -*-===//
//
// From `--pipe-lower-to-host`'s output to the LLVM dialect for the CPU
// (docs/host-lowering.md). The passes it runs are in pipe/Conversion.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_TARGET_HOST_HOSTPIPELINE_H
#define PIPE_TARGET_HOST_HOSTPIPELINE_H

#include "mlir/Pass/PassManager.h"

namespace mlir::pipe {

/// Adds the lowering of `--pipe-lower-to-host`'s output to the LLVM dialect:
/// bufferization with deallocation, GEMMs to the runtime's BLAS entry, loops
/// for the rest, LLVM, and the packed entry points. `fuseElementwise` runs
/// `pipe-fuse-elementwise` on the block functions first (what the CUDA
/// pipeline does by default), to compare its numerics on the CPU.
void buildHostToLLVMPipeline(OpPassManager &pm, bool fuseElementwise = false);

/// Registers `--pipe-host-to-llvm` (the pipeline above) and
/// `--pipe-host-to-cuda` (pipe/Target/CUDA/CudaPipeline.h).
void registerPipePipelines();

} // namespace mlir::pipe

#endif // PIPE_TARGET_HOST_HOSTPIPELINE_H
