//===- HostPipeline.cpp - From host-lowered pipe IR to the LLVM dialect ---===//

#include "pipe/Dialect/Pipe/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

void pipe::buildHostToLLVMPipeline(OpPassManager &pm) {
  // Parsed from text: the upstream passes' option structs differ between
  // MLIR releases, their textual options do not.
  const char *pipeline =
      "canonicalize,cse,"
      "one-shot-bufferize{bufferize-function-boundaries "
      "function-boundary-type-conversion=identity-layout-map},"
      "buffer-deallocation-pipeline,convert-bufferization-to-memref,"
      "pipe-linalg-to-gemm,pipe-approximate-math,"
      "convert-linalg-to-loops,lower-affine,convert-scf-to-cf,"
      "expand-strided-metadata,lower-affine,"
      "finalize-memref-to-llvm{use-generic-functions=true},"
      "convert-math-to-llvm,convert-math-to-libm,convert-to-llvm,"
      "reconcile-unrealized-casts,pipe-emit-packed-entries";
  // The pipeline text is fixed and registered, so this cannot fail.
  (void)parsePassPipeline(pipeline, pm);
}

void pipe::registerPipePipelines() {
  PassPipelineRegistration<>(
      "pipe-host-to-llvm",
      "Lowers --pipe-lower-to-host output to the LLVM dialect (bufferize, "
      "deallocate, BLAS GEMMs, loops, packed entry points)",
      [](OpPassManager &pm) { pipe::buildHostToLLVMPipeline(pm); });
  // --pipe-host-to-cuda (CudaPipeline.cpp).
  pipe::registerPipeCudaPipeline();
}
