// The whole host pipeline (--pipe-lower-to-host, then --pipe-host-to-llvm:
// bufferization with read-only arguments and ownership-based deallocation,
// contractions to the runtime's BLAS GEMM, the rest to loops, packed entry
// points) on a differentiated two-stage model: everything ends in the LLVM
// dialect with the symbols of include/pipe/Runtime/Program.h.
//
// RUN: pipe-opt %s --pipe-differentiate --pipe-lower-to-host --pipe-host-to-llvm | FileCheck %s
// RUN: pipe-opt %s --pipe-differentiate --pipe-lower-to-host --pipe-host-to-llvm | FileCheck %s --check-prefix=NOLEFT
// RUN: pipe-opt %s --pipe-differentiate --pipe-lower-to-host --pipe-host-to-llvm | FileCheck %s --check-prefix=VECTOR
// RUN: pipe-opt %s --pipe-differentiate --pipe-lower-to-host '--pipe-host-to-llvm=vectorize=false' | FileCheck %s --check-prefix=SCALAR

// Nothing but the LLVM dialect is left.
// NOLEFT-NOT: {{ (func|memref|linalg|tensor|bufferization|arith|cf|scf|pipe)\.[a-z_]+}}
// NOLEFT-NOT: unrealized_conversion_cast

// Allocation goes through the generic hooks the runtime charges to the
// running device (finalize-memref-to-llvm{use-generic-functions}), never malloc.
// CHECK-DAG: llvm.func @_mlir_memref_to_llvm_alloc(i64) -> !llvm.ptr
// CHECK-DAG: llvm.func @_mlir_memref_to_llvm_free(!llvm.ptr)
// CHECK-DAG: llvm.func @pipe_rt_gemm_f32(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr)
// Forward matmul x[4x8] @ w[8x8].
// CHECK-DAG: llvm.mlir.global private constant @{{__pipe_gemm_shape_[0-9]+}}(dense<[1, 4, 8, 8, 0, 8, 1, 0, 8, 1, 0, 8, 1]> : tensor<13xi64>)
// Input gradient: w[k, j] * dy[i, j] summed over j, written to dx[i, k]
// (C column-major in the m = k, n = i view).
// CHECK-DAG: llvm.mlir.global private constant @{{__pipe_gemm_shape_[0-9]+}}(dense<[1, 8, 4, 8, 0, 8, 1, 0, 1, 8, 0, 1, 8]> : tensor<13xi64>)
// Weight gradient: x[i, k] * dy[i, j] summed over the 4 rows.
// CHECK-DAG: llvm.mlir.global private constant @{{__pipe_gemm_shape_[0-9]+}}(dense<[1, 8, 8, 4, 0, 1, 8, 0, 8, 1, 0, 8, 1]> : tensor<13xi64>)
// CHECK-DAG: llvm.mlir.global external constant @pipe_program_manifest("pipe-program 5\0Atype 0 f32 2 8 8\0A{{.*}}\0Aend\0A\00")
// CHECK-DAG: llvm.mlir.global external constant @pipe_program_abi_version(4 : i32)

// The loss's sum of squares (rows of 8) is a vector reduction, reassociated
// (pipe-linalg-to-vector); with vectorize=false, scalar loops.
// VECTOR-LABEL: llvm.func @pipe_block_mse_head(
// VECTOR:         llvm.load {{.*}} -> vector<8xf32>
// VECTOR:         "llvm.intr.vector.reduce.fadd"({{.*}}) <{fastmathFlags = #llvm.fastmath<reassoc>}> : (f32, vector<8xf32>) -> f32
// VECTOR-LABEL: llvm.func @_mlir_ciface_pipe_block_mse_head(
// SCALAR-LABEL: llvm.func @pipe_block_mse_head(
// SCALAR-NOT:     vector
// SCALAR-LABEL: llvm.func @_mlir_ciface_pipe_block_mse_head(

// A forward block: results allocated through the hook (the runtime takes
// ownership), the matmul a GEMM call, the ReLU a loop nest.
// CHECK-LABEL: llvm.func @pipe_block_linear_relu(
// CHECK:         llvm.call @_mlir_memref_to_llvm_alloc
// CHECK:         llvm.call @pipe_rt_gemm_f32
// CHECK:         llvm.cond_br
// CHECK:         llvm.return
// CHECK-LABEL: llvm.func @_mlir_ciface_pipe_block_linear_relu(
// CHECK-SAME:    %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr)
// CHECK-LABEL: llvm.func @pipe_fn_linear_relu(
// CHECK-SAME:    %{{.*}}: !llvm.ptr) {
// CHECK:         llvm.call @_mlir_ciface_pipe_block_linear_relu(
// A temporary of the backward (the masked cotangent) is freed in the block.
// CHECK-LABEL: llvm.func @pipe_block_linear_relu_bwd_input(
// CHECK:         llvm.call @pipe_rt_gemm_f32
// CHECK:         llvm.call @_mlir_memref_to_llvm_free
// CHECK-LABEL: llvm.func @pipe_fn_linear_relu_bwd_input(
// CHECK-LABEL: llvm.func @pipe_fn_linear_relu_bwd_weight(
// CHECK-LABEL: llvm.func @pipe_fn_mse_head(
// CHECK-LABEL: llvm.func @pipe_fn_mse_head_bwd_input(
// CHECK-LABEL: llvm.func @pipe_fn_mse_head_bwd_weight(

