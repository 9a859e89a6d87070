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

/// The choices of the host pipeline. `fuseElementwise` runs
/// `pipe-fuse-elementwise` on the block functions first (what the CUDA
/// pipeline does by default), to compare its numerics on the CPU;
/// `vectorize = false` leaves the non-GEMM work to scalar loops (and LLVM's
/// loop vectoriser), to compare speed and numerics with the vector rows of
/// `pipe-linalg-to-vector`.
struct HostPipelineConfig {
  bool fuseElementwise = false;
  bool vectorize = true;
};

/// Adds the lowering of `--pipe-lower-to-host`'s output to the LLVM dialect:
/// bufferization with deallocation, GEMMs to the runtime's BLAS entry,
/// vector rows and loops for the rest, LLVM, and the packed entry points.
void buildHostToLLVMPipeline(OpPassManager &pm,
                             const HostPipelineConfig &config = {});

/// Registers `--pipe-host-to-llvm` (the pipeline above) and
/// `--pipe-host-to-cuda` (pipe/Target/CUDA/CudaPipeline.h).
void registerPipePipelines();

} // namespace mlir::pipe

#endif // PIPE_TARGET_HOST_HOSTPIPELINE_H
