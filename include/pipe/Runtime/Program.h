//===- Program.h - Running compiled pipeline programs ------------*- C -*-===//
//
// The contract between the compiler (`--pipe-lower-to-host`) and the runtime.
// A compiled program (a JIT-ed module or a shared-library artifact) exports:
//
//   int32_t pipe_program_abi_version;   // == PIPE_RT_ABI_VERSION
//   const char pipe_program_manifest[]; // NUL-terminated text, see below
//   void <fn>(void **args);             // one per block function (packed)
//   int32_t <dev>(pipe_rt_device_ctx *ctx); // one per schedule and device
//
// and imports the pipe_rt_act_* entry points, the transport ABI's
// pipe_rt_comm_* ones (pipe/Runtime/Comm.h), the allocation hooks and
// pipe_rt_gemm_f32 below. Symbols are found through a lookup callback (dlsym
// for an artifact, the execution engine for the JIT), so the runtime never
// links MLIR.
//
// Manifest: a versioned text of records whose schema, writer and format
// version are include/pipe/Runtime/ManifestSchema.h.
//
// Calling convention of block functions (`function` records): args[0] points
// to the result storage (a pipe_rt_memref for one result, consecutive ones
// for several; absent without results), args[1..] to one pipe_rt_memref per
// argument. A run's forward takes (params, inputs) and returns (outputs,
// saved); its backward functions take (params, inputs, cotangents of the
// differentiable results, saved) and return the cotangents of the
// differentiable inputs / the gradients of the differentiable params / both,
// in that order (the fused one). Block
// functions never write their arguments. Results are either allocated
// through the hooks below (the runtime takes ownership) or anything else
// (constants, aliases of arguments), which the runtime copies.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_RUNTIME_PROGRAM_H
#define PIPE_RUNTIME_PROGRAM_H

#include "pipe/Runtime/Comm.h"
#include "pipe/Runtime/HostOptimizer.h"
#include "pipe/Runtime/Status.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Bumped whenever an entry point or a symbol a program exports changes; the
/// manifest format has its own version (kManifestVersion, ManifestSchema.h).
#define PIPE_RT_ABI_VERSION 4

/// MLIR's ranked memref descriptor for any rank: allocated and aligned
/// pointers, offset, then `rank` sizes followed by `rank` strides (all in
/// elements). Rank r occupies 3 + 2r words.
typedef struct pipe_rt_memref {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t sizes_and_strides[];
} pipe_rt_memref;

/// Per-device context handed to a device program.
typedef struct pipe_rt_device_ctx pipe_rt_device_ctx;

//===----------------------------------------------------------------------===//
// Entry points called by generated device programs (with those of Comm.h
// for transfers). Each returns
// PIPE_RT_OK or an error status (the program then returns it at once); the
// asynchronous ones return a token > 0, or minus a status. `stage` is a
// stage id of the manifest, `param` a param id, `step` the step attribute of
// the action (0 when absent), `version` the weight version (-1 when absent).
// The actions that lower to each are the ENTRY column of
// include/pipe/Support/Actions.def, which the JIT's symbol map and a runtime
// test check against these declarations.
//===----------------------------------------------------------------------===//

/// `keep`: 1 keeps every run's inputs and saved activations for the backward;
/// 0 keeps only the stage's inputs (a recompute follows) or, in a
/// forward-only schedule, nothing.
int32_t pipe_rt_act_forward(pipe_rt_device_ctx *ctx, int32_t stage, int32_t mb,
                            int32_t step, int32_t version, int32_t keep,
                            int32_t predict);
int32_t pipe_rt_act_recompute(pipe_rt_device_ctx *ctx, int32_t stage,
                              int32_t mb, int32_t step, int32_t version);
/// `part`: 0 full backward, 1 input gradients only, 2 weight gradients only.
int32_t pipe_rt_act_backward(pipe_rt_device_ctx *ctx, int32_t stage, int32_t mb,
                             int32_t step, int32_t version, int32_t part);
/// `version` v >= 0: the stage's weights after exactly its first v
/// ps.updates of this run (0: those the run started from), kept by the
/// parameter server while later updates write the next; -1: the latest.
int64_t pipe_rt_act_ps_load(pipe_rt_device_ctx *ctx, int32_t stage,
                            int32_t step, int32_t version);
int64_t pipe_rt_act_ps_push(pipe_rt_device_ctx *ctx, int32_t stage,
                            int32_t step);
/// Data parallelism: sums what every replica pushed for the stage in
/// `step`, in replica order, for the ps.update that follows. Each replica's
/// device issues it; the host runs it once, after the last replica's push.
int32_t pipe_rt_act_ps_reduce(pipe_rt_device_ctx *ctx, int32_t stage,
                              int32_t step);