// Device programs: calls into the runtime, the first failure returned.
// CHECK-LABEL: llvm.func @pipe_device_0_0(
// CHECK-SAME:    %{{.*}}: !llvm.ptr) -> i32 {
// CHECK:         llvm.call @pipe_rt_act_forward
// CHECK:         llvm.call @pipe_rt_comm_send_buffer
// CHECK:         llvm.load
// CHECK:         llvm.call @pipe_rt_comm_send
// CHECK:         llvm.call @pipe_rt_comm_recv_buffer
// CHECK:         llvm.call @pipe_rt_comm_recv
// CHECK:         llvm.call @pipe_rt_act_wait
// CHECK:         llvm.call @pipe_rt_act_backward
// CHECK:         llvm.call @pipe_rt_act_update
// CHECK:         llvm.return %{{.*}} : i32
// CHECK-DAG:   llvm.func @pipe_rt_act_forward(!llvm.ptr, i32, i32, i32, i32, i32, i32) -> i32
// CHECK-DAG:   llvm.func @pipe_rt_comm_send(!llvm.ptr, !llvm.ptr, i64, i32, i32) -> i64
// CHECK-DAG:   llvm.func @pipe_rt_act_wait(!llvm.ptr, i64) -> i32
// CHECK-LABEL: llvm.func @pipe_device_0_1(
// CHECK:         llvm.call @pipe_rt_act_recompute

pipe.param @w0 : tensor<8x8xf32> = dense<0.125>
pipe.param @w1 : tensor<8x8xf32> = dense<0.25>
pipe.param @w2 : tensor<8x8xf32> = dense<0.5>

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
  %scale = arith.constant 0.03125 : f32
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
    %scaled = arith.mulf %sq, %scale : f32
    %acc2 = arith.addf %s, %scaled : f32
    linalg.yield %acc2 : f32
  } -> tensor<f32>
  pipe.return %sum : tensor<f32>
}

pipe.graph @model(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<f32> {
  %h0 = pipe.run "l0" @linear_relu(%x) params [@w0]
      : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %h1 = pipe.run "l1" @linear_relu(%h0) params [@w1]
      : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %loss = pipe.run "head" @mse_head(%h1, %y) params [@w2]
      : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<f32>
  pipe.return %loss : tensor<f32>
}

pipe.placement @two graph @model devices 2 {
  pipe.stage @s0 device 0 blocks ["l0"]
  pipe.stage @s1 device 1 blocks ["l1", "head"]
}

pipe.schedule @onefoneb placement @two kind "1f1b" microbatches 2 {
  pipe.device 0 {
    pipe.forward @s0 mb 0
    %a0 = pipe.send activation @s0 -> @s1 mb 0 payload [tensor<4x8xf32>]
    pipe.forward @s0 mb 1
    %a1 = pipe.send activation @s0 -> @s1 mb 1 payload [tensor<4x8xf32>]
    %g0 = pipe.recv gradient @s1 -> @s0 mb 0 payload [tensor<4x8xf32>]
    pipe.wait %g0
    pipe.backward @s0 mb 0
    %g1 = pipe.recv gradient @s1 -> @s0 mb 1 payload [tensor<4x8xf32>]
    pipe.wait %g1
    pipe.backward.input @s0 mb 1
    pipe.backward.weight @s0 mb 1
    pipe.wait %a0, %a1
    pipe.update @s0
  }
  pipe.device 1 {
    %r0 = pipe.recv activation @s0 -> @s1 mb 0 payload [tensor<4x8xf32>]
    pipe.wait %r0
    pipe.forward @s1 mb 0
    pipe.recompute @s1 mb 0
    pipe.backward @s1 mb 0
    %g0 = pipe.send gradient @s1 -> @s0 mb 0 payload [tensor<4x8xf32>]
    %r1 = pipe.recv activation @s0 -> @s1 mb 1 payload [tensor<4x8xf32>]
    pipe.wait %r1
    pipe.forward @s1 mb 1
    pipe.backward @s1 mb 1
    %g1 = pipe.send gradient @s1 -> @s0 mb 1 payload [tensor<4x8xf32>]
    pipe.wait %g0, %g1
    pipe.update @s1
  }
}
