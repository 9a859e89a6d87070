// REQUIRES: cuda-toolkit
//
// The CUDA lowering of a data-parallel schedule (2 replicas of a 2-device
// 1F1B pipeline) calls the same transport ABI as the host back end: each
// device's bucket of gradients is packed by pipe_rt_comm_bucket_buffer
// (its param ids in a constant array) after the device's last backward,
// its all-reduce started by pipe_rt_comm_allreduce_start (between ranks
// over NCCL: an ncclAllReduce of the bucket packed in device memory,
// docs/distributed.md "Buckets summed by the transport") and waited on
// before the update; the
// activations and gradients between the devices go through grouped
// sends and recvs. Needs ptxas, not a GPU.
//
// RUN: pipe-opt %S/../../Conversion/PipeToHost/pipe-lower-to-host-data-parallel.mlir --pipe-differentiate "--pipe-place=devices=2 replicas=2" "--pipe-schedule=kind=1f1b microbatches=2" --pipe-verify-schedule --pipe-lower-to-host --pipe-host-to-cuda | mlir-translate --mlir-to-llvmir | FileCheck %s

// CHECK-DAG: @pipe_device_0_0_bucket_0 = internal constant [2 x i32] [i32 0, i32 1]
// CHECK-DAG: @pipe_device_0_1_bucket_0 = internal constant [1 x i32] [i32 2]
// CHECK-LABEL: define i32 @pipe_device_0_0(ptr %0)
// CHECK:         %[[COMM:.*]] = call ptr @pipe_rt_comm_of(ptr %0)
// CHECK:         call i64 @pipe_rt_comm_send(ptr %[[COMM]],
// CHECK:         call i32 @pipe_rt_act_backward(ptr %0, i32 0, i32 1, i32 0,
// CHECK:         call i32 @pipe_rt_comm_bucket_buffer(ptr %0, ptr @pipe_device_0_0_bucket_0, i32 2, i32 0, ptr %[[SLOT:.*]])
// CHECK:         %[[B:.*]] = load ptr, ptr %[[SLOT]]
// CHECK:         %[[T:.*]] = call i64 @pipe_rt_comm_allreduce_start(ptr %[[COMM]], ptr %[[B]], i64 128, i32 1)
// CHECK:         call i32 @pipe_rt_act_wait(ptr %0, i64 %[[T]])
// CHECK:         call i32 @pipe_rt_act_update(ptr %0, i32 0, i32 0)
// CHECK-LABEL: define i32 @pipe_device_0_1(ptr %0)
// CHECK:         call i32 @pipe_rt_comm_group_start(
// CHECK:         call i64 @pipe_rt_comm_send(
// CHECK:         call i64 @pipe_rt_comm_recv(
// CHECK:         call i32 @pipe_rt_comm_group_end(
// CHECK:         call i32 @pipe_rt_comm_bucket_buffer(ptr %0, ptr @pipe_device_0_1_bucket_0, i32 1, i32 0,
// CHECK:         call i64 @pipe_rt_comm_allreduce_start(
// CHECK:         call i32 @pipe_rt_act_update(ptr %0, i32 1, i32 0)
