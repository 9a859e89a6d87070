//===- HostOptimizer.h - Host parameter-server optimizer kernels -*- C -*-===//
//
// C ABI of the host optimizer of the pipe runtime: SGD and AdamW updates of
// fp32 master weights with fp32 state, from fp32 or bf16 gradients, run on a
// small persistent thread pool, synchronously or asynchronously (submit +
// wait) so that the L2L runtime can overlap the update with copies.
//
// This header is plain C (no MLIR, no LLVM, no C++ types) because the runtime
// is built on machines without MLIR; see docs/runtime.md for the exact float
// formulas, which are part of the contract.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_RUNTIME_HOSTOPTIMIZER_H
#define PIPE_RUNTIME_HOSTOPTIMIZER_H

#include "pipe/Runtime/Status.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pipe_rt_grad_dtype {
  PIPE_RT_GRAD_F32 = 0,
  /// bfloat16 gradients as raw uint16_t bits (the upper half of an fp32).
  PIPE_RT_GRAD_BF16 = 1,
} pipe_rt_grad_dtype;

typedef enum pipe_rt_optim_kind {
  PIPE_RT_OPTIM_SGD = 0,
  PIPE_RT_OPTIM_ADAMW = 1,
} pipe_rt_optim_kind;

/// torch.optim.SGD hyper-parameters.
typedef struct pipe_rt_sgd_config {
  float lr;
  float momentum;
  float dampening;
  float weight_decay;
  int nesterov; /* 0 or 1 */
} pipe_rt_sgd_config;

/// torch.optim.AdamW hyper-parameters (weight decay decoupled).
typedef struct pipe_rt_adamw_config {
  float lr;
  float beta1;
  float beta2;
  float eps;
  float weight_decay;
} pipe_rt_adamw_config;

/// One update of the contiguous span [0, n) of a parameter.
typedef struct pipe_rt_optim_update {
  pipe_rt_optim_kind kind;
  pipe_rt_sgd_config sgd;     /* used when kind == PIPE_RT_OPTIM_SGD */
  pipe_rt_adamw_config adamw; /* used when kind == PIPE_RT_OPTIM_ADAMW */
  /// 1-based step count: AdamW bias correction uses it; SGD initialises the
  /// momentum buffer with the gradient when step == 1 (as torch does).
  int64_t step;
  /// fp32 master weights, updated in place.
  float *param;
  /// SGD: momentum buffer (may be null when momentum == 0).
  /// AdamW: exp_avg (first moment).
  float *state0;
  /// AdamW: exp_avg_sq (second moment); unused by SGD.
  float *state1;
  /// Gradient: const float * or const uint16_t * (bf16 bits), per grad_dtype.
  const void *grad;
  pipe_rt_grad_dtype grad_dtype;
  /// Every gradient element is multiplied by this before use (1 = none; for
  /// gradient-norm clipping pass 1 / clip factor).
  float grad_scale;
  size_t n;
  /// Out of place: when set, the update reads the weights and the state from
  /// these (same lengths) and writes `param`, `state0`, `state1`, which then
  /// need not hold anything; same operations, same bits. Null: in place. A
  /// parameter server keeps its committed weights untouched this way until a
  /// run succeeds, without copying them.
  const float *param_in;
  const float *state0_in;
  const float *state1_in;
  /// When set (n elements): also receives the new weights rounded to bf16
  /// (nearest, ties to even; NaN -> 0x7fff), written by the same workers
  /// right after each chunk while it is in cache: the copy a parameter
  /// server sends to the devices with bf16 transfers.
  uint16_t *param_bf16;
} pipe_rt_optim_update;

typedef struct pipe_rt_host_optimizer pipe_rt_host_optimizer;
typedef struct pipe_rt_optim_task pipe_rt_optim_task;

/// Creates an optimizer with a persistent pool of `num_threads` worker
/// threads (0 = std::thread::hardware_concurrency()). Returns null only if
/// out of memory.
pipe_rt_host_optimizer *pipe_rt_host_optimizer_create(unsigned num_threads);

/// Number of worker threads of the pool.
unsigned pipe_rt_host_optimizer_num_threads(const pipe_rt_host_optimizer *opt);

/// Joins the workers. Every submitted task must have been waited for first.
void pipe_rt_host_optimizer_destroy(pipe_rt_host_optimizer *opt);

/// Queues `update` (the struct is copied; the arrays must stay alive and
/// untouched until the task is waited for) and returns at once with a handle
/// in *task. Tasks run in submission order, each split into chunks shared by
/// all workers. On error *task is null and nothing is queued.
int pipe_rt_host_optimizer_submit(pipe_rt_host_optimizer *opt,
                                  const pipe_rt_optim_update *update,
                                  pipe_rt_optim_task **task);

/// Blocks until `task` has finished, then frees the handle. Returns
/// PIPE_RT_OK, or PIPE_RT_INVALID_ARGUMENT if opt or task is null.
int pipe_rt_host_optimizer_wait(pipe_rt_host_optimizer *opt,
                                pipe_rt_optim_task *task);

/// submit + wait.
int pipe_rt_host_optimizer_run(pipe_rt_host_optimizer *opt,
                               const pipe_rt_optim_update *update);

/// Elements per chunk (the unit of work a worker claims); exposed for tests.
/// The first chunk of a task is up to 15 elements longer, so that the later
/// chunk boundaries fall on 64-byte lines of `param` (no two workers write
/// the same cache line).
size_t pipe_rt_host_optimizer_chunk_size(void);

/// Instruction-set variants of the element-wise kernels. All of them evaluate
/// the same float operations in the same order and give identical bits; they
/// differ only in vector width.
typedef enum pipe_rt_optim_isa {
  /// The library's own build flags: SSE2 (16-byte vectors) on x86-64; the
  /// only variant on other targets.
  PIPE_RT_OPTIM_ISA_BASELINE = 0,
  /// 32-byte AVX2 vectors (x86-64, CPU with AVX2).
  PIPE_RT_OPTIM_ISA_AVX2 = 1,
  /// 64-byte AVX-512F vectors (x86-64, CPU and OS with AVX-512F).
  PIPE_RT_OPTIM_ISA_AVX512 = 2,
} pipe_rt_optim_isa;

/// 1 if `isa` is built into the library and this CPU can run it, else 0.
int pipe_rt_optim_isa_available(pipe_rt_optim_isa isa);

/// "baseline", "avx2", "avx512", or "unknown".
const char *pipe_rt_optim_isa_name(pipe_rt_optim_isa isa);

/// The variant new optimizers use, chosen once per process: the widest
/// available one, unless the environment variable PIPE_RT_OPTIM_ISA names
/// another (baseline, avx2, avx512 or auto). A value that is unknown or not
/// available on this CPU is reported once on stderr and the widest available
/// variant not wider than the one asked for is used instead.
pipe_rt_optim_isa pipe_rt_host_optimizer_default_isa(void);

/// The variant `opt` runs (its tasks capture it when they are submitted).
pipe_rt_optim_isa pipe_rt_host_optimizer_isa(const pipe_rt_host_optimizer *opt);

/// Forces `opt` onto `isa` for tasks submitted from now on (tests and
/// benchmarks). Returns PIPE_RT_INVALID_ARGUMENT, changing nothing, if opt
/// is null or `isa` is unknown or not available.
int pipe_rt_host_optimizer_set_isa(pipe_rt_host_optimizer *opt,
                                   pipe_rt_optim_isa isa);

#ifdef __cplusplus
} // extern "C"
#endif

#endif // PIPE_RUNTIME_HOSTOPTIMIZER_H
