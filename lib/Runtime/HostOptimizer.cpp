//===- HostOptimizer.cpp - Host parameter-server optimizer thread pool ----===//
//
// SGD and AdamW on fp32 master weights, run by a persistent thread pool.
// C++17 standard library only: this file is built without MLIR or LLVM.
//
// The element-wise loops live in HostOptimizerKernels.inc, compiled once per
// instruction set (baseline, AVX2, AVX-512F); this file picks a variant at
// run time from the CPU's features, splits each task into chunks and hands
// them to the workers. Every element is updated independently by the same
// straight-line float formula (docs/runtime.md) and the kernels are compiled
// with -ffp-contract=off, so the result depends neither on the number of
// threads, nor on the chunking, nor on the variant.
//
//===----------------------------------------------------------------------===//

#include "pipe/Runtime/HostOptimizer.h"

#include "Bf16.h"
#include "Cores.h"
#include "HostOptimizerKernels.h"

#include <atomic>
#include <cctype>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

using namespace pipe_rt::optim;

namespace {

// 64 Ki elements: large enough that claiming a chunk under the pool mutex is
// negligible (an AdamW chunk moves ~1.8 MB, 0.1-1 ms of work) and that each
// worker streams long runs through the hardware prefetchers (64 pages per
// array), small enough to balance threads on one L2L layer (12.6 M params =
// 192 chunks). A multiple of 16 floats, so chunks keep the 64-byte phase.
constexpr size_t kChunkSize = size_t(1) << 16;
constexpr size_t kCacheLine = 64;

constexpr pipe_rt_optim_isa kAllIsas[] = {PIPE_RT_OPTIM_ISA_BASELINE,
                                          PIPE_RT_OPTIM_ISA_AVX2,
                                          PIPE_RT_OPTIM_ISA_AVX512};

bool isKnownIsa(int isa) {
  return isa >= PIPE_RT_OPTIM_ISA_BASELINE && isa <= PIPE_RT_OPTIM_ISA_AVX512;
}

} // namespace

ChunkKernel pipe_rt::optim::kernelFor(pipe_rt_optim_isa isa) {
  switch (isa) {
#ifdef PIPE_RT_OPTIM_X86_VARIANTS
  case PIPE_RT_OPTIM_ISA_AVX2:
    return runChunkAVX2;
  case PIPE_RT_OPTIM_ISA_AVX512:
    return runChunkAVX512;
#endif
  default:
    return runChunkBaseline;
  }
}

namespace {

bool cpuSupports(pipe_rt_optim_isa isa) {
  switch (isa) {
  case PIPE_RT_OPTIM_ISA_BASELINE:
    return true;
#ifdef PIPE_RT_OPTIM_X86_VARIANTS
  // __builtin_cpu_supports also checks that the OS saves the wide registers
  // (XCR0), so a kernel or hypervisor without AVX-512 state is caught.
  case PIPE_RT_OPTIM_ISA_AVX2:
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2");
  case PIPE_RT_OPTIM_ISA_AVX512:
    // -mavx512f implies AVX2 code generation too.
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2");
#endif
  default:
    return false;
  }
}

pipe_rt_optim_isa widestAvailableUpTo(pipe_rt_optim_isa limit) {
  pipe_rt_optim_isa best = PIPE_RT_OPTIM_ISA_BASELINE;
  for (pipe_rt_optim_isa isa : kAllIsas)
    if (isa <= limit && cpuSupports(isa))
      best = isa;
  return best;
}

// PIPE_RT_OPTIM_ISA, read once per process.
pipe_rt_optim_isa chooseDefaultIsa() {
  const char *env = std::getenv("PIPE_RT_OPTIM_ISA");
  std::string want = env ? env : "";
  for (char &c : want)
    c = char(std::tolower(static_cast<unsigned char>(c)));
  if (want.empty() || want == "auto")
    return widestAvailableUpTo(PIPE_RT_OPTIM_ISA_AVX512);
  for (pipe_rt_optim_isa isa : kAllIsas) {
    if (want != pipe_rt_optim_isa_name(isa))
      continue;
    pipe_rt_optim_isa got = widestAvailableUpTo(isa);
    if (got != isa)
      std::fprintf(stderr,
                   "pipe runtime: PIPE_RT_OPTIM_ISA=%s is not available on "
                   "this CPU or build; the host optimizer uses %s\n",
                   env, pipe_rt_optim_isa_name(got));
    return got;
  }
  pipe_rt_optim_isa got = widestAvailableUpTo(PIPE_RT_OPTIM_ISA_AVX512);
  std::fprintf(stderr,
               "pipe runtime: unknown PIPE_RT_OPTIM_ISA=%s (expected "
               "baseline, avx2, avx512 or auto); the host optimizer uses %s\n",
               env, pipe_rt_optim_isa_name(got));
  return got;
}

} // namespace

struct pipe_rt_optim_task {
  KernelArgs args;
  ChunkKernel kernel = runChunkBaseline;
  size_t n = 0;
  // Elements before the first 64-byte boundary of param: chunk c > 0 starts
  // at head + c * kChunkSize, so no two workers write one line of param
  // (nor of the other arrays when they have param's alignment).
  size_t head = 0;
  size_t numChunks = 0;

  // Written by every worker under the pool mutex: kept off the cache line
  // of the read-only fields above, which all workers read while they run.
  alignas(kCacheLine) size_t nextChunk = 0; // guarded by the pool mutex
  size_t doneChunks = 0;                    // guarded by the pool mutex
  bool finished = false;                    // guarded by the pool mutex

