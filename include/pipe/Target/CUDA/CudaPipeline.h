//===- CudaPipeline.h - The CUDA target's pass pipeline -----*- C++ -*-===//
//
// From `--pipe-lower-to-host`'s output to the LLVM dialect with the block
// functions on a CUDA GPU (docs/cuda-lowering.md). The CUDA runtime behind
// the same C ABI is lib/Runtime/CUDA.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_TARGET_CUDA_CUDAPIPELINE_H
#define PIPE_TARGET_CUDA_CUDAPIPELINE_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Support/LLVM.h"

namespace mlir::pipe {

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

#endif // PIPE_TARGET_CUDA_CUDAPIPELINE_H
