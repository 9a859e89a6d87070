// REQUIRES: cuda-toolkit
//
// The hand-written PTX of the CUDA backend's bf16 conversion kernels
// (lib/Runtime/CUDA/Bf16Kernels.ptx, embedded into PipeRuntimeCUDA and
// loaded with cuModuleLoadData on the GPU) assembles for sm_90 with the
// toolkit's ptxas, with both entry points. Needs ptxas, not a
// GPU; the kernels' results are checked against the host rounding by
// PipeRuntimeCUDATests (Cuda.Bf16KernelsMatchHostRounding) on a GPU.
//
// RUN: /usr/local/cuda/bin/ptxas -arch=sm_90 -v %pipe_src_root/lib/Runtime/CUDA/Bf16Kernels.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: test -s %t.cubin

// CHECK-DAG: Compiling entry function 'pipe_rt_narrow_bf16' for 'sm_90'
// CHECK-DAG: Compiling entry function 'pipe_rt_widen_bf16' for 'sm_90'
