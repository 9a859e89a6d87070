//===- CudaPipeline.cpp - From host-lowered pipe IR to LLVM + cubins ------===//
//
// `--pipe-host-to-cuda`: the CUDA counterpart of `--pipe-host-to-llvm`. The
// device programs and the packed `pipe_fn_*` entries stay host code with the
// same C interface; the block functions' bodies become kernels (embedded as
// a cubin) and runtime calls on one stream. See docs/cuda-lowering.md.
//
//===----------------------------------------------------------------------===//

#include "pipe/Target/CUDA/CudaPipeline.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;

namespace {

struct CudaPipelineOptions : public PassPipelineOptions<CudaPipelineOptions> {
  Option<std::string> chip{*this, "chip",
                           llvm::cl::desc("GPU architecture (sm_80, sm_90, "
                                          "...; CUDA 13 rejects sm_70 and "
                                          "older)"),
                           llvm::cl::init("sm_90")};
  Option<std::string> gemmPrecision{
      *this, "gemm-precision",
      llvm::cl::desc("cuBLAS compute type of GEMMs: f32, tf32, bf16 or f16 "
                     "(fp32 data and accumulation)"),
      llvm::cl::init("f32")};
  Option<std::string> toolkit{*this, "toolkit",
                              llvm::cl::desc("CUDA toolkit (ptxas, libdevice)"),
                              llvm::cl::init("/usr/local/cuda")};
  Option<std::string> format{
      *this, "format",
      llvm::cl::desc("Embedded kernels: bin (cubin), fatbin, or isa (PTX, "
                     "JIT-compiled by the driver at load time)"),
      llvm::cl::init("bin")};
  Option<unsigned> blockSize{
      *this, "block-size",
      llvm::cl::desc("Threads per block of elementwise kernels"),
      llvm::cl::init(256)};
  Option<bool> fuseElementwise{
      *this, "fuse-elementwise",
      llvm::cl::desc("Fuse elementwise linalg producers into their consumers "
                     "first (pipe-fuse-elementwise): fewer kernels"),
      llvm::cl::init(true)};
};

std::string cudaPipelineText(const CudaPipelineOptions &options) {
  return llvm::formatv(
      "canonicalize,cse,{5}"
      "one-shot-bufferize{{bufferize-function-boundaries "
      "function-boundary-type-conversion=identity-layout-map},"
      "buffer-deallocation-pipeline,convert-bufferization-to-memref,"
      "pipe-linalg-to-gemm,"
      "pipe-linalg-to-gpu{{gemm-precision={0} block-size={1}},"
      "gpu-kernel-outlining,pipe-merge-gpu-modules,"
      "nvvm-attach-target{{chip={2} O=3},"
      "convert-scf-to-cf,"
      "gpu.module(convert-gpu-to-nvvm),"
      "reconcile-unrealized-casts,"
      "gpu-module-to-binary{{format={3} toolkit={4}},"
      "expand-strided-metadata,lower-affine,"
      "gpu-to-llvm,"
      "finalize-memref-to-llvm{{use-generic-functions=true},"
      "convert-math-to-llvm,convert-math-to-libm,convert-to-llvm,"
      "reconcile-unrealized-casts,pipe-emit-packed-entries",
      options.gemmPrecision.getValue(), options.blockSize.getValue(),
      options.chip.getValue(), options.format.getValue(),
      options.toolkit.getValue(),
      options.fuseElementwise ? "pipe-fuse-elementwise," : "");
}

} // namespace

LogicalResult pipe::buildHostToCudaPipeline(OpPassManager &pm, StringRef chip,
                                            StringRef gemmPrecision,
                                            StringRef toolkit,
                                            bool fuseElementwise) {
  CudaPipelineOptions options;
  options.chip = chip.str();
  options.gemmPrecision = gemmPrecision.str();
  options.toolkit = toolkit.str();
  options.fuseElementwise = fuseElementwise;
  return parsePassPipeline(cudaPipelineText(options), pm);
}

void pipe::registerPipeCudaPipeline() {
  PassPipelineRegistration<CudaPipelineOptions>(
      "pipe-host-to-cuda",
      "Lowers --pipe-lower-to-host output to the LLVM dialect with the block "
      "functions on a CUDA GPU (kernels embedded as a cubin, GEMMs to "
      "pipe_rt_cuda_gemm, device memory through mgpuMemAlloc)",
      [](OpPassManager &pm, const CudaPipelineOptions &options) {
        // Options with spaces or braces would break the text; reject them
        // through the parser's diagnostic rather than crash.
        if (failed(parsePassPipeline(cudaPipelineText(options), pm)))
          llvm::errs() << "pipe-host-to-cuda: invalid options\n";
      });
}
