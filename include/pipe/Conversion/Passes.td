//===- Passes.td - Conversion passes of pipe-mlir ----------*- tablegen -*-===//
//
// The passes that lower from one level to the next, as upstream keeps them
// in mlir/Conversion: scheduled pipe IR to host code, linalg on buffers to
// runtime GEMM calls or GPU kernels, and the packed entry points of the
// LLVM dialect. Their pipelines are in lib/Target.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_CONVERSION_PASSES_TD
#define PIPE_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// PipeToHost
//===----------------------------------------------------------------------===//

def PipeLowerToHost : Pass<"pipe-lower-to-host", "ModuleOp"> {
  let summary = "Lowers scheduled pipe IR to host code calling the runtime";
  let description = [{
    The compiler half of the compiler/runtime split (docs/host-lowering.md):
    every `pipe.block` becomes a `func.func` (arguments read-only, C
    interface), every `pipe.device` action list of every `pipe.schedule`
    becomes `func.func @pipe_device_<x>_<d>(!llvm.ptr) -> i32`, a straight
    sequence of calls to the runtime's `pipe_rt_act_*` entry points that
    returns the first non-zero status; the graph, placement, stages, edges,
    parameters and schedules are described by the `@pipe_program_manifest`
    string that the runtime reads (include/pipe/Runtime/Program.h). The
    `pipe.param`, `pipe.graph`, `pipe.placement` and `pipe.schedule` ops are
    removed: parameter values travel in a safetensors file.

    Every schedule must place the same graph. A forward pass that a later
    `pipe.recompute` repeats keeps only the stage's inputs.

    ```
    pipe-opt scheduled.mlir --pipe-lower-to-host --pipe-host-to-llvm
    ```
  }];
  let options = [
    Option<"deviceMemoryBytes", "device-memory-bytes", "uint64_t",
           /*default=*/"0",
           "Arena capacity of every device in the manifest (0 = unlimited "
           "or device-model's; the runtime can override it)">,
    Option<"deviceModel", "device-model", "std::string", /*default=*/"\"\"",
           "Device model (preset name or JSON file, docs/device-model.md) "
           "whose memory_bytes become each device's capacity in the "
           "manifest, unless device-memory-bytes is given">,
    Option<"weights", "weights", "std::string", /*default=*/"\"\"",
           "Also write every parameter's initial value (inline or external) "
           "into this safetensors file, the runtime's weights input">,
    Option<"maxActions", "max-actions", "uint64_t", /*default=*/"32768",
           "Compile-size guard: reject schedules with more actions in all "
           "than this (each becomes straight-line host code; 0 = no limit)">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::cf::ControlFlowDialect",
                           "::mlir::LLVM::LLVMDialect"];
}

//===----------------------------------------------------------------------===//
// LinalgToGemm
//===----------------------------------------------------------------------===//

