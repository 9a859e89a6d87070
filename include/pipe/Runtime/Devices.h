//===- Devices.h - Simulated devices, arenas and channels -------*- C -*-===//
//
// C ABI of the simulated devices of the pipe runtime: N devices, each with a
// memory arena of fixed capacity (from the device model) and a worker thread
// that runs its action list; transfers are copies through matched
// point-to-point send/recv channels; a watchdog turns a receive (or send) that
// never matches into an error that names the device and the action instead of
// a hang. The caller then aborts the run: after a transfer error every later
// transfer on the same pipe_rt_devices fails with PIPE_RT_ABORTED.
//
// Plain C, no MLIR/LLVM, like every header of the runtime; see
// docs/runtime.md.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_RUNTIME_DEVICES_H
#define PIPE_RUNTIME_DEVICES_H

#include "pipe/Runtime/Status.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Every error also sets the message returned by pipe_rt_last_error.
typedef struct pipe_rt_devices pipe_rt_devices;

/// What a channel carries; only used to match and to name it in messages.
typedef enum pipe_rt_channel_kind {
  PIPE_RT_CHANNEL_ACTIVATION = 0,
  PIPE_RT_CHANNEL_GRADIENT = 1,
  /// Anything else; src_stage/dst_stage/micro_batch/step are then free tags.
  PIPE_RT_CHANNEL_OTHER = 2,
} pipe_rt_channel_kind;

/// A send matches the oldest pending recv with an equal key (all five fields)
/// and vice versa; several sends with one key are received in FIFO order.
typedef struct pipe_rt_channel_key {
  int32_t kind; /* pipe_rt_channel_kind */
  int32_t src_stage;
  int32_t dst_stage;
  int32_t micro_batch;
  int32_t step;
} pipe_rt_channel_key;

/// Handle of one posted send or recv; 0 is never a valid token.
typedef uint64_t pipe_rt_token;

/// Creates `num_devices` devices; device d has an arena of capacity_bytes[d]
/// bytes. Every pipe_rt_wait fails with
/// PIPE_RT_TIMEOUT after `watchdog_seconds` (> 0). Returns null on invalid
/// arguments (num_devices < 1, null capacities, watchdog_seconds <= 0).
pipe_rt_devices *pipe_rt_devices_create(int num_devices,
                                        const uint64_t *capacity_bytes,
                                        double watchdog_seconds);

/// Frees every allocation, buffered message and pending token. No thread may
/// still be using `devs`.
void pipe_rt_devices_destroy(pipe_rt_devices *devs);

int pipe_rt_devices_count(const pipe_rt_devices *devs);

/// The message of the most recent error (errors caused by an abort do not
/// replace the message of the error that caused it); "" if none. The pointer
/// stays valid until the next call on `devs` that fails, or destroy.
const char *pipe_rt_last_error(pipe_rt_devices *devs);

/// Allocates `bytes` (64-byte aligned; 0 allowed) in the arena of `device`.
/// `what` (may be null) labels the allocation in error messages. Over
/// capacity: PIPE_RT_OUT_OF_MEMORY, *out = null, and a message naming the
/// device, the label, the requested bytes, the bytes in use and the capacity.
int pipe_rt_alloc(pipe_rt_devices *devs, int device, uint64_t bytes,
                  const char *what, void **out);

/// Frees an allocation of `device` (null is a no-op). A pointer not allocated
/// on that device gives PIPE_RT_INVALID_ARGUMENT.
int pipe_rt_free(pipe_rt_devices *devs, int device, void *ptr);

/// Bytes in use now and the peak since creation (either pointer may be null).
int pipe_rt_device_memory(pipe_rt_devices *devs, int device, uint64_t *in_use,
                          uint64_t *peak);

/// Starts a window on `device`: pipe_rt_device_window_peak then reports the
/// most bytes in use since (the working memory of one action). *in_use
/// (may be null) gets the bytes in use at the start.
int pipe_rt_device_start_window(pipe_rt_devices *devs, int device,
                                uint64_t *in_use);
int pipe_rt_device_window_peak(pipe_rt_devices *devs, int device,
                               uint64_t *peak);

/// Copies `bytes` of `data` into a channel buffer (so `data` may be reused at
/// once) and posts the send from `device`; *token completes when a recv with
/// the same key has taken the data. A size mismatch with the matching recv
/// fails both with PIPE_RT_SIZE_MISMATCH, naming both devices.
int pipe_rt_send(pipe_rt_devices *devs, int device,
                 const pipe_rt_channel_key *key, const void *data,
                 uint64_t bytes, pipe_rt_token *token);

/// Posts a recv of `bytes` into `dst` on `device` and returns at once; the
/// data is in `dst` once pipe_rt_wait(*token) returned PIPE_RT_OK (`dst` must
/// stay alive until then).
int pipe_rt_recv(pipe_rt_devices *devs, int device,
                 const pipe_rt_channel_key *key, void *dst, uint64_t bytes,
                 pipe_rt_token *token);

/// Blocks until the transfer of `token` (posted by `device`) completed, then
/// frees the token. Returns PIPE_RT_TIMEOUT if it did not complete within the
/// watchdog time ("device 1: recv activation s0->s1 mb 3 step 0 did not match
/// a send within 0.2 s"), PIPE_RT_SIZE_MISMATCH or PIPE_RT_ABORTED. The token
/// is freed whatever the result.
int pipe_rt_wait(pipe_rt_devices *devs, int device, pipe_rt_token token);

/// Action list of one device: returns a status (PIPE_RT_OK to continue).
typedef int (*pipe_rt_device_fn)(int device, void *user_data);

/// Calls fn(d, user_data) for every device d, each on its own thread, joins
/// them all and returns the first (earliest) non-OK status, or PIPE_RT_OK.
int pipe_rt_run_devices(pipe_rt_devices *devs, pipe_rt_device_fn fn,
                        void *user_data);

#ifdef __cplusplus
} // extern "C"
#endif

#endif // PIPE_RUNTIME_DEVICES_H
