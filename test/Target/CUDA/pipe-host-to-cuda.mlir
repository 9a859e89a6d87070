// REQUIRES: cuda-toolkit
//
// The CUDA lowering (--pipe-lower-to-host, then --pipe-host-to-cuda) of a
// differentiated two-stage model, down to LLVM IR: the block functions keep
// their packed C entries but run on the GPU (kernels in one embedded cubin,
// launched on the block's stream; device memory through mgpuMemAlloc; the
// matmuls through the runtime's cuBLAS entry); the device programs and the
// manifest are the host back end's. Needs ptxas, not a GPU.
//
// RUN: pipe-opt %s --pipe-differentiate --pipe-lower-to-host --pipe-host-to-cuda | FileCheck %s --check-prefix=MLIR
// RUN: pipe-opt %s --pipe-differentiate --pipe-lower-to-host --pipe-host-to-cuda | FileCheck %s --check-prefix=NOLEFT
// RUN: pipe-opt %s --pipe-differentiate --pipe-lower-to-host --pipe-host-to-cuda | FileCheck %s --check-prefix=BIN
// RUN: pipe-opt %s --pipe-differentiate --pipe-lower-to-host --pipe-host-to-cuda | mlir-translate --mlir-to-llvmir | FileCheck %s
// RUN: pipe-opt %s --pipe-differentiate --pipe-lower-to-host "--pipe-host-to-cuda=chip=sm_80 gemm-precision=tf32" | FileCheck %s --check-prefix=OPTS

// Only the LLVM dialect is left, plus the kernels' binary and their launches
// (which mlir-translate turns into mgpu* calls).
// NOLEFT-NOT: {{ (func|memref|linalg|tensor|bufferization|arith|cf|scf|pipe|math)\.[a-z_]+}}
// NOLEFT-NOT: unrealized_conversion_cast
// NOLEFT-NOT: gpu.module
// No host allocation is left in block code: everything is device memory.
// NOLEFT-NOT: _mlir_memref_to_llvm_alloc
// NOLEFT-NOT: @malloc

// One gpu.binary holding a cubin (ELF) for sm_90.
// BIN: gpu.binary @pipe_kernels [#gpu.object<#nvvm.target<O = 3, chip = "sm_90">, {{.*}}bin = "\7FELF
// BIN-NOT: gpu.binary
// MLIR: llvm.func @pipe_rt_cuda_gemm(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i32)
// MLIR-LABEL: llvm.func @pipe_block_linear_relu(
// MLIR:         %[[S:.*]] = llvm.call @mgpuStreamCreate()
// MLIR:         llvm.call @mgpuMemAlloc(%{{.*}}, %[[S]], %{{.*}})
// MLIR:         gpu.launch_func <%[[S]] : !llvm.ptr> @pipe_kernels::@pipe_block_linear_relu_kernel blocks
// MLIR:         llvm.call @pipe_rt_cuda_gemm(
// MLIR:         gpu.launch_func <%[[S]] : !llvm.ptr> @pipe_kernels::@pipe_block_linear_relu_kernel_0 blocks
// MLIR:         llvm.call @mgpuStreamSynchronize(
// MLIR:         llvm.call @mgpuStreamDestroy(
// MLIR:         llvm.return

// OPTS: #nvvm.target<O = 3, chip = "sm_80">
// OPTS: %[[TF32:.*]] = llvm.mlir.constant(1 : i32) : i32
// OPTS: llvm.call @pipe_rt_cuda_gemm({{.*}}, %[[TF32]])

// The cubin is loaded by a constructor and launched by name.
// CHECK-DAG: @pipe_kernels_binary = internal constant [{{[0-9]+}} x i8] c"\7FELF
// CHECK-DAG: @llvm.global_ctors = appending global {{.*}} [{ i32, ptr, ptr } { i32 123, ptr @pipe_kernels_load, ptr null }]
// CHECK-DAG: @pipe_program_manifest = constant [{{[0-9]+}} x i8] c"pipe-program 5\0A
// CHECK-DAG: @pipe_program_abi_version = constant i32 4
// CHECK-DAG: declare void @pipe_rt_cuda_gemm(ptr, ptr, ptr, ptr, ptr, ptr, ptr, i32)