def PipeLinalgToGemm : Pass<"pipe-linalg-to-gemm", "ModuleOp"> {
  let summary = "Turns f32 contractions on buffers into runtime GEMM calls";
  let description = [{
    After bufferization: a `linalg.generic` (or named op) on f32 memrefs
    with static strides whose body is `out + a * b`, with every loop
    dimension a batch, M, N or K dimension that can be merged into one
    (strides compatible in every operand), becomes a call to the runtime's
    `pipe_rt_gemm_f32` (BLAS). Anything else is left to the loop lowering.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::LLVM::LLVMDialect"];
}

//===----------------------------------------------------------------------===//
// LinalgToVector
//===----------------------------------------------------------------------===//

def PipeLinalgToVector : Pass<"pipe-linalg-to-vector", "ModuleOp"> {
  let summary = "Vectorises the rows of elementwise and reduction linalg ops "
                "on buffers";
  let description = [{
    After `pipe-linalg-to-gemm`, on the host pipeline: every linalg op on
    identity-layout memrefs with static shapes that upstream's vectoriser
    accepts, and whose innermost loop dimension is the last (contiguous)
    index of every operand that uses it, is tiled into runs of that
    dimension (each outer loop by 1, the row in runs of the largest length
    up to `max-length` that divides it) and each run is vectorised: 1-D
    vector loads, arithmetic and stores, and for a reduction along the row
    (softmax, layer norm, cross-entropy) one horizontal reduction per run,
    reassociated so that LLVM sums it as a tree. A row reduction's result
    therefore differs from the scalar loop's in the last bits. Ops it does
    not take (odd or short rows, transposing maps, gathers, unrecognised
    reductions) are left to `convert-linalg-to-loops`.

    ```
    pipe-opt blocks.mlir --pipe-linalg-to-vector=max-length=64
    ```
  }];
  let options = [
    Option<"maxLength", "max-length", "int64_t", /*default=*/"64",
           "Longest vector (elements) one run of a row becomes, 8 to "
           "4096">,
  ];
  let dependentDialects = ["::mlir::vector::VectorDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::affine::AffineDialect",
                           "::mlir::arith::ArithDialect"];
}

//===----------------------------------------------------------------------===//
// LinalgToGpu
//===----------------------------------------------------------------------===//

def PipeLinalgToGpu : Pass<"pipe-linalg-to-gpu", "ModuleOp"> {
  let summary = "Turns the bufferized block functions into CUDA device work";
  let description = [{
    After bufferization, deallocation and `pipe-linalg-to-gemm`, in every
    function marked `pipe.packed_entry` (the block functions): each
    `linalg` op becomes a `gpu.launch` (elementwise: one thread per point of
    the parallel loops, reduction loops sequential in the thread; a single
    f32/i32 output reduced by add/mul/max/min over its reduction loops: one
    thread block per output element, threads striding over the reduction
    domain, then a block-wide `gpu.all_reduce`); host loop nests whose only
    writes are accumulations `A[i] += v` (autodiff's scatter-adds) run one
    thread per iteration with atomic adds, other host loops that read or
    write memrefs run in a one-thread kernel;
    `memref.alloc`/`dealloc` become `gpu.alloc`/`gpu.dealloc`; constants
    (`memref.get_global` used by device code) are copied to device memory;
    `memref.copy` becomes a device memcpy (a copy kernel between strided
    views); calls to `pipe_rt_gemm_f32` become
    calls to `pipe_rt_cuda_gemm` with a compute-type code. All
    device work of a function is chained on one stream (`gpu.wait async` at
    entry, `gpu.wait` before each return). See docs/cuda-lowering.md.
  }];
  let options = [
    Option<"gemmPrecision", "gemm-precision", "std::string",
           /*default=*/"\"f32\"",
           "cuBLAS compute type of the GEMM calls: f32, tf32, bf16 or f16 "
           "(inputs rounded, fp32 accumulation)">,
    Option<"blockSize", "block-size", "unsigned", /*default=*/"256",
           "Threads per block of elementwise kernels (and the largest block "
           "of reduction kernels); a multiple of 32, at most 1024">,
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::func::FuncDialect"];
}

def PipeMergeGpuModules : Pass<"pipe-merge-gpu-modules", "ModuleOp"> {
  let summary = "Moves every outlined kernel into one gpu.module";
  let description = [{
    After `gpu-kernel-outlining` (one `gpu.module` per kernel): moves all
    kernels into one `gpu.module @pipe_kernels` and retargets the
    `gpu.launch_func` ops, so `gpu-module-to-binary` runs ptxas once per
    program instead of once per kernel and the runtime loads one module.
  }];
  let options = [
    Option<"moduleName", "module-name", "std::string",
           /*default=*/"\"pipe_kernels\"", "Name of the merged gpu.module">,
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

//===----------------------------------------------------------------------===//
// HostToLLVM
//===----------------------------------------------------------------------===//

def PipeEmitPackedEntries : Pass<"pipe-emit-packed-entries", "ModuleOp"> {
  let summary = "Adds `void f(void **args)` wrappers for the block functions";
  let description = [{
    On the LLVM dialect: for every function marked `pipe.packed_entry` by
    `--pipe-lower-to-host`, adds the packed wrapper the runtime calls
    (args[0] the result storage, then one memref descriptor per argument),
    which unpacks the pointers and calls the function's C interface.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // PIPE_CONVERSION_PASSES_TD