int64_t pipe_rt_act_ps_update(pipe_rt_device_ctx *ctx, int32_t stage,
                              int32_t step);
int32_t pipe_rt_act_ps_release(pipe_rt_device_ctx *ctx, int32_t stage,
                               int32_t step);
int64_t pipe_rt_act_offload(pipe_rt_device_ctx *ctx, int32_t stage, int32_t mb,
                            int32_t step);
int64_t pipe_rt_act_prefetch(pipe_rt_device_ctx *ctx, int32_t stage, int32_t mb,
                             int32_t step);
int32_t pipe_rt_act_update(pipe_rt_device_ctx *ctx, int32_t stage,
                           int32_t step);
int32_t pipe_rt_act_wait(pipe_rt_device_ctx *ctx, int64_t token);

//===----------------------------------------------------------------------===//
// Imported by block code.
//===----------------------------------------------------------------------===//

/// MLIR's generic allocation functions (finalize-memref-to-llvm with
/// use-generic-functions): allocations are charged to the arena of the
/// device whose program is running on the calling thread.
void *_mlir_memref_to_llvm_alloc(size_t bytes);
void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t bytes);
void _mlir_memref_to_llvm_free(void *ptr);

/// C[b] (+)= op(A[b]) * op(B[b]) in f32 for `batch` matrices, element
/// strides given per operand: `dims` = {batch, m, n, k}; `a_strides` =
/// {batch, m, k}, `b_strides` = {batch, k, n}, `c_strides` = {batch, m, n}.
/// Accumulates into C (linalg semantics). Uses BLAS when each operand has a
/// unit stride in one of its two matrix dimensions, a blocked loop otherwise.
void pipe_rt_gemm_f32(const float *a, const float *b, float *c,
                      const int64_t *dims, const int64_t *a_strides,
                      const int64_t *b_strides, const int64_t *c_strides);

/// Called by block code when a data-dependent index (a gather row, a
/// scatter target) is outside [0, bound); `site` names the op. The block
/// goes on with index 0 so that nothing outside its tensors is touched,
/// and the action running it fails with the first fault of the call.
void pipe_rt_index_fault(const char *site, int64_t index, int64_t bound);

/// MLIR's c_runner_utils strided copy (memref.copy lowering): `src` and
/// `dst` point to unranked memrefs {int64_t rank; void *descriptor} of the
/// same shape; copies elem_size-byte elements.
void memrefCopy(int64_t elem_size, void *src, void *dst);

//===----------------------------------------------------------------------===//
// Sessions: what runners, trainers and tests use.
//===----------------------------------------------------------------------===//

typedef struct pipe_rt_session pipe_rt_session;

/// Resolves a symbol of the compiled program; null if absent.
typedef void *(*pipe_rt_symbol_lookup)(void *user_data, const char *name);

/// Element type of the parameter server's copies to and from the devices
/// (ps.load and ps.push; docs/runtime.md, "bf16 transfers"). The master
/// weights, the gradient accumulator and the optimizer stay fp32 either way.
typedef enum pipe_rt_ps_transfer {
  PIPE_RT_PS_TRANSFER_F32 = 0,  /* fp32 both ways (the default) */
  PIPE_RT_PS_TRANSFER_BF16 = 1, /* bf16 on the link, widened on arrival */
} pipe_rt_ps_transfer;

typedef struct pipe_rt_session_options {
  /// Safetensors file holding every param of the manifest (by name, with the
  /// manifest's dtype and shape). Required.
  const char *weights_path;
  /// Watchdog for every wait (seconds, > 0).
  double watchdog_seconds;
  /// Overrides the manifest's per-device capacities when > 0 (bytes).
  uint64_t capacity_bytes;
  /// Optimizer applied by update / ps.update; `lr` is the initial rate.
  pipe_rt_optim_kind optimizer;
  pipe_rt_sgd_config sgd;
  pipe_rt_adamw_config adamw;
  /// Host optimizer threads; 0 = this process's share of the host's cores
  /// (pipe_rt_session_optimizer_threads says how many that made).
  unsigned optimizer_threads;
  /// Global gradient-norm clipping (0 = off). Synchronous schedules only:
  /// a run of a schedule with ps stages or steps > 1 fails with
  /// PIPE_RT_INVALID_ARGUMENT when it is set.
  float clip_norm;
  /// How f32 params of parameter-server stages cross the link: with
  /// PIPE_RT_PS_TRANSFER_BF16, ps.load copies a bf16 shadow of the master
  /// (rounded to nearest even when the run starts and after each ps.update)
  /// and widens it on the device; ps.push narrows the gradient on the device
  /// and the host widens it into the fp32 accumulator. Any other value:
  /// pipe_rt_session_create fails with PIPE_RT_INVALID_ARGUMENT.
  pipe_rt_ps_transfer ps_transfer;
} pipe_rt_session_options;

