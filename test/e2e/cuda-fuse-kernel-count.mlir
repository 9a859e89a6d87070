// REQUIRES: cuda-toolkit
//
// Kernel launches of the generated tiny GPT-2 (2 layers, 1F1B on 2 devices)
// lowered with --pipe-host-to-cuda, with and without pipe-fuse-elementwise
// (on by default). Measured when the pass was added: 303 launches without
// fusion, 188 with it (forward layer 39 -> 29, its backward 61 -> 37); the
// 44 cuBLAS GEMM calls are the same in both. A change in either number
// means the fusion or the kernel mapping changed: update the numbers here
// and in docs/cuda-lowering.md.
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: pipe-gen --model=tiny-gpt | pipe-opt --pipe-lift-params --pipe-form-blocks=granularity=layer --pipe-differentiate --pipe-place=devices=2 "--pipe-schedule=kind=1f1b microbatches=2" --pipe-verify-schedule --pipe-lower-to-host -o %t/gpt.host.mlir
// RUN: pipe-opt %t/gpt.host.mlir "--pipe-host-to-cuda=fuse-elementwise=false" -o %t/unfused.mlir
// RUN: pipe-opt %t/gpt.host.mlir --pipe-host-to-cuda -o %t/fused.mlir
// RUN: grep -c gpu.launch_func %t/unfused.mlir | FileCheck %s --check-prefix=UNFUSED
// RUN: grep -c gpu.launch_func %t/fused.mlir | FileCheck %s --check-prefix=FUSED
// RUN: grep -c "llvm.call @pipe_rt_cuda_gemm" %t/unfused.mlir | FileCheck %s --check-prefix=GEMMS
// RUN: grep -c "llvm.call @pipe_rt_cuda_gemm" %t/fused.mlir | FileCheck %s --check-prefix=GEMMS
// The host pipeline runs the pass only when asked (to compare numerics).
// RUN: pipe-opt %t/gpt.host.mlir "--pipe-host-to-llvm=fuse-elementwise=true" --mlir-print-ir-after=pipe-fuse-elementwise -o /dev/null 2>&1 | FileCheck %s --check-prefix=HOSTFUSED
// RUN: pipe-opt %t/gpt.host.mlir --pipe-host-to-llvm --mlir-print-ir-after=pipe-fuse-elementwise -o /dev/null 2>&1 | FileCheck %s --check-prefix=HOSTPLAIN --allow-empty
// The fused program still translates (the kernels are in the cubin).
// RUN: mlir-translate --mlir-to-llvmir %t/fused.mlir | FileCheck %s

// UNFUSED: {{^}}303{{$}}
// FUSED: {{^}}188{{$}}
// GEMMS: {{^}}44{{$}}
// HOSTFUSED: IR Dump After PipeFuseElementwise
// HOSTPLAIN-NOT: IR Dump After PipeFuseElementwise
// CHECK: @pipe_kernels_binary = internal constant [{{[0-9]+}} x i8] c"\7FELF
