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
size_t pipe_rt_host_optimizer_chunk_size(void);

#ifdef __cplusplus
} // extern "C"
#endif

#endif // PIPE_RUNTIME_HOSTOPTIMIZER_H
