//===- CUDA.h - The pipe runtime on NVIDIA GPUs ------------------*- C -*-===//
//
// C ABI of PipeRuntimeCUDA (lib/Runtime/CUDA, built when the CUDA toolkit is
// found): what code lowered with --pipe-host-to-cuda imports besides
// Program.h, and what runners call to run a session's programs on GPUs.
// Block functions then run on the GPU: their memref buffers are device
// pointers, their kernels launch through the mgpu* functions below (the ABI
// MLIR's gpu-to-llvm lowering emits), their matmuls call pipe_rt_cuda_gemm.
// Design, building on the GPU machine and limits: docs/cuda-runtime.md.
//
// Plain C; needs no CUDA header (CUDA handles are opaque pointers here).
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_RUNTIME_CUDA_H
#define PIPE_RUNTIME_CUDA_H

#include "pipe/Runtime/Program.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

//===----------------------------------------------------------------------===//
// Devices and sessions
//===----------------------------------------------------------------------===//

/// Number of usable GPUs: 0 when there is no driver, cuInit fails (the
/// driver stub of a machine without a GPU) or no device exists; the reason
/// then goes to `error` (may be null).
int pipe_rt_cuda_device_count(char *error, size_t error_size);

/// Runs every later pipe_rt_session_run of `session` on GPUs. `device_map`
/// (null or "" for the default) gives the GPU ordinal of each logical device
/// of the schedules, comma-separated ("0,0,1"); logical devices beyond the
/// list, and all of them by default, go to GPU (d mod count). Several
/// logical devices may share a GPU: each keeps its own streams and memory
/// accounting (capacity from the manifest or options, peak bytes). Fails
/// with PIPE_RT_DEVICE_ERROR (no GPU) or PIPE_RT_INVALID_ARGUMENT (bad map),
/// writing why into `error`.
int pipe_rt_cuda_session_enable(pipe_rt_session *session,
                                const char *device_map, char *error,
                                size_t error_size);

/// Moves every later device-to-device copy of the session (a transfer
/// between its logical devices, a gradient a reduction pulls from another
/// device) through NCCL: a ncclSend on the source GPU and a ncclRecv on the
/// destination GPU in one group, a self send/recv when both devices share
/// a GPU, so that one process on one GPU runs the real NCCL calls. The
/// communicators (ncclCommInitAll over the GPUs in use) are made at the
/// next run. After pipe_rt_cuda_session_enable; PIPE_RT_DEVICE_ERROR when
/// the runtime was built without NCCL.
int pipe_rt_cuda_session_use_nccl(pipe_rt_session *session, char *error,
                                  size_t error_size);

//===----------------------------------------------------------------------===//
// Imported by lowered block code
//===----------------------------------------------------------------------===//

/// What the tensor cores may do to f32 operands; accumulation is f32 in
/// every case.
typedef enum pipe_rt_cuda_compute {
  PIPE_RT_CUDA_COMPUTE_F32 = 0,  /* exact f32 (CUBLAS_COMPUTE_32F) */
  PIPE_RT_CUDA_COMPUTE_TF32 = 1, /* inputs rounded to tf32 */
  PIPE_RT_CUDA_COMPUTE_BF16 = 2, /* inputs rounded to bf16 */
  PIPE_RT_CUDA_COMPUTE_F16 = 3,  /* inputs rounded to f16 */
} pipe_rt_cuda_compute;

/// pipe_rt_gemm_f32 on the GPU: C[b] += op(A[b]) * op(B[b]) for `batch`
/// f32 matrices in device memory, with the same `dims` {batch, m, n, k} and
/// per-operand element strides ({batch, m, k}, {batch, k, n}, {batch, m, n})
/// as Program.h; `compute` a pipe_rt_cuda_compute. Runs on cuBLAS
/// (cublasGemmStridedBatchedEx) when every operand has a unit stride in one
/// of its matrix dimensions (transposes follow from the strides), else
/// through dense copies. Queued on the stream of the block call running on
/// this thread (the current GPU's default stream outside one); errors are
/// reported to the running action (pipe_rt_cuda_last_error outside one).
void pipe_rt_cuda_gemm(const float *a, const float *b, float *c,
                       const int64_t *dims, const int64_t *a_strides,
                       const int64_t *b_strides, const int64_t *c_strides,
                       int32_t compute);

