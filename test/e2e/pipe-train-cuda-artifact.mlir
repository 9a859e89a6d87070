// REQUIRES: cuda-toolkit
//
// pipe-train --target cuda: the trainer's compile half for the GPU machine.
// It writes the CUDA-lowered program (object and shared library with the
// sm_90 cubin), the same program lowered for the host as the reference
// (cpu.so, trained here by scripts/gpu-check prepare), the initial weights
// and the training arguments. Needs ptxas, not a GPU.
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: pipe-train --layers 2 --d-model 32 --heads 2 --ff 64 --seq 16 --batch 2 --microbatches 1 --devices 2 --target cuda --artifact %t/case --compile-only -O 0 --steps 3 | FileCheck %s
// RUN: ls %t/case | FileCheck %s --check-prefix=FILES
// RUN: cat %t/case/args | FileCheck %s --check-prefix=ARGS
// RUN: llvm-nm %t/case/program.o | FileCheck %s --check-prefix=NM
// RUN: pipe-runner %t/case/cpu.so --weights %t/case/weights.safetensors --steps 3 --log-every 1 | FileCheck %s --check-prefix=CPU
// RUN: not pipe-train --target cuda --compile-only 2>&1 | FileCheck %s --check-prefix=NODIR
//
// L2L with two devices on one parameter server lowers its ps.reduce to the
// runtime's entry point for the GPU too.
// RUN: pipe-train --schedule l2l --data-parallel 2 --layers 2 --d-model 32 --heads 2 --ff 64 --seq 16 --batch 2 --microbatches 1 --target cuda --artifact %t/dp --compile-only -O 0 --steps 3 > /dev/null
// RUN: llvm-nm %t/dp/program.o | FileCheck %s --check-prefix=NM-DP
//
// Two data-parallel replicas of a 2-device pipeline sum their gradients
// with the bucketed all-reduce of the transport ABI.
// RUN: pipe-train --data-parallel 2 --devices 2 --layers 2 --d-model 32 --heads 2 --ff 64 --seq 16 --batch 2 --microbatches 1 --target cuda --artifact %t/buckets --compile-only -O 0 --steps 3 > /dev/null
// RUN: llvm-nm %t/buckets/program.o | FileCheck %s --check-prefix=NM-BUCKETS
//
// With --ranks the command for the GPU machine runs the program as MPI ranks
// (pipe-runner-cuda stages transfers across ranks through host memory).
// RUN: pipe-train --ranks 4 --data-parallel 2 --devices 2 --layers 2 --d-model 32 --heads 2 --ff 64 --seq 16 --batch 2 --microbatches 1 --target cuda --artifact %t/ranks --compile-only -O 0 --steps 3 | FileCheck %s --check-prefix=RANKS
// RANKS: train it there: cd {{.*}}ranks && mpirun -np 4 pipe-runner-cuda ./program.so --weights weights.safetensors $(cat args) --transport mpi --data-parallel 2
// RANKS-NOT: --transport nccl
//
// With --peer-order the schedules suit NCCL between processes too.
// RUN: pipe-train --ranks 2 --devices 2 --stages-per-device 2 --peer-order --layers 4 --d-model 32 --heads 2 --ff 64 --seq 16 --batch 2 --microbatches 2 --target cuda --artifact %t/nccl --compile-only -O 0 --steps 3 --emit-scheduled %t/nccl.mlir | FileCheck %s --check-prefix=NCCL
// RUN: pipe-opt %t/nccl.mlir --pipe-verify-schedule=peer-order -o /dev/null
// NCCL: train it there: cd {{.*}}nccl && mpirun -np 2 pipe-runner-cuda ./program.so --weights weights.safetensors $(cat args) --transport mpi --data-parallel 1
// NCCL-NEXT: or with the transfers between the ranks' GPUs through NCCL (never run yet): the same with --transport nccl
// NM-BUCKETS-DAG: U pipe_rt_comm_allreduce_start
// NM-BUCKETS-DAG: U pipe_rt_comm_bucket_buffer

// CHECK: == CUDA artifact in {{.*}}case: program.o/.so (sm_90, GEMMs f32), cpu.so (reference), weights.safetensors, args
// CHECK: train it there: cd {{.*}}case && pipe-runner-cuda ./program.so --weights weights.safetensors $(cat args){{$}}

// FILES-DAG: args
// FILES-DAG: cpu.so
// FILES-DAG: program.o
// FILES-DAG: program.so
// FILES-DAG: weights.safetensors

// ARGS: --steps 3

// NM-DAG: U mgpuLaunchKernel
// NM-DAG: U pipe_rt_act_forward
// NM-DAG: T pipe_device_0_0
// NM-DAG: T pipe_device_0_1

// CPU: step 3/3

// NM-DP-DAG: U pipe_rt_act_ps_reduce
// NM-DP-DAG: U pipe_rt_act_ps_update

// NODIR: --target cuda needs --artifact DIR
