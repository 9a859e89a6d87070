//===- HostOptimizer.cpp - Host parameter-server optimizer kernels --------===//
//
// SGD and AdamW on fp32 master weights, run by a persistent thread pool.
// C++17 standard library only: this file is built without MLIR or LLVM.
//
// Every element is updated independently by the same straight-line float
// formula (docs/runtime.md), and the library is compiled with
// -ffp-contract=off, so the result does not depend on the number of threads,
// the chunking or whether the compiler vectorised a loop.
//
//===----------------------------------------------------------------------===//

#include "pipe/Runtime/HostOptimizer.h"

#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

namespace {

// 64 Ki elements: large enough that claiming a chunk under the pool mutex is
// negligible (an AdamW chunk moves ~1.3 MB), small enough to balance threads.
constexpr size_t kChunkSize = size_t(1) << 16;

// Loads gradient element i as fp32.
inline float loadGrad(const float *__restrict g, size_t i) { return g[i]; }
inline float loadGrad(const uint16_t *__restrict g, size_t i) {
  // bf16 is the upper half of an fp32: widen exactly by shifting.
  uint32_t bits = uint32_t(g[i]) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

// Scalars of one AdamW step, computed once in double and rounded to float
// (as PyTorch does with its Python-float hyper-parameters).
struct AdamWScalars {
  float decay; // 1 - lr * weight_decay
  float beta1, oneMinusBeta1;
  float beta2, oneMinusBeta2;
  float eps;
  float negStepSize; // -lr / (1 - beta1^step)
  float bc2Sqrt;     // sqrt(1 - beta2^step)
  float gradScale;
};

template <typename G>
void adamwKernel(const AdamWScalars &s, float *__restrict p,
                 float *__restrict m, float *__restrict v,
                 const G *__restrict g, size_t begin, size_t end) {
  const float decay = s.decay, b1 = s.beta1, c1 = s.oneMinusBeta1;
  const float b2 = s.beta2, c2 = s.oneMinusBeta2, eps = s.eps;
  const float negStep = s.negStepSize, bc2Sqrt = s.bc2Sqrt;
  const float scale = s.gradScale;
  for (size_t i = begin; i < end; ++i) {
    float gi = loadGrad(g, i) * scale;
    float pi = p[i] * decay;
    float mi = b1 * m[i] + c1 * gi;
    float vi = b2 * v[i] + c2 * (gi * gi);
    float denom = std::sqrt(vi) / bc2Sqrt + eps;
    m[i] = mi;
    v[i] = vi;
    p[i] = pi + negStep * (mi / denom);
  }
}

struct SGDScalars {
  float negLr;
  float momentum;
  float oneMinusDampening;
  float weightDecay;
  float gradScale;
};

// Plain SGD (momentum == 0), optional weight decay.
template <typename G>
void sgdPlainKernel(const SGDScalars &s, float *__restrict p,
                    const G *__restrict g, size_t begin, size_t end) {
  const float negLr = s.negLr, wd = s.weightDecay, scale = s.gradScale;
  for (size_t i = begin; i < end; ++i) {
    float gi = loadGrad(g, i) * scale;
    float di = gi + wd * p[i];
    p[i] = p[i] + negLr * di;
  }
}

// SGD with momentum; `first` initialises the buffer with the gradient.
template <typename G, bool First, bool Nesterov>
void sgdMomentumKernel(const SGDScalars &s, float *__restrict p,
                       float *__restrict buf, const G *__restrict g,
                       size_t begin, size_t end) {
  const float negLr = s.negLr, wd = s.weightDecay, scale = s.gradScale;
  const float mu = s.momentum, damp = s.oneMinusDampening;
  for (size_t i = begin; i < end; ++i) {
    float gi = loadGrad(g, i) * scale;
    float di = gi + wd * p[i];
    float bi = First ? di : mu * buf[i] + damp * di;
    buf[i] = bi;
    float ui = Nesterov ? di + mu * bi : bi;
    p[i] = p[i] + negLr * ui;
  }
}

template <typename G>
void runSGD(const pipe_rt_optim_update &u, const SGDScalars &s, size_t begin,
            size_t end) {
  const G *g = static_cast<const G *>(u.grad);
  if (u.sgd.momentum == 0.0f)
    return sgdPlainKernel<G>(s, u.param, g, begin, end);
  bool first = u.step == 1;
  bool nesterov = u.sgd.nesterov != 0;
  if (first && nesterov)
    return sgdMomentumKernel<G, true, true>(s, u.param, u.state0, g, begin,
                                            end);
  if (first)
    return sgdMomentumKernel<G, true, false>(s, u.param, u.state0, g, begin,
                                             end);
  if (nesterov)
    return sgdMomentumKernel<G, false, true>(s, u.param, u.state0, g, begin,
                                             end);
  return sgdMomentumKernel<G, false, false>(s, u.param, u.state0, g, begin,
                                            end);
}

} // namespace

struct pipe_rt_optim_task {
  pipe_rt_optim_update update;
  AdamWScalars adamw;
  SGDScalars sgd;
  size_t numChunks = 0;
  size_t nextChunk = 0;  // guarded by the pool mutex
  size_t doneChunks = 0; // guarded by the pool mutex
  bool finished = false; // guarded by the pool mutex

