// The lowering of a data-parallel schedule (2 replicas of a 2-device 1F1B
// pipeline, as --pipe-place and --pipe-schedule write it), in the transport
// ABI (pipe/Runtime/Comm.h). A pipe.reduce_bucket is a buffer query naming
// the bucket's param ids (a constant array) and an all-reduce that starts
// it and returns a token, waited on before the update; its message is the
// bucket's element count and dtype (w0 and w1, 8x8 f32 each: 128 elements
// of PIPE_RT_DTYPE_F32 = 1). With reduce-bucket-bytes=0, every
// pipe.reduce_grad is a buffer query of the param's gradient and a
// blocking all-reduce.
//
// RUN: pipe-opt %s --pipe-differentiate "--pipe-place=devices=2 replicas=2" "--pipe-schedule=kind=1f1b microbatches=2" --pipe-verify-schedule --pipe-lower-to-host --canonicalize | FileCheck %s
// RUN: pipe-opt %s --pipe-differentiate "--pipe-place=devices=2 replicas=2" "--pipe-schedule=kind=1f1b microbatches=2 reduce-bucket-bytes=0" --pipe-verify-schedule --pipe-lower-to-host --canonicalize | FileCheck %s --check-prefix=BLOCKING

// CHECK:       replicas 0 2
// Device 0 holds w0 and w1 (stage s0): one bucket after its last backward.
// CHECK-LABEL: func.func @pipe_device_0_0(
// CHECK-SAME:    %[[CTX:.*]]: !llvm.ptr) -> i32
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-DAG:     %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-DAG:     %[[TWO:.*]] = arith.constant 2 : i32
// CHECK-DAG:     %[[N128:.*]] = arith.constant 128 : i64
// CHECK-DAG:     %[[IDS:.*]] = llvm.mlir.addressof @pipe_device_0_0_bucket_0
// CHECK:         %[[COMM:.*]] = call @pipe_rt_comm_of(%[[CTX]])
// CHECK-NEXT:    %[[SLOT:.*]] = llvm.alloca
// CHECK:         call @pipe_rt_act_backward(%[[CTX]], %[[ZERO]], %[[ONE]], %[[ZERO]],
// CHECK:         call @pipe_rt_comm_bucket_buffer(%[[CTX]], %[[IDS]], %[[TWO]], %[[ZERO]], %[[SLOT]]) : (!llvm.ptr, !llvm.ptr, i32, i32, !llvm.ptr) -> i32
// CHECK:         %[[B:.*]] = llvm.load %[[SLOT]]
// CHECK-NEXT:    %[[T:.*]] = call @pipe_rt_comm_allreduce_start(%[[COMM]], %[[B]], %[[N128]], %[[ONE]]) : (!llvm.ptr, !llvm.ptr, i64, i32) -> i64
// CHECK:         call @pipe_rt_act_wait(%[[CTX]], %[[T]])
// CHECK-NOT:     call @pipe_rt_comm
// CHECK:         call @pipe_rt_act_update(%[[CTX]], %[[ZERO]], %[[ZERO]])
// CHECK:       llvm.mlir.global internal constant @pipe_device_0_0_bucket_0(dense<[0, 1]> : tensor<2xi32>)
// CHECK:       func.func private @pipe_rt_comm_bucket_buffer(!llvm.ptr, !llvm.ptr, i32, i32, !llvm.ptr) -> i32
// CHECK:       func.func private @pipe_rt_comm_allreduce_start(!llvm.ptr, !llvm.ptr, i64, i32) -> i64
// Device 1 holds w2 (stage s1).
// CHECK-LABEL: func.func @pipe_device_0_1(
// CHECK:         call @pipe_rt_comm_bucket_buffer(
// CHECK:         call @pipe_rt_comm_allreduce_start(
// CHECK:         call @pipe_rt_act_update(
// CHECK:       llvm.mlir.global internal constant @pipe_device_0_1_bucket_0(dense<2> : tensor<1xi32>)

// BLOCKING:       replicas 0 2
// Device 0: one all-reduce each of w0 and w1, in param order.
// BLOCKING-LABEL: func.func @pipe_device_0_0(
// BLOCKING-SAME:    %[[CTX:.*]]: !llvm.ptr) -> i32
// BLOCKING-DAG:     %[[ZERO:.*]] = arith.constant 0 : i32
// BLOCKING-DAG:     %[[ONE:.*]] = arith.constant 1 : i32
// BLOCKING-DAG:     %[[N64:.*]] = arith.constant 64 : i64
// BLOCKING:         %[[COMM:.*]] = call @pipe_rt_comm_of(%[[CTX]])
// BLOCKING-NEXT:    %[[SLOT:.*]] = llvm.alloca
// BLOCKING:         call @pipe_rt_comm_grad_buffer(%[[CTX]], %[[ZERO]], %[[ZERO]], %[[SLOT]]) : (!llvm.ptr, i32, i32, !llvm.ptr) -> i32
// BLOCKING:         %[[G0:.*]] = llvm.load %[[SLOT]]
// BLOCKING-NEXT:    call @pipe_rt_comm_allreduce(%[[COMM]], %[[G0]], %[[N64]], %[[ONE]]) : (!llvm.ptr, !llvm.ptr, i64, i32) -> i32
// BLOCKING:         call @pipe_rt_comm_grad_buffer(%[[CTX]], %[[ONE]], %[[ZERO]], %[[SLOT]])
// BLOCKING:         %[[G1:.*]] = llvm.load %[[SLOT]]
// BLOCKING-NEXT:    call @pipe_rt_comm_allreduce(%[[COMM]], %[[G1]], %[[N64]], %[[ONE]])
// BLOCKING-NOT:     call @pipe_rt_comm
// BLOCKING:         call @pipe_rt_act_update(%[[CTX]], %[[ZERO]], %[[ZERO]])
// BLOCKING:       func.func private @pipe_rt_comm_grad_buffer(!llvm.ptr, i32, i32, !llvm.ptr) -> i32
// BLOCKING:       func.func private @pipe_rt_comm_allreduce(!llvm.ptr, !llvm.ptr, i64, i32) -> i32
// Device 1 holds w2 (stage s1).
// BLOCKING-LABEL: func.func @pipe_device_0_1(
// BLOCKING-SAME:    %[[CTX:.*]]: !llvm.ptr) -> i32
// BLOCKING-DAG:     %[[ZERO:.*]] = arith.constant 0 : i32
// BLOCKING-DAG:     %[[ONE:.*]] = arith.constant 1 : i32
// BLOCKING-DAG:     %[[TWO:.*]] = arith.constant 2 : i32
// BLOCKING-DAG:     %[[N64:.*]] = arith.constant 64 : i64
// BLOCKING:         %[[COMM:.*]] = call @pipe_rt_comm_of(%[[CTX]])
// BLOCKING:         call @pipe_rt_comm_grad_buffer(%[[CTX]], %[[TWO]], %[[ZERO]], %{{.*}})
// BLOCKING:         call @pipe_rt_comm_allreduce(%[[COMM]], %{{.*}}, %[[N64]], %[[ONE]])
// BLOCKING-NOT:     call @pipe_rt_comm
// BLOCKING:         call @pipe_rt_act_update(%[[CTX]], %[[ONE]], %[[ZERO]])

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