/// The GPU runtime ABI of MLIR's gpu-to-llvm lowering (names and types as
/// LLVM 22 emits them). Inside a block call: streams are the logical
/// device's compute stream (create/destroy are free, so generated code may
/// create one per call), mgpuMemAlloc is charged to the logical device and
/// a result allocated with it is adopted without a copy. Modules are loaded
/// lazily, once per GPU, on their first launch there. Waits poll with the
/// watchdog (the session's, else pipe_rt_cuda_set_watchdog's).
void *mgpuModuleLoad(void *data, size_t gpu_blob_size);
void *mgpuModuleLoadJIT(void *data, int opt_level);
void mgpuModuleUnload(void *module);
void *mgpuModuleGetFunction(void *module, const char *name);
void mgpuLaunchKernel(void *function, intptr_t grid_x, intptr_t grid_y,
                      intptr_t grid_z, intptr_t block_x, intptr_t block_y,
                      intptr_t block_z, int32_t smem, void *stream,
                      void **params, void **extra, size_t param_count);
void mgpuLaunchClusterKernel(void *function, intptr_t cluster_x,
                             intptr_t cluster_y, intptr_t cluster_z,
                             intptr_t grid_x, intptr_t grid_y, intptr_t grid_z,
                             intptr_t block_x, intptr_t block_y,
                             intptr_t block_z, int32_t smem, void *stream,
                             void **params, void **extra, size_t param_count);
void *mgpuStreamCreate(void);
void mgpuStreamDestroy(void *stream);
void mgpuStreamSynchronize(void *stream);
void mgpuStreamWaitEvent(void *stream, void *event);
void *mgpuEventCreate(void);
void mgpuEventDestroy(void *event);
void mgpuEventSynchronize(void *event);
void mgpuEventRecord(void *event, void *stream);
void *mgpuMemAlloc(uint64_t bytes, void *stream, bool host_shared);
void mgpuMemFree(void *ptr, void *stream);
void mgpuMemcpy(void *dst, void *src, size_t bytes, void *stream);
void mgpuMemset32(void *dst, uint32_t value, size_t count, void *stream);
void mgpuMemset16(void *dst, uint16_t value, size_t count, void *stream);
void mgpuMemHostRegister(void *ptr, uint64_t bytes);
void mgpuMemHostUnregister(void *ptr);
void mgpuMemHostRegisterMemRef(int64_t rank, void *descriptor,
                               int64_t elem_bytes);
void mgpuMemHostUnregisterMemRef(int64_t rank, void *descriptor,
                                 int64_t elem_bytes);
void mgpuSetDefaultDevice(int32_t device);

//===----------------------------------------------------------------------===//
// Diagnostics (tests, gpu-check)
//===----------------------------------------------------------------------===//

/// The first error of an mgpu* or pipe_rt_cuda_gemm call made outside a
/// block call on this thread since the last call ("" if none); clears it.
const char *pipe_rt_cuda_last_error(void);
/// Watchdog of mgpu* waits outside sessions (seconds, default 60).
void pipe_rt_cuda_set_watchdog(double seconds);

/// The device memory pool of GPU `ordinal` (every device allocation of the
/// runtime goes through it): bytes allocated now, the peak since the
/// process started, and bytes held from the driver (cached blocks
/// included).
int pipe_rt_cuda_pool_stats(int ordinal, uint64_t *in_use, uint64_t *peak,
                            uint64_t *reserved);
/// Returns the pool's cached blocks to the driver.
void pipe_rt_cuda_pool_trim(int ordinal);
/// Memory of GPU `ordinal` in use by every process and its context (the
/// driver's figure, cuMemGetInfo: total - free), and its total.
int pipe_rt_cuda_device_memory(int ordinal, uint64_t *used, uint64_t *total);

/// NCCL check on one GPU (single-rank communicator from ncclCommInitAll, a
/// self send/recv of `bytes` in one group), with the watchdog polling the
/// stream and ncclCommGetAsyncError. PIPE_RT_DEVICE_ERROR with the reason
/// when the runtime was built without NCCL.
int pipe_rt_cuda_nccl_self_test(int ordinal, uint64_t bytes,
                                double watchdog_seconds, char *error,
                                size_t error_size);

#ifdef __cplusplus
} // extern "C"
#endif

#endif // PIPE_RUNTIME_CUDA_H