  void runChunk(size_t chunk) const {
    size_t begin = chunk * kChunkSize;
    size_t end = begin + kChunkSize < update.n ? begin + kChunkSize : update.n;
    const pipe_rt_optim_update &u = update;
    bool bf16 = u.grad_dtype == PIPE_RT_GRAD_BF16;
    if (u.kind == PIPE_RT_OPTIM_ADAMW) {
      if (bf16)
        adamwKernel(adamw, u.param, u.state0, u.state1,
                    static_cast<const uint16_t *>(u.grad), begin, end);
      else
        adamwKernel(adamw, u.param, u.state0, u.state1,
                    static_cast<const float *>(u.grad), begin, end);
      return;
    }
    if (bf16)
      runSGD<uint16_t>(u, sgd, begin, end);
    else
      runSGD<float>(u, sgd, begin, end);
  }
};

struct pipe_rt_host_optimizer {
  std::mutex mutex;
  std::condition_variable workCv;         // a task was queued, or stopping
  std::condition_variable doneCv;         // a task finished
  std::deque<pipe_rt_optim_task *> queue; // tasks with unclaimed chunks
  bool stopping = false;
  std::vector<std::thread> workers;

  void workerLoop() {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      workCv.wait(lock, [&] { return stopping || !queue.empty(); });
      if (queue.empty())
        return; // stopping, and the queue is drained
      pipe_rt_optim_task *task = queue.front();
      size_t chunk = task->nextChunk++;
      if (task->nextChunk == task->numChunks)
        queue.pop_front();
      lock.unlock();
      task->runChunk(chunk);
      lock.lock();
      // After `finished` is set the waiter may free the task: do not touch
      // it again.
      if (++task->doneChunks == task->numChunks) {
        task->finished = true;
        doneCv.notify_all();
      }
    }
  }
};

