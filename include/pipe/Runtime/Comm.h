//===- Comm.h - The transport ABI of compiled device programs ----*- C -*-===//
//
// How a device program moves data between devices: every transfer and
// every gradient all-reduce of a schedule lowers to calls of these entry
// points, so the lowered IR shows each message with its peer, element count
// and element type (from the manifest's shapes), and the transfers a device
// issues in a row between group markers (NCCL requires grouping a pair's
// send and recv when both sides exchange). Part of the program ABI
// (Program.h, PIPE_RT_ABI_VERSION).
//
// A message's buffer comes from the runtime, by what it carries: a transfer
// (kind, source stage, destination stage, micro-batch, step) or a param's
// gradient at a step. The buffer holds the values of the manifest's edge
// packed in edge order; a gradient transfer leaves the values that have no
// gradient (integer ones, or none computed) zero. The call that moves it
// names the buffer, its element count and type and the peer device, which
// the runtime checks against what the buffer was obtained for (a mismatch
// is PIPE_RT_INVALID_ARGUMENT naming both). The in-process transport moves
// buffers of memory the host cannot address by reference (the receiver
// copies device to device); the MPI transport (pipe/Runtime/MPI.h) sends
// the bytes. See docs/runtime.md, "The transport ABI".
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_RUNTIME_COMM_H
#define PIPE_RUNTIME_COMM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pipe_rt_device_ctx pipe_rt_device_ctx;

/// The communicator of one device of a run.
typedef struct pipe_rt_comm pipe_rt_comm;

/// Element type of a message (the manifest's value types). A message of
/// values of different types, or of i1, counts bytes.
typedef enum pipe_rt_dtype {
  PIPE_RT_DTYPE_BYTES = 0,
  PIPE_RT_DTYPE_F32 = 1,
  PIPE_RT_DTYPE_F64 = 2,
  PIPE_RT_DTYPE_I32 = 3,
  PIPE_RT_DTYPE_I64 = 4,
} pipe_rt_dtype;

/// Every entry point below, for the JIT's symbol map and the runtime test
/// that checks the runtime exports them (X(name) per entry).
#define PIPE_RT_COMM_ENTRIES(X)                                                \
  X(pipe_rt_comm_of)                                                           \
  X(pipe_rt_comm_send_buffer)                                                  \
  X(pipe_rt_comm_recv_buffer)                                                  \
  X(pipe_rt_comm_send)                                                         \
  X(pipe_rt_comm_recv)                                                         \
  X(pipe_rt_comm_group_start)                                                  \
  X(pipe_rt_comm_group_end)                                                    \
  X(pipe_rt_comm_grad_buffer)                                                  \
  X(pipe_rt_comm_allreduce)                                                    \
  X(pipe_rt_comm_bucket_buffer)                                                \
  X(pipe_rt_comm_allreduce_start)

/// The communicator of `ctx`'s device (null for a null context).
pipe_rt_comm *pipe_rt_comm_of(pipe_rt_device_ctx *ctx);

/// The buffer of a transfer of `kind` (0 activation, 1 gradient) between
/// stages `src` and `dst` (stage ids as in the IR: activations travel
/// src -> dst along edge (src, dst), gradients dst -> src along the same
/// edge) for micro-batch `mb` of `step`, into *buffer. For a send it holds
/// the device's values, which leave its store; for a recv it is where they
/// land. Valid until the send or recv that moves it completed.
int32_t pipe_rt_comm_send_buffer(pipe_rt_device_ctx *ctx, int32_t kind,
                                 int32_t src, int32_t dst, int32_t mb,
                                 int32_t step, void **buffer);
int32_t pipe_rt_comm_recv_buffer(pipe_rt_device_ctx *ctx, int32_t kind,
                                 int32_t src, int32_t dst, int32_t mb,
                                 int32_t step, void **buffer);

/// Posts the send (recv) of `count` elements of `dtype` in `buffer` to
/// (from) device `peer` and returns at once: a token > 0 that
/// pipe_rt_act_wait completes (a completed recv puts the values into the
/// device's store), or minus a status.
int64_t pipe_rt_comm_send(pipe_rt_comm *comm, const void *buffer, int64_t count,
                          int32_t dtype, int32_t peer);
int64_t pipe_rt_comm_recv(pipe_rt_comm *comm, void *buffer, int64_t count,
                          int32_t dtype, int32_t peer);

/// Bracket transfers a device issues in a row (they nest). The in-process
/// and MPI transports post every message at once and only check the
/// nesting: an end without a start is PIPE_RT_INVALID_ARGUMENT.
int32_t pipe_rt_comm_group_start(pipe_rt_comm *comm);
int32_t pipe_rt_comm_group_end(pipe_rt_comm *comm);

/// The gradient of param `param` at `step` on the calling device, which
/// the all-reduce that follows sums, into *buffer: null when the device has
/// none (it adds nothing; a gradient-less param stays without one).
int32_t pipe_rt_comm_grad_buffer(pipe_rt_device_ctx *ctx, int32_t param,
                                 int32_t step, void **buffer);

/// Sums the gradient `buffer` (`count` elements of `dtype`, as the param's
/// type) over every device of the pipeline holding the param, in device
/// order, then over the data-parallel replicas, in replica order (the same
/// total everywhere); the device's gradient becomes the sum. Blocks until
/// every participant contributed. A frozen param: nothing to do.
int32_t pipe_rt_comm_allreduce(pipe_rt_comm *comm, void *buffer, int64_t count,
                               int32_t dtype);

/// The gradients of the `num_params` params `params` (ids) at `step` on the
/// calling device, packed in that order into one buffer for the all-reduce
/// that follows, into *buffer; a param without a gradient on the device
/// contributes zeros (and stays without one). Every param must be read only
/// by stages on this device: the bucket is summed over the data-parallel
/// replicas' copies of it. The buffer is the runtime's, valid until the
/// all-reduce completes (with replicas in one process, which meet at the
/// wait and read the gradients there, it only names the bucket).
int32_t pipe_rt_comm_bucket_buffer(pipe_rt_device_ctx *ctx,
                                   const int32_t *params, int32_t num_params,
                                   int32_t step, void **buffer);

/// Starts summing the bucket `buffer` (`count` elements of `dtype`, its
/// params' total) over the data-parallel replicas and returns at once: a
/// token > 0 that pipe_rt_act_wait completes, after which each param's
/// gradient on the device is the sum in replica order (the same total as
/// pipe_rt_comm_allreduce of each param), or minus a status.
int64_t pipe_rt_comm_allreduce_start(pipe_rt_comm *comm, void *buffer,
                                     int64_t count, int32_t dtype);

#ifdef __cplusplus
} // extern "C"
#endif

#endif // PIPE_RUNTIME_COMM_H
