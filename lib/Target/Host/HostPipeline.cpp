//===- HostPipeline.cpp - From host-lowered pipe IR to the LLVM dialect ---===//

#include "pipe/Target/Host/HostPipeline.h"
#include "pipe/Dialect/Pipe/Transforms/Passes.h"
#include "pipe/Target/CUDA/CudaPipeline.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

namespace {

struct HostPipelineOptions : public PassPipelineOptions<HostPipelineOptions> {
  // Off by default: on the CPU the loops of a fused generic were no faster.
  // On, the host back end computes what the CUDA back end's fused kernels
  // compute, so tests compare the numerics of fusion on the CPU.
  Option<bool> fuseElementwise{
      *this, "fuse-elementwise",
      llvm::cl::desc("Fuse elementwise linalg producers into their consumers "
                     "in the block functions (pipe-fuse-elementwise)"),
      llvm::cl::init(false)};
  Option<bool> vectorize{
      *this, "vectorize",
      llvm::cl::desc("Vectorise the rows of the non-GEMM linalg ops "
                     "(pipe-linalg-to-vector); off: scalar loops"),
      llvm::cl::init(true)};
};

} // namespace

void pipe::buildHostToLLVMPipeline(OpPassManager &pm,
                                   const HostPipelineConfig &config) {
  // Parsed from text: the upstream passes' option structs differ between
  // MLIR releases, their textual options do not. The pipeline text is fixed
  // and registered, so parsing cannot fail.
  (void)parsePassPipeline(
      std::string("canonicalize,cse") +
          (config.fuseElementwise ? ",pipe-fuse-elementwise" : ""),
      pm);
  // Data-dependent indices are checked while they are still tensor ops.
  pm.addPass(createPipeGuardIndices());
  std::string pipeline =
      "one-shot-bufferize{bufferize-function-boundaries "
      "function-boundary-type-conversion=identity-layout-map},"
      "buffer-deallocation-pipeline,convert-bufferization-to-memref,"
      "pipe-linalg-to-gemm," +
      std::string(config.vectorize ? "pipe-linalg-to-vector," : "") +
      "pipe-approximate-math,"
      "convert-linalg-to-loops,lower-affine,convert-scf-to-cf,"
      "expand-strided-metadata,lower-affine,"
      "finalize-memref-to-llvm{use-generic-functions=true},"
      "convert-math-to-llvm,convert-math-to-libm,convert-to-llvm,"
      "reconcile-unrealized-casts,pipe-emit-packed-entries";
  (void)parsePassPipeline(pipeline, pm);
}

void pipe::registerPipePipelines() {
  PassPipelineRegistration<HostPipelineOptions>(
      "pipe-host-to-llvm",
      "Lowers --pipe-lower-to-host output to the LLVM dialect (bufferize, "
      "deallocate, BLAS GEMMs, loops, packed entry points)",
      [](OpPassManager &pm, const HostPipelineOptions &options) {
        pipe::buildHostToLLVMPipeline(
            pm, {options.fuseElementwise, options.vectorize});
      });
  // --pipe-host-to-cuda (CudaPipeline.cpp).
  pipe::registerPipeCudaPipeline();
}