extern "C" {

pipe_rt_host_optimizer *pipe_rt_host_optimizer_create(unsigned numThreads) {
  if (numThreads == 0)
    numThreads = std::thread::hardware_concurrency();
  if (numThreads == 0)
    numThreads = 1;
  auto *opt = new (std::nothrow) pipe_rt_host_optimizer();
  if (!opt)
    return nullptr;
  opt->workers.reserve(numThreads);
  for (unsigned i = 0; i < numThreads; ++i)
    opt->workers.emplace_back([opt] { opt->workerLoop(); });
  return opt;
}

unsigned pipe_rt_host_optimizer_num_threads(const pipe_rt_host_optimizer *opt) {
  return opt ? unsigned(opt->workers.size()) : 0;
}

void pipe_rt_host_optimizer_destroy(pipe_rt_host_optimizer *opt) {
  if (!opt)
    return;
  {
    std::lock_guard<std::mutex> lock(opt->mutex);
    opt->stopping = true;
  }
  opt->workCv.notify_all();
  for (std::thread &t : opt->workers)
    t.join();
  delete opt;
}

static bool isValid(const pipe_rt_optim_update &u) {
  if (u.grad_dtype != PIPE_RT_GRAD_F32 && u.grad_dtype != PIPE_RT_GRAD_BF16)
    return false;
  if (u.step < 1)
    return false;
  bool arraysNeeded = u.n > 0;
  if (arraysNeeded && (!u.param || !u.grad))
    return false;
  switch (u.kind) {
  case PIPE_RT_OPTIM_ADAMW:
    return !arraysNeeded || (u.state0 && u.state1);
  case PIPE_RT_OPTIM_SGD:
    if (u.sgd.nesterov && (u.sgd.momentum <= 0.0f || u.sgd.dampening != 0.0f))
      return false;
    return !arraysNeeded || u.sgd.momentum == 0.0f || u.state0;
  }
  return false;
}

int pipe_rt_host_optimizer_submit(pipe_rt_host_optimizer *opt,
                                  const pipe_rt_optim_update *update,
                                  pipe_rt_optim_task **task) {
  if (task)
    *task = nullptr;
  if (!opt || !update || !task || !isValid(*update))
    return PIPE_RT_INVALID_ARGUMENT;
  auto *t = new (std::nothrow) pipe_rt_optim_task();
  if (!t)
    return PIPE_RT_INVALID_ARGUMENT;
  const pipe_rt_optim_update &u = *update;
  t->update = u;
  if (u.kind == PIPE_RT_OPTIM_ADAMW) {
    const pipe_rt_adamw_config &c = u.adamw;
    double step = double(u.step);
    double bc1 = 1.0 - std::pow(double(c.beta1), step);
    double bc2 = 1.0 - std::pow(double(c.beta2), step);
    AdamWScalars &s = t->adamw;
    s.decay = float(1.0 - double(c.lr) * double(c.weight_decay));
    s.beta1 = c.beta1;
    s.oneMinusBeta1 = float(1.0 - double(c.beta1));
    s.beta2 = c.beta2;
    s.oneMinusBeta2 = float(1.0 - double(c.beta2));
    s.eps = c.eps;
    s.negStepSize = float(-double(c.lr) / bc1);
    s.bc2Sqrt = float(std::sqrt(bc2));
    s.gradScale = u.grad_scale;
  } else {
    const pipe_rt_sgd_config &c = u.sgd;
    SGDScalars &s = t->sgd;
    s.negLr = -c.lr;
    s.momentum = c.momentum;
    s.oneMinusDampening = float(1.0 - double(c.dampening));
    s.weightDecay = c.weight_decay;
    s.gradScale = u.grad_scale;
  }
  t->numChunks = (u.n + kChunkSize - 1) / kChunkSize;
  if (t->numChunks == 0) {
    t->finished = true;
  } else {
    {
      std::lock_guard<std::mutex> lock(opt->mutex);
      opt->queue.push_back(t);
    }
    opt->workCv.notify_all();
  }
  *task = t;
  return PIPE_RT_OK;
}

int pipe_rt_host_optimizer_wait(pipe_rt_host_optimizer *opt,
                                pipe_rt_optim_task *task) {
  if (!opt || !task)
    return PIPE_RT_INVALID_ARGUMENT;
  {
    std::unique_lock<std::mutex> lock(opt->mutex);
    opt->doneCv.wait(lock, [&] { return task->finished; });
  }
  delete task;
  return PIPE_RT_OK;
}

int pipe_rt_host_optimizer_run(pipe_rt_host_optimizer *opt,
                               const pipe_rt_optim_update *update) {
  pipe_rt_optim_task *task = nullptr;
  int status = pipe_rt_host_optimizer_submit(opt, update, &task);
  if (status != PIPE_RT_OK)
    return status;
  return pipe_rt_host_optimizer_wait(opt, task);
}

size_t pipe_rt_host_optimizer_chunk_size(void) { return kChunkSize; }

} // extern "C"