// A forward block: results in device memory, kernels and the GEMM queued
// on one stream, synchronized before returning.
// CHECK-LABEL: define { {{.*}} } @pipe_block_linear_relu(
// CHECK:         %[[S:.*]] = call ptr @mgpuStreamCreate()
// CHECK:         call ptr @mgpuMemAlloc(i64 128, ptr %[[S]], i8 0)
// CHECK:         call ptr @mgpuModuleGetFunction(ptr %{{.*}}, ptr @pipe_kernels_pipe_block_linear_relu_kernel_name)
// CHECK:         call void @mgpuLaunchKernel(ptr %{{.*}}, i64 1, i64 1, i64 1, i64 32, i64 1, i64 1, i32 0, ptr %[[S]],
// CHECK:         call void @pipe_rt_cuda_gemm(ptr %{{.*}}, ptr %{{.*}}, ptr %{{.*}}, ptr @__pipe_gemm_shape_{{[0-9]+}}, {{.*}}, i32 0)
// CHECK:         call void @mgpuLaunchKernel({{.*}}, ptr %[[S]],
// CHECK:         call void @mgpuStreamSynchronize(ptr %[[S]])
// CHECK:         call void @mgpuStreamDestroy(ptr %[[S]])
// The packed entry the runtime calls is unchanged.
// CHECK-LABEL: define void @pipe_fn_linear_relu(ptr %0)
// CHECK:         call void @_mlir_ciface_pipe_block_linear_relu(

// The loss block's 4x8 sum is one block of 32 threads and an all-reduce.
// CHECK-LABEL: define { {{.*}} } @pipe_block_mse_head(
// CHECK:         call void @mgpuLaunchKernel(ptr %{{.*}}, i64 1, i64 1, i64 1, i64 32, i64 1, i64 1, i32 0,
// CHECK-LABEL: define void @pipe_fn_mse_head(
// CHECK-LABEL: define void @pipe_fn_mse_head_bwd_input(

// Device programs stay host code calling the runtime; their transfers are
// the transport ABI's calls (pipe/Runtime/Comm.h): device 0's send of the
// activation and recv of the gradient (32 f32 each, peer device 1) are
// issued in a row, so they form one group.
// CHECK-LABEL: define i32 @pipe_device_0_0(ptr %0)
// CHECK:         %[[COMM:.*]] = call ptr @pipe_rt_comm_of(ptr %0)
// CHECK:         %[[SLOT:.*]] = alloca ptr
// CHECK:         call i32 @pipe_rt_act_forward(
// CHECK:         call i32 @pipe_rt_comm_group_start(ptr %[[COMM]])
// CHECK:         call i32 @pipe_rt_comm_send_buffer(ptr %0, i32 0, i32 0, i32 1, i32 0, i32 0, ptr %[[SLOT]])
// CHECK:         %[[SB:.*]] = load ptr, ptr %[[SLOT]]
// CHECK:         call i64 @pipe_rt_comm_send(ptr %[[COMM]], ptr %[[SB]], i64 32, i32 1, i32 1)
// CHECK:         call i32 @pipe_rt_comm_recv_buffer(ptr %0, i32 1, i32 1, i32 0, i32 0, i32 0, ptr %[[SLOT]])
// CHECK:         %[[RB:.*]] = load ptr, ptr %[[SLOT]]
// CHECK:         call i64 @pipe_rt_comm_recv(ptr %[[COMM]], ptr %[[RB]], i64 32, i32 1, i32 1)
// CHECK:         call i32 @pipe_rt_comm_group_end(ptr %[[COMM]])
// CHECK:         call i32 @pipe_rt_act_wait(
// CHECK-LABEL: define i32 @pipe_device_0_1(ptr %0)
// A lone recv and a lone send: no group.
// CHECK-NOT:     @pipe_rt_comm_group_start
// CHECK:         call i64 @pipe_rt_comm_recv(ptr %{{.*}}, ptr %{{.*}}, i64 32, i32 1, i32 0)
// CHECK:         call i32 @pipe_rt_act_backward(
// CHECK:         call i64 @pipe_rt_comm_send(ptr %{{.*}}, ptr %{{.*}}, i64 32, i32 1, i32 0)
// CHECK-NOT:     @pipe_rt_comm_group_end
// CHECK:         ret i32

