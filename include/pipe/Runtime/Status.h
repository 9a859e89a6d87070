//===- Status.h - Status codes of the pipe runtime ---------------*- C -*-===//
//
// Every function of the runtime's C ABI returns one of these codes. Plain C,
// like every runtime header: the runtime builds without MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_RUNTIME_STATUS_H
#define PIPE_RUNTIME_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pipe_rt_status {
  PIPE_RT_OK = 0,
  /// A null pointer, unknown enum value, step < 1 or an SGD configuration
  /// that torch.optim.SGD rejects (nesterov without momentum or with
  /// dampening).
  PIPE_RT_INVALID_ARGUMENT = 1,
  /// An allocation would exceed the capacity of the device's arena.
  PIPE_RT_OUT_OF_MEMORY = 2,
  /// A send and its matching recv disagree on the number of bytes.
  PIPE_RT_SIZE_MISMATCH = 3,
  /// The watchdog fired: a wait did not complete within watchdog_seconds.
  PIPE_RT_TIMEOUT = 4,
  /// An earlier transfer error aborted the run; this transfer was abandoned.
  PIPE_RT_ABORTED = 5,
  /// A GPU operation failed (a CUDA driver, cuBLAS or NCCL error, or no
  /// usable device); the message names the device and the operation.
  PIPE_RT_DEVICE_ERROR = 6,
} pipe_rt_status;

/// Returns a static, human-readable name for a status code.
const char *pipe_rt_status_string(int status);

#ifdef __cplusplus
}
#endif

#endif // PIPE_RUNTIME_STATUS_H