  void runChunk(size_t chunk) const {
    size_t begin = chunk == 0 ? 0 : head + chunk * kChunkSize;
    size_t end = chunk + 1 == numChunks ? n : head + (chunk + 1) * kChunkSize;
    kernel(args, begin, end);
    // The bf16 copy from the chunk just written, still in cache.
    if (args.paramBf16)
      pipe_rt::narrowToBf16(args.paramBf16 + begin, args.param + begin,
                            int64_t(end - begin));
  }
};

struct pipe_rt_host_optimizer {
  std::mutex mutex;
  std::condition_variable workCv;         // a task was queued, or stopping
  std::condition_variable doneCv;         // a task finished
  std::deque<pipe_rt_optim_task *> queue; // tasks with unclaimed chunks
  bool stopping = false;
  std::vector<std::thread> workers;
  std::atomic<int> isa{PIPE_RT_OPTIM_ISA_BASELINE};

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
    numThreads = pipe_rt::processCores();
  auto *opt = new (std::nothrow) pipe_rt_host_optimizer();
  if (!opt)
    return nullptr;
  opt->isa.store(pipe_rt_host_optimizer_default_isa());
  // Thread creation fails (std::system_error) when the process or the
  // system runs out of threads or memory: give back the ones started.
  try {
    opt->workers.reserve(numThreads);
    for (unsigned i = 0; i < numThreads; ++i)
      opt->workers.emplace_back([opt] { opt->workerLoop(); });
  } catch (const std::exception &) {
    pipe_rt_host_optimizer_destroy(opt);
    return nullptr;
  }
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

int pipe_rt_optim_isa_available(pipe_rt_optim_isa isa) {
  return isKnownIsa(isa) && cpuSupports(isa) ? 1 : 0;
}

const char *pipe_rt_optim_isa_name(pipe_rt_optim_isa isa) {
  switch (isa) {
  case PIPE_RT_OPTIM_ISA_BASELINE:
    return "baseline";
  case PIPE_RT_OPTIM_ISA_AVX2:
    return "avx2";
  case PIPE_RT_OPTIM_ISA_AVX512:
    return "avx512";
  }
  return "unknown";
}

pipe_rt_optim_isa pipe_rt_host_optimizer_default_isa(void) {
  static const pipe_rt_optim_isa isa = chooseDefaultIsa();
  return isa;
}

pipe_rt_optim_isa
pipe_rt_host_optimizer_isa(const pipe_rt_host_optimizer *opt) {
  return opt ? pipe_rt_optim_isa(opt->isa.load())
             : pipe_rt_host_optimizer_default_isa();
}

int pipe_rt_host_optimizer_set_isa(pipe_rt_host_optimizer *opt,
                                   pipe_rt_optim_isa isa) {
  if (!opt || !pipe_rt_optim_isa_available(isa))
    return PIPE_RT_INVALID_ARGUMENT;
  opt->isa.store(isa);
  return PIPE_RT_OK;
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
    return PIPE_RT_OUT_OF_MEMORY;
  const pipe_rt_optim_update &u = *update;
  KernelArgs &a = t->args;
  a.bf16 = u.grad_dtype == PIPE_RT_GRAD_BF16;
  a.param = u.param;
  a.state0 = u.state0;
  a.state1 = u.state1;
  a.paramIn = u.param_in ? u.param_in : u.param;
  a.state0In = u.state0_in ? u.state0_in : u.state0;
  a.state1In = u.state1_in ? u.state1_in : u.state1;
  a.paramBf16 = u.param_bf16;
  a.grad = u.grad;
  a.n = u.n;
  a.adamw = {};
  a.sgd = {};
  if (u.kind == PIPE_RT_OPTIM_ADAMW) {
    const pipe_rt_adamw_config &c = u.adamw;
    double step = double(u.step);
    double bc1 = 1.0 - std::pow(double(c.beta1), step);
    double bc2 = 1.0 - std::pow(double(c.beta2), step);
    AdamWScalars &s = a.adamw;
    a.kind = KernelKind::AdamW;
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
    SGDScalars &s = a.sgd;
    bool first = u.step == 1;
    if (c.momentum == 0.0f)
      a.kind = KernelKind::SGDPlain;
    else if (c.nesterov)
      a.kind = first ? KernelKind::SGDNesterovFirst : KernelKind::SGDNesterov;
    else
      a.kind = first ? KernelKind::SGDMomentumFirst : KernelKind::SGDMomentum;
    s.negLr = -c.lr;
    s.momentum = c.momentum;
    s.oneMinusDampening = float(1.0 - double(c.dampening));
    s.weightDecay = c.weight_decay;
    s.gradScale = u.grad_scale;
  }
  t->kernel = kernelFor(pipe_rt_optim_isa(opt->isa.load()));
  t->n = u.n;
  auto addr = reinterpret_cast<uintptr_t>(u.param);
  t->head = addr % sizeof(float) == 0
                ? (kCacheLine - addr % kCacheLine) % kCacheLine / sizeof(float)
                : 0;
  if (u.n == 0)
    t->numChunks = 0;
  else if (u.n <= t->head + kChunkSize)
    t->numChunks = 1;
  else
    t->numChunks = (u.n - t->head + kChunkSize - 1) / kChunkSize;
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
