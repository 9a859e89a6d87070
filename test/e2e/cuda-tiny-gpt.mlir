// REQUIRES: cuda-toolkit
//
// A generated tiny GPT-2 (2 layers, tied embeddings) through the front end
// and the CUDA back end: lift, layer blocks, differentiate, place on 2
// devices, 1F1B, verify, lower to host, --pipe-host-to-cuda, LLVM IR, then an
// object file for the GPU machine (where the CUDA runtime links it). Needs
// ptxas, not a GPU; what runs on one is in docs/cuda-lowering.md.
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: pipe-gen --model=tiny-gpt | pipe-opt --pipe-lift-params --pipe-form-blocks=granularity=layer --pipe-differentiate --pipe-place=devices=2 "--pipe-schedule=kind=1f1b microbatches=2" --pipe-verify-schedule --pipe-lower-to-host -o %t/gpt.host.mlir
// RUN: pipe-opt %t/gpt.host.mlir --pipe-host-to-cuda -o %t/gpt.llvm.mlir
// RUN: mlir-translate --mlir-to-llvmir %t/gpt.llvm.mlir -o %t/gpt.ll
// RUN: FileCheck %s < %t/gpt.ll
// RUN: llc -O2 -filetype=obj -relocation-model=pic %t/gpt.ll -o %t/gpt.o
// RUN: llvm-nm %t/gpt.o | FileCheck %s --check-prefix=SYMS
// RUN: llvm-nm %t/gpt.o | FileCheck %s --check-prefix=NOHOST
// Layernorm rows (32 wide) and bias gradients are block reductions.
// RUN: pipe-opt %t/gpt.host.mlir --canonicalize --cse "--one-shot-bufferize=bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --buffer-deallocation-pipeline --convert-bufferization-to-memref --pipe-linalg-to-gemm --pipe-linalg-to-gpu | FileCheck %s --check-prefix=KERNELS

// CHECK-DAG: @pipe_kernels_binary = internal constant [{{[0-9]+}} x i8] c"\7FELF
// CHECK-DAG: @pipe_program_manifest = constant
// CHECK-DAG: declare void @pipe_rt_cuda_gemm(ptr, ptr, ptr, ptr, ptr, ptr, ptr, i32)
// CHECK-DAG: define void @pipe_fn_prologue(ptr
// CHECK-DAG: define void @pipe_fn_layer(ptr
// CHECK-DAG: define void @pipe_fn_layer_bwd_input(ptr
// CHECK-DAG: define void @pipe_fn_layer_bwd_weight(ptr
// CHECK-DAG: define void @pipe_fn_epilogue(ptr
// CHECK-DAG: define i32 @pipe_device_0_0(ptr
// CHECK-DAG: define i32 @pipe_device_0_1(ptr
// CHECK-DAG: call void @mgpuLaunchKernel(
// CHECK-DAG: call void @pipe_rt_cuda_gemm(

// The object defines the program's exports and imports only the runtime:
// the mgpu* ABI, the CUDA GEMM and the schedule actions.
// SYMS-DAG: T pipe_fn_layer
// SYMS-DAG: R pipe_program_manifest
// SYMS-DAG: R pipe_program_abi_version
// SYMS-DAG: T pipe_device_0_0
// SYMS-DAG: U mgpuLaunchKernel
// SYMS-DAG: U mgpuModuleLoad
// SYMS-DAG: U mgpuMemAlloc
// SYMS-DAG: U pipe_rt_cuda_gemm
// SYMS-DAG: U pipe_rt_act_forward
// No host allocation or host copy is left in block code.
// NOHOST-NOT: _mlir_memref_to_llvm_alloc
// NOHOST-NOT: {{ U (malloc|free)$}}
// NOHOST-NOT: memrefCopy

// KERNELS-LABEL: func.func @pipe_block_layer(
// KERNELS:         gpu.all_reduce add
// KERNELS-LABEL: func.func @pipe_block_layer_bwd_weight(
// KERNELS:         gpu.all_reduce add