/// Fills `options` with defaults (AdamW lr 1e-3, betas 0.9/0.999, eps 1e-8,
/// weight decay 0.01; watchdog 60 s; no clipping; weights_path null).
void pipe_rt_session_options_init(pipe_rt_session_options *options);

/// Reads the manifest and the weights. On failure returns an error status,
/// *out = null, and writes a message (naming the file, field or symbol) into
/// `error` (truncated to `error_size`). A program whose ABI version differs
/// from PIPE_RT_ABI_VERSION, or whose manifest's format version differs
/// from kManifestVersion, fails with PIPE_RT_INVALID_ARGUMENT.
int pipe_rt_session_create(pipe_rt_symbol_lookup lookup, void *user_data,
                           const pipe_rt_session_options *options,
                           pipe_rt_session **out, char *error,
                           size_t error_size);
void pipe_rt_session_destroy(pipe_rt_session *session);
const char *pipe_rt_session_error(pipe_rt_session *session);

/// Schedule `name` (null: the first) as an index, or -1.
int pipe_rt_session_find_schedule(pipe_rt_session *session, const char *name);

/// Runs schedule `schedule` once: its `steps` optimizer steps of
/// `microbatches` micro-batches each. `inputs[(s * microbatches + m) *
/// num_inputs + k]` points to graph input k of micro-batch m of step s, a
/// dense row-major buffer of the manifest's type. `losses` (may be null)
/// receives steps * microbatches losses. Gradients are the mean over the
/// micro-batches of a step (each loss seeded with seed / microbatches).
int pipe_rt_session_run(pipe_rt_session *session, int schedule,
                        const void *const *inputs, float *losses);

/// Devices, micro-batches per step and steps of schedule `schedule` (any
/// pointer may be null).
int pipe_rt_session_schedule_info(pipe_rt_session *session, int schedule,
                                  int *devices, int *microbatches, int *steps);

/// Number of graph inputs, and input k's element type ("f32", "f64", "i64",
/// "i32" or "i1"), rank and shape (valid while the session lives).
int pipe_rt_session_num_inputs(pipe_rt_session *session);
int pipe_rt_session_input_type(pipe_rt_session *session, int input,
                               const char **dtype, int *rank,
                               const int64_t **shape);

/// Sets the learning rate of later updates (of every parameter group: a
/// param's updates use this times its scale below).
void pipe_rt_session_set_lr(pipe_rt_session *session, float lr);
/// Sets the learning rate of each optimizer step of later runs, for
/// schedules that cover several steps per run: step k of a run uses
/// lrs[k], steps past `count` the last one. PIPE_RT_INVALID_ARGUMENT
/// (nothing changed) for no rates or one that is not finite and >= 0.
int pipe_rt_session_set_step_lrs(pipe_rt_session *session, const float *lrs,
                                 int count);

/// Number of params, and param i's name / element count.
int pipe_rt_session_num_params(pipe_rt_session *session);
const char *pipe_rt_session_param_name(pipe_rt_session *session, int param);
int64_t pipe_rt_session_param_numel(pipe_rt_session *session, int param);
/// Param i's rank and shape (valid while the session lives; any pointer may
/// be null), and whether the optimizer updates it (1: trainable, 0: frozen,
/// -1: no such param).
int pipe_rt_session_param_shape(pipe_rt_session *session, int param, int *rank,
                                const int64_t **shape);
int pipe_rt_session_param_trainable(pipe_rt_session *session, int param);

/// Parameter groups: the learning rate of param i's later updates is the
/// session's (pipe_rt_session_set_lr) times `scale`, a finite float >= 0
/// (default 1; the product is rounded to float once per update), so a
/// learning-rate schedule scales every group alike; `enabled` 0 updates it
/// with a weight decay of 0 (default 1: the optimizer's). Configuration,
/// not training state: pipe_rt_session_save does not store them, so a
/// resumed session must set them again. PIPE_RT_INVALID_ARGUMENT (nothing
/// changed) for no such param or a bad scale.
int pipe_rt_session_set_param_lr_scale(pipe_rt_session *session, int param,
                                       float scale);
int pipe_rt_session_set_param_weight_decay(pipe_rt_session *session, int param,
                                           int enabled);
/// Copies the current value of a param (fp32) in or out. Every copy held by a
/// device or the parameter server is kept consistent.
int pipe_rt_session_read_param(pipe_rt_session *session, int param, float *out);
int pipe_rt_session_write_param(pipe_rt_session *session, int param,
                                const float *in);