// CHECK-LABEL: define internal void @pipe_kernels_load()
// CHECK:         call ptr @mgpuModuleLoad(ptr @pipe_kernels_binary, i64 {{[0-9]+}})

pipe.param @w0 : tensor<8x8xf32> = dense<0.125>
pipe.param @w1 : tensor<8x8xf32> = dense<0.5>

pipe.block @linear_relu params(%w: tensor<8x8xf32>) (%x: tensor<4x8xf32>)
    -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<4x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<4x8xf32>) -> tensor<4x8xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x8xf32>)
                      outs(%acc : tensor<4x8xf32>) -> tensor<4x8xf32>
  %relu = linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%mm : tensor<4x8xf32>) outs(%init : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  pipe.return %relu : tensor<4x8xf32>
}

pipe.block @mse_head params(%w: tensor<8x8xf32>)
    (%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %init = tensor.empty() : tensor<4x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<4x8xf32>) -> tensor<4x8xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x8xf32>)
                      outs(%acc : tensor<4x8xf32>) -> tensor<4x8xf32>
  %sum_init = tensor.empty() : tensor<f32>
  %sum0 = linalg.fill ins(%zero : f32) outs(%sum_init : tensor<f32>) -> tensor<f32>
  %sum = linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>,
                       affine_map<(i, j) -> ()>],
      iterator_types = ["reduction", "reduction"]}
      ins(%mm, %y : tensor<4x8xf32>, tensor<4x8xf32>) outs(%sum0 : tensor<f32>) {
  ^bb0(%p: f32, %t: f32, %s: f32):
    %d = arith.subf %p, %t : f32
    %sq = arith.mulf %d, %d : f32
    %h = arith.mulf %sq, %half : f32
    %s2 = arith.addf %s, %h : f32
    linalg.yield %s2 : f32
  } -> tensor<f32>
  pipe.return %sum : tensor<f32>
}

pipe.graph @model(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<f32> {
  %h = pipe.run "l0" @linear_relu(%x) params [@w0]
      : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %loss = pipe.run "head" @mse_head(%h, %y) params [@w1]
      : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<f32>
  pipe.return %loss : tensor<f32>
}

pipe.placement @two graph @model devices 2 {
  pipe.stage @s0 device 0 blocks ["l0"]
  pipe.stage @s1 device 1 blocks ["head"]
}

pipe.schedule @gpipe placement @two kind "gpipe" microbatches 1 {
  pipe.device 0 {
    pipe.forward @s0 mb 0
    %a = pipe.send activation @s0 -> @s1 mb 0 payload [tensor<4x8xf32>]
    %g = pipe.recv gradient @s1 -> @s0 mb 0 payload [tensor<4x8xf32>]
    pipe.wait %a, %g
    pipe.backward @s0 mb 0
    pipe.update @s0
  }
  pipe.device 1 {
    %r = pipe.recv activation @s0 -> @s1 mb 0 payload [tensor<4x8xf32>]
    pipe.wait %r
    pipe.forward @s1 mb 0
    pipe.backward @s1 mb 0
    %g = pipe.send gradient @s1 -> @s0 mb 0 payload [tensor<4x8xf32>]
    pipe.wait %g
    pipe.update @s1
  }
}