/// Number of task metrics the program reports (pipe.metric results of the
/// graph, e.g. accuracy).
int pipe_rt_session_num_metrics(pipe_rt_session *session);

/// Metric `metric`'s name and its counts summed over the micro-batches
/// (and replicas and ranks) of the last successful run; the metric is
/// hits / counted (0 and 0 before any run). Any pointer may be null.
int pipe_rt_session_metric(pipe_rt_session *session, int metric,
                           const char **name, int64_t *hits, int64_t *counted);

/// Peak bytes in use on `device` over the session.
uint64_t pipe_rt_session_peak_bytes(pipe_rt_session *session, int device);

/// The host optimizer's worker threads. With optimizer_threads 0: the
/// host's cores divided among the MPI ranks on it (Open MPI's
/// OMPI_COMM_WORLD_LOCAL_SIZE), less one core per device thread of a
/// parameter-server schedule that overlaps host updates with device compute
/// (several steps per run); at least 1. See docs/runtime.md.
unsigned pipe_rt_session_optimizer_threads(pipe_rt_session *session);

/// Bytes the session's runs so far copied on `device`'s lanes (any pointer
/// may be null): `h2d` on its host-to-device copy engine (ps.load,
/// prefetch, params copied in at the start of a run), `d2h` on its
/// device-to-host one (ps.push, offload, params read back at the end), and
/// `compute` by its compute thread (graph inputs, losses, optimizer staging,
/// device-to-device copies). Only copies count: on the default simulated
/// devices the host reads device memory in place, so e.g. ps.push moves
/// nothing; the staged backend and GPUs copy. PIPE_RT_INVALID_ARGUMENT for
/// a device no schedule has.
int pipe_rt_session_copy_bytes(pipe_rt_session *session, int device,
                               uint64_t *h2d, uint64_t *d2h, uint64_t *compute);

/// Writes the training state (every param, the optimizer state, the
/// optimizer's step counter) to a safetensors file at `path`, atomically
/// (temporary file in the same directory, fsync, rename): an interrupted
/// save leaves any earlier file at `path` intact. The optimizer state is
/// stored as `<param>.exp_avg`, `<param>.exp_avg_sq` (AdamW) or
/// `<param>.momentum_buffer` (SGD) and the counter as the I64 tensor
/// `optimizer.step`; `extra` (may be null) adds `extra_count` more I64
/// scalars under `extra_names` (a trainer's step, RNG state, ...).
int pipe_rt_session_save(pipe_rt_session *session, const char *path,
                         const char *const *extra_names, const int64_t *extra,
                         int extra_count);
/// Restores what pipe_rt_session_save wrote (shapes and names checked; a
/// truncated or corrupt file is an error naming it, and changes nothing);
/// fills `extra` for each of `extra_names` found (missing ones: error).
int pipe_rt_session_load(pipe_rt_session *session, const char *path,
                         const char *const *extra_names, int64_t *extra,
                         int extra_count);

/// Starts recording every action (device, name, start, end) of later runs;
/// pipe_rt_session_write_trace writes them as a Chrome trace (the format of
/// the simulator's `--pipe-simulate=trace=` with the same tracks, for D the
/// most devices of any schedule: d the compute of device d, D+2d its
/// host-to-device copies, D+2d+1 its device-to-host copies, 3D the host
/// optimizer, then one track per link "link a->b" for transfers, in order of
/// first use) and clears them.
void pipe_rt_session_enable_trace(pipe_rt_session *session, int enable);
int pipe_rt_session_write_trace(pipe_rt_session *session, const char *path);

/// Starts the window of pipe_rt_session_profile_json: actions recorded from
/// now on (tracing must be enabled).
void pipe_rt_session_profile_mark(pipe_rt_session *session);
/// The phase breakdown of the actions recorded in the window (before the
/// trace is written, which clears it), as a JSON object in milliseconds:
/// `window_ms`, `optimizer_ms` (host optimizer busy), `optimizer_exposed_ms`
/// (busy while no device computes), `idle_ms`, and per device
/// `forward_ms`, `recompute_ms`, `backward_ms`, `update_ms`, `other_ms`,
/// `compute_ms`, `h2d_ms`, `d2h_ms`, `copy_ms` (either copy lane busy),
/// `copy_exposed_ms` (a copy in flight and no compute on the device),
/// `copy_exposed_fraction` and `transfer_ms` (its outgoing links). Busy
/// times are unions, so overlapping actions of one lane count once. Valid
/// until the next call on the session.
const char *pipe_rt_session_profile_json(pipe_rt_session *session);

#ifdef __cplusplus
} // extern "C"
#endif

#endif // PIPE_RUNTIME_PROGRAM_H
