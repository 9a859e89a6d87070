//===- Executor.cpp - Running device programs of a compiled schedule ------===//
//
// The pipe_rt_act_* entry points that generated device programs call, the
// allocation hooks of the lowered block code, pipe_rt_session_run's driver
// and the copy counters it keeps (pipe_rt_session_copy_bytes). See
// "Executing programs" in docs/runtime.md for the semantics.
// Device buffers are only touched through the run's DeviceMemory
// (Backend.h): the simulated devices' arenas here, a GPU in PipeRuntimeCUDA.
//
//===----------------------------------------------------------------------===//

#include "Bf16.h"
#include "Format.h"
#include "Session.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>
#include <unordered_map>

using namespace pipe_rt;

namespace {

constexpr std::align_val_t kAlign{64};

void *hostAlloc(uint64_t bytes) {
  return ::operator new(size_t(bytes ? bytes : 1), kAlign, std::nothrow);
}
void hostFree(void *p) { ::operator delete(p, kAlign); }

void copyStrided(char *dst, const char *src, const std::vector<int64_t> &shape,
                 const int64_t *strides, size_t es) {
  size_t rank = shape.size();
  int64_t numel = 1;
  for (int64_t d : shape)
    numel *= d;
  if (numel == 0)
    return;
  std::vector<int64_t> idx(rank, 0);
  for (int64_t n = 0; n < numel; ++n) {
    int64_t off = 0;
    for (size_t i = 0; i < rank; ++i)
      off += idx[i] * strides[i];
    std::memcpy(dst + n * es, src + off * int64_t(es), es);
    for (size_t i = rank; i-- > 0;) {
      if (++idx[i] < shape[i])
        break;
      idx[i] = 0;
    }
  }
}

//===----------------------------------------------------------------------===//
// The default DeviceMemory: the simulated devices' arenas
//===----------------------------------------------------------------------===//

/// `staged`: behaves like a device the host cannot address (every access
/// through copies, sends by reference, hooks in host memory), to test the
/// executor's GPU paths without a GPU (PIPE_RT_BACKEND=staged).
class HostMemory final : public DeviceMemory {
public:
  HostMemory(pipe_rt_devices *devs, bool staged) : devs(devs), staged(staged) {}
  bool hostAccessible() const override { return !staged; }
  bool hookAllocsOnDevice() const override { return !staged; }
  int alloc(int device, uint64_t bytes, const char *what, void **out,
            std::string &error) override {
    int st = pipe_rt_alloc(devs, device, bytes, what, out);
    if (st != PIPE_RT_OK)
      error = pipe_rt_last_error(devs);
    return st;
  }
  void free(int device, void *ptr) override { pipe_rt_free(devs, device, ptr); }
  void usage(int device, uint64_t *inUse, uint64_t *peak) override {
    pipe_rt_device_memory(devs, device, inUse, peak);
  }
  int copy(int, Lane, void *dst, const void *src, uint64_t bytes,
           std::string &) override {
    if (bytes)
      std::memcpy(dst, src, bytes);
    return PIPE_RT_OK;
  }
  int copyPeer(int, void *dst, int, const void *src, uint64_t bytes,
               std::string &) override {
    if (bytes)
      std::memcpy(dst, src, bytes);
    return PIPE_RT_OK;
  }
  int zero(int, Lane, void *ptr, uint64_t bytes, std::string &) override {
    if (bytes)
      std::memset(ptr, 0, bytes);
    return PIPE_RT_OK;
  }
  int add(int, Lane, void *dst, const void *src, bool f64, int64_t n,
          std::string &) override {
    if (f64) {
      auto *d = static_cast<double *>(dst);
      auto *s = static_cast<const double *>(src);
      for (int64_t i = 0; i < n; ++i)
        d[i] += s[i];
    } else {
      auto *d = static_cast<float *>(dst);
      auto *s = static_cast<const float *>(src);
      for (int64_t i = 0; i < n; ++i)
        d[i] += s[i];
    }
    return PIPE_RT_OK;
  }
  int narrowBf16(int, Lane, void *dst, const void *src, int64_t n,
                 std::string &) override {
    narrowToBf16(static_cast<uint16_t *>(dst), static_cast<const float *>(src),
                 n);
    return PIPE_RT_OK;
  }
  int widenBf16(int, Lane, void *dst, const void *src, int64_t n,
                std::string &) override {
    widenFromBf16(static_cast<float *>(dst), static_cast<const uint16_t *>(src),
                  n);
    return PIPE_RT_OK;
  }
  int gather(int, void *dst, const void *src, const std::vector<int64_t> &shape,
             const int64_t *strides, size_t elemSize, std::string &) override {
    copyStrided(static_cast<char *>(dst), static_cast<const char *>(src), shape,
                strides, elemSize);
    return PIPE_RT_OK;
  }
  void *allocHost(uint64_t bytes) override { return hostAlloc(bytes); }
  void freeHost(void *ptr) override { hostFree(ptr); }
  HostFreeFn hostFreeFunction() const override { return hostFree; }

private:
  pipe_rt_devices *devs;
  bool staged;
};

class HostBackend final : public Backend {
public:
  explicit HostBackend(bool staged) : staged(staged) {}
  const char *name() const override { return staged ? "staged" : "host"; }
  bool usesArenas() const override { return true; }
  int createMemory(pipe_rt_devices *devs, int, const uint64_t *, double,
                   std::unique_ptr<DeviceMemory> &out, std::string &) override {
    out = std::make_unique<HostMemory>(devs, staged);
    return PIPE_RT_OK;
  }

private:
  bool staged;
};

//===----------------------------------------------------------------------===//
// Allocation hooks
//===----------------------------------------------------------------------===//

/// The block call running on this thread: its allocations are charged to
/// `device` and remembered, so that results the block allocated can be
/// adopted and its leftovers freed.
struct CallScope {
  RunState *run;
  int device;
  const std::string *what;
  std::set<void *> allocs;     // device memory
  std::set<void *> hostAllocs; // host memory from the hooks
  std::string error;
  int errorStatus = PIPE_RT_OUT_OF_MEMORY;
};
thread_local CallScope *tlsScope = nullptr;

/// Host allocations made by the hooks (outside any device program, as a
/// stand-in after an arena overflow, or always on a backend whose hooks
/// allocate host memory): pointer -> alignment.
std::mutex hookHostMu;
std::unordered_map<void *, size_t> hookHostAllocs;

void recordScopeError(CallScope *scope, int status, const std::string &msg) {
  if (scope->error.empty()) {
    scope->error = msg;
    scope->errorStatus = status;
  }
}

void *hookAlloc(size_t bytes, size_t alignment) {
  CallScope *scope = tlsScope;
  if (scope && scope->run->memory->hookAllocsOnDevice()) {
    void *p = nullptr;
    if (alignment <= 64) {
      std::string error;
      int st = scope->run->memory->alloc(scope->device, bytes,
                                         scope->what->c_str(), &p, error);
      if (st == PIPE_RT_OK) {
        scope->allocs.insert(p);
        return p;
      }
      // The hook cannot fail: record the error for the action and hand out
      // host memory so the block function can finish.
      recordScopeError(scope, st, error);
    } else {
      recordScopeError(scope, PIPE_RT_OUT_OF_MEMORY,
                       format("%s: alignment %zu unsupported",
                              scope->what->c_str(), alignment));
    }
  }
  alignment = std::max<size_t>(alignment, 64);
  void *p = ::operator new(bytes ? bytes : 1, std::align_val_t(alignment),
                           std::nothrow);
  if (p) {
    std::lock_guard<std::mutex> lock(hookHostMu);
    hookHostAllocs.emplace(p, alignment);
  }
  if (p && scope)
    scope->hostAllocs.insert(p);
  return p;
}

void hookFree(void *p) {
  if (!p)
    return;
  {
    std::lock_guard<std::mutex> lock(hookHostMu);
    auto it = hookHostAllocs.find(p);
    if (it != hookHostAllocs.end()) {
      ::operator delete(p, std::align_val_t(it->second));
      hookHostAllocs.erase(it);
      if (tlsScope)
        tlsScope->hostAllocs.erase(p);
      return;
    }
  }
  if (CallScope *scope = tlsScope) {
    if (scope->allocs.erase(p))
      scope->run->memory->free(scope->device, p);
  }
  // Otherwise: an arena pointer freed outside a block call, which generated
  // code never does; the arena frees it with the run.
}

} // namespace

extern "C" {
void *_mlir_memref_to_llvm_alloc(size_t bytes) { return hookAlloc(bytes, 16); }
void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t bytes) {
  return hookAlloc(bytes, alignment);
}
void _mlir_memref_to_llvm_free(void *ptr) { hookFree(ptr); }

void pipe_rt_index_fault(const char *site, int64_t index, int64_t bound) {
  // The block goes on with a clamped index; its action then fails with the
  // first fault.
  if (CallScope *scope = tlsScope)
    recordScopeError(scope, PIPE_RT_INVALID_ARGUMENT,
                     format("%s: index %lld is outside [0, %lld)", site,
                            (long long)index, (long long)bound));
}
}

std::shared_ptr<Backend> pipe_rt::hostBackend() {
  static std::shared_ptr<Backend> backend = [] {
    const char *env = std::getenv("PIPE_RT_BACKEND");
    return env && !std::strcmp(env, "staged")
               ? stagedBackend()
               : std::make_shared<HostBackend>(false);
  }();
  return backend;
}

std::shared_ptr<Backend> pipe_rt::stagedBackend() {
  static std::shared_ptr<Backend> backend = std::make_shared<HostBackend>(true);
  return backend;
}

int pipe_rt::callScopeDevice() { return tlsScope ? tlsScope->device : -1; }

void *pipe_rt::callScopeAlloc(size_t bytes) {
  CallScope *scope = tlsScope;
  if (!scope)
    return nullptr;
  void *p = nullptr;
  std::string error;
  int st = scope->run->memory->alloc(scope->device, bytes, scope->what->c_str(),
                                     &p, error);
  if (st != PIPE_RT_OK) {
    recordScopeError(scope, st, error);
    return nullptr;
  }
  scope->allocs.insert(p);
  return p;
}

bool pipe_rt::callScopeFree(void *ptr) {
  CallScope *scope = tlsScope;
  if (!scope || !scope->allocs.erase(ptr))
    return false;
  scope->run->memory->free(scope->device, ptr);
  return true;
}

void pipe_rt::callScopeError(int status, const std::string &message) {
  if (CallScope *scope = tlsScope)
    recordScopeError(scope, status, *scope->what + ": " + message);
}

//===----------------------------------------------------------------------===//
// Buffers, job queues, run state
//===----------------------------------------------------------------------===//

Buffer::~Buffer() {
  if (!data || !owned)
    return;
  if (device >= 0)
    run->memory->free(device, data);
  else
    run->memory->freeHost(data);
}

int pipe_rt::allocBuffer(RunState &run, int d, uint64_t bytes, const char *what,
                         BufferPtr &out, std::string &error) {
  auto b = std::make_shared<Buffer>();
  b->run = &run;
  b->bytes = bytes;
  if (d < 0) {
    b->data = run.memory->allocHost(bytes);
    if (!b->data) {
      error = format("%s: host out of memory (%llu bytes)", what,
                     (unsigned long long)bytes);
      return PIPE_RT_OUT_OF_MEMORY;
    }
  } else {
    int st = run.memory->alloc(d, bytes, what, &b->data, error);
    if (st != PIPE_RT_OK)
      return st;
    b->device = d;
  }
  out = std::move(b);
  return PIPE_RT_OK;
}

JobQueue::JobQueue() {
  worker = std::thread([this] {
    std::unique_lock<std::mutex> lock(mu);
    while (true) {
      cv.wait(lock, [&] { return stopping || !queue.empty(); });
      if (queue.empty())
        return;
      JobPtr job = queue.front();
      queue.pop_front();
      lock.unlock();
      std::string error;
      int status = job->work(error);
      job->work = nullptr; // drop captured buffers now
      lock.lock();
      job->status = status;
      job->error = std::move(error);
      job->done = true;
      cv.notify_all();
    }
  });
}

JobQueue::~JobQueue() {
  {
    std::lock_guard<std::mutex> lock(mu);
    stopping = true;
    cv.notify_all();
  }
  worker.join();
}

JobQueue::JobPtr JobQueue::submit(std::function<int(std::string &)> work) {
  auto job = std::make_shared<Job>();
  job->work = std::move(work);
  std::lock_guard<std::mutex> lock(mu);
  queue.push_back(job);
  cv.notify_all();
  return job;
}

int JobQueue::wait(const JobPtr &job) {
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return job->done; });
  return job->status;
}

RunState::~RunState() {
  // Jobs may hold buffers: finish them before the arenas go.
  hostQueue.reset();
  for (auto &ds : devices) {
    ds->h2d.reset();
    ds->d2h.reset();
  }
  devices.clear();
  reduces.clear();
  inFlight.clear();
  psShadow.clear();
  psGrads.clear(); // pushed but not consumed: a failed run
  // Buffers are gone: the memory (which may hold the arenas) goes next.
  memory.reset();
  if (devs)
    pipe_rt_devices_destroy(devs);
}

double RunState::now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                       session->traceEpoch)
      .count();
}

void RunState::traceEvent(const std::string &name, const char *category,
                          TrackKind kind, int index, double start, double end) {
  if (!session->tracing)
    return;
  std::lock_guard<std::mutex> lock(session->traceMu);
  session->trace.push_back({name, category, kind, index, start, end});
}

int RunState::linkIndex(int from, int to) {
  std::lock_guard<std::mutex> lock(session->traceMu);
  auto &links = session->traceLinks;
  for (size_t i = 0; i < links.size(); ++i)
    if (links[i] == std::make_pair(from, to))
      return int(i);
  links.push_back({from, to});
  return int(links.size()) - 1;
}

/// An asynchronous action waiting for pipe_rt_act_wait.
struct pipe_rt::PendingToken {
  pipe_rt_token channel = 0; // a send/recv, or 0 for a job
  JobQueue *queue = nullptr;
  JobQueue::JobPtr job;
  /// Runs on the device thread once the transfer/job succeeded.
  std::function<int(std::string &)> onDone;
  BufferPtr keepAlive;                  // a recv's target buffer
  std::shared_ptr<uint64_t> inFlightId; // a by-reference recv's target
  std::string what;
  double start = 0;
  int link = -1;
};

//===----------------------------------------------------------------------===//
// Helpers of the actions
//===----------------------------------------------------------------------===//

namespace {

int fail(pipe_rt_device_ctx *ctx, int status, const std::string &msg) {
  if (ctx->error.empty()) {
    ctx->error = msg;
    ctx->status = status;
  }
  return status;
}

DeviceState &deviceOf(pipe_rt_device_ctx *ctx) {
  return *ctx->run->devices[ctx->device];
}

const TypeInfo &valueType(const Manifest &m, int v) {
  return m.types[m.valueTypes[v]];
}

/// "device 1: forward stage 's1' mb 0 step 0".
std::string describe(pipe_rt_device_ctx *ctx, const char *action, int stage,
                     int mb, int step) {
  const Manifest &m = *ctx->run->m;
  std::string s = format("device %d: %s", ctx->device, action);
  if (stage >= 0 && stage < int(m.stages.size()))
    s += " stage '" + m.stages[stage].name + "'";
  else if (stage != INT32_MIN)
    s += format(" stage %d", stage);
  if (mb >= 0)
    s += format(" mb %d", mb);
  return s + format(" step %d", step);
}

/// Checks the common action arguments; the stage must be on this device.
int checkAction(pipe_rt_device_ctx *ctx, const std::string &what, int stage,
                int mb, int step) {
  if (!ctx || !ctx->run)
    return PIPE_RT_INVALID_ARGUMENT;
  const Manifest &m = *ctx->run->m;
  const ScheduleInfo &x = *ctx->run->schedule;
  if (stage < 0 || stage >= int(m.stages.size()))
    return fail(ctx, PIPE_RT_INVALID_ARGUMENT, what + ": no such stage");
  if (m.stages[stage].device != ctx->device)
    return fail(
        ctx, PIPE_RT_INVALID_ARGUMENT,
        what + format(": the stage is on device %d", m.stages[stage].device));
  if (mb < -1 || mb >= x.microbatches)
    return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                what +
                    format(": micro-batch out of range (%d)", x.microbatches));
  if (step < 0 || step >= x.steps)
    return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                what + format(": step out of range (%d)", x.steps));
  return PIPE_RT_OK;
}

/// dst += src elementwise for float types (both on `dst`'s device); other
/// types are left alone.
int addInto(Buffer &dst, const Buffer &src, const TypeInfo &t,
            std::string &error) {
  if (t.dtype != DType::F32 && t.dtype != DType::F64)
    return PIPE_RT_OK;
  return dst.run->memory->add(dst.device, Lane::Compute, dst.data, src.data,
                              t.dtype == DType::F64, t.numel, error);
}

int zeros(pipe_rt_device_ctx *ctx, const TypeInfo &t, const std::string &what,
          BufferPtr &out) {
  std::string error;
  int st =
      allocBuffer(*ctx->run, ctx->device, t.bytes(), what.c_str(), out, error);
  if (st == PIPE_RT_OK)
    st = ctx->run->memory->zero(ctx->device, Lane::Compute, out->data,
                                t.bytes(), error);
  if (st != PIPE_RT_OK)
    return fail(ctx, st, what + ": " + error);
  return PIPE_RT_OK;
}

/// DeviceMemory::copy / copyPeer, counted per device and lane
/// (pipe_rt_session_copy_bytes). Every copy of the executor goes through
/// these.
int laneCopy(RunState &run, int device, Lane lane, void *dst, const void *src,
             uint64_t bytes, std::string &error) {
  int st = run.memory->copy(device, lane, dst, src, bytes, error);
  if (st == PIPE_RT_OK)
    run.countCopy(device, lane, bytes);
  return st;
}
int peerCopy(RunState &run, int device, void *dst, int srcDevice,
             const void *src, uint64_t bytes, std::string &error) {
  int st = run.memory->copyPeer(device, dst, srcDevice, src, bytes, error);
  if (st == PIPE_RT_OK)
    run.countCopy(device, Lane::Compute, bytes);
  return st;
}

/// Copies host bytes into a device buffer (or the reverse) on `lane`.
int toDevice(RunState &run, Lane lane, Buffer &dst, const void *src,
             uint64_t bytes, std::string &error) {
  return laneCopy(run, dst.device, lane, dst.data, src, bytes, error);
}
int toHost(RunState &run, Lane lane, void *dst, const Buffer &src,
           uint64_t bytes, std::string &error) {
  return laneCopy(run, src.device, lane, dst, src.data, bytes, error);
}

/// The bytes of a buffer as host memory: the buffer itself when the host
/// can read it, else a copy in `staging`.
const unsigned char *hostView(RunState &run, Lane lane, const Buffer &b,
                              std::vector<unsigned char> &staging,
                              std::string &error, int &status) {
  status = PIPE_RT_OK;
  if (b.device < 0 || run.memory->hostAccessible())
    return static_cast<const unsigned char *>(b.data);
  staging.resize(b.bytes);
  status = toHost(run, lane, staging.data(), b, b.bytes, error);
  return staging.data();
}

/// Calls block function `fid` with `args`; fills `results` with buffers the
/// runtime owns (adopted hook allocations or copies).
int callBlock(pipe_rt_device_ctx *ctx, int fid,
              const std::vector<BufferPtr> &args,
              std::vector<BufferPtr> &results, const std::string &what) {
  RunState &run = *ctx->run;
  const Manifest &m = *run.m;
  const FunctionInfo &f = m.functions[fid];
  auto fn = reinterpret_cast<void (*)(void **)>(run.session->functions[fid]);
  std::vector<std::vector<int64_t>> descs(args.size());
  std::vector<void *> argv(1 + args.size(), nullptr);
  for (size_t i = 0; i < args.size(); ++i) {
    const TypeInfo &t = m.types[f.args[i]];
    auto &d = descs[i];
    auto ptr = reinterpret_cast<int64_t>(args[i]->data);
    d = {ptr, ptr, 0};
    d.insert(d.end(), t.shape.begin(), t.shape.end());
    std::vector<int64_t> strides(t.shape.size());
    int64_t s = 1;
    for (size_t k = t.shape.size(); k-- > 0;) {
      strides[k] = s;
      s *= t.shape[k];
    }
    d.insert(d.end(), strides.begin(), strides.end());
    argv[1 + i] = d.data();
  }
  size_t words = 0;
  for (int tid : f.results)
    words += 3 + 2 * m.types[tid].shape.size();
  std::vector<int64_t> res(words, 0);
  argv[0] = words ? res.data() : nullptr;

  std::string label = what + " (" + f.symbol + ")";
  CallScope scope{&run, ctx->device, &label, {}, {}, {}};
  run.memory->beginCall(ctx->device);
  tlsScope = &scope;
  fn(argv.data());
  tlsScope = nullptr;
  std::string error;
  // Waits for the device work the block queued (a GPU's kernels).
  int status = run.memory->endCall(ctx->device, error);
  if (status != PIPE_RT_OK)
    error = label + ": " + error;

  results.clear();
  size_t o = 0;
  for (size_t j = 0; j < f.results.size(); ++j) {
    const TypeInfo &t = m.types[f.results[j]];
    size_t rank = t.shape.size();
    void *alloc = reinterpret_cast<void *>(res[o]);
    char *aligned = reinterpret_cast<char *>(res[o + 1]);
    int64_t offset = res[o + 2];
    const int64_t *sizes = &res[o + 3];
    const int64_t *strides = &res[o + 3 + rank];
    o += 3 + 2 * rank;
    bool dense = true, shapeOk = true;
    int64_t expect = 1;
    for (size_t k = rank; k-- > 0;) {
      shapeOk &= sizes[k] == t.shape[k];
      if (sizes[k] != 1 && strides[k] != expect)
        dense = false;
      expect *= t.shape[k];
    }
    if (!shapeOk && status == PIPE_RT_OK) {
      status = PIPE_RT_INVALID_ARGUMENT;
      error = format("%s: result %zu has the wrong shape", label.c_str(), j);
    }
    if (status != PIPE_RT_OK) {
      results.push_back(nullptr);
      continue;
    }
    if (dense && offset == 0 && alloc == aligned && scope.allocs.count(alloc)) {
      auto b = std::make_shared<Buffer>();
      b->run = &run;
      b->device = ctx->device;
      b->data = alloc;
      b->bytes = t.bytes();
      scope.allocs.erase(alloc);
      results.push_back(std::move(b));
      continue;
    }
    BufferPtr b;
    status = allocBuffer(run, ctx->device, t.bytes(), label.c_str(), b, error);
    if (status == PIPE_RT_OK)
      status = run.memory->gather(ctx->device, b->data,
                                  aligned + offset * t.elemSize, t.shape,
                                  strides, t.elemSize, error);
    results.push_back(std::move(b));
  }
  // Temporaries the block did not free (and results it aliased).
  for (void *p : scope.allocs)
    run.memory->free(ctx->device, p);
  for (void *p : std::set<void *>(scope.hostAllocs))
    hookFree(p);
  if (!scope.error.empty())
    return fail(ctx, scope.errorStatus, what + ": " + scope.error);
  if (status != PIPE_RT_OK)
    return fail(ctx, status, what + ": " + error);
  return PIPE_RT_OK;
}

/// The value of param `pid` this device computes with at `version`.
int getParam(pipe_rt_device_ctx *ctx, int pid, int version,
             const std::string &what, BufferPtr &out) {
  DeviceState &ds = deviceOf(ctx);
  const std::string &name = ctx->run->m->params[pid].name;
  std::lock_guard<std::mutex> lock(ds.mu);
  auto it = ds.params.find(pid);
  if (it == ds.params.end() || !it->second.value)
    return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                what + ": param '" + name + "' is not on the device" +
                    (ctx->run->psParam[pid] ? " (missing ps.load?)" : ""));
  DeviceParam &dp = it->second;
  if (version < 0 || version == dp.updates) {
    out = dp.value;
    return PIPE_RT_OK;
  }
  if (version > dp.updates)
    return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                what + format(": weight version %d of param '%s' is ahead of "
                              "its %d update(s)",
                              version, name.c_str(), dp.updates));
  auto v = dp.versions.find(version);
  if (v == dp.versions.end())
    return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                what + format(": weight version %d of param '%s' was not "
                              "kept",
                              version, name.c_str()));
  out = v->second;
  return PIPE_RT_OK;
}

/// Forward (or recompute) of a stage.
int runStage(pipe_rt_device_ctx *ctx, int sid, int mb, int step, int version,
             bool keep, bool recompute, const std::string &what) {
  RunState &run = *ctx->run;
  const Manifest &m = *run.m;
  const StageInfo &stage = m.stages[sid];
  DeviceState &ds = deviceOf(ctx);
  std::lock_guard<std::mutex> compute(ds.computeMu);
  auto key = std::make_tuple(sid, step, mb);
  std::map<int, BufferPtr> locals;
  if (recompute) {
    std::lock_guard<std::mutex> lock(ds.mu);
    auto it = ds.stashes.find(key);
    if (it == ds.stashes.end())
      return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                  what + ": nothing stashed (missing forward?)");
    if (it->second.full)
      return PIPE_RT_OK;
    locals = it->second.external;
  }
  bool stashAll = keep || recompute;
  bool stashInputs = stashAll || !run.schedule->forwardOnly;
  StageStash stash;
  stash.full = stashAll;
  if (stashAll)
    stash.runs.resize(stage.runs.size());
  for (size_t i = 0; i < stage.runs.size(); ++i) {
    const RunInfo &r = m.runs[stage.runs[i]];
    std::vector<BufferPtr> args;
    for (int pid : r.params) {
      BufferPtr p;
      if (int st = getParam(ctx, pid, version, what, p))
        return st;
      args.push_back(std::move(p));
    }
    for (int vid : r.inputs) {
      auto it = locals.find(vid);
      if (it == locals.end()) {
        BufferPtr b;
        const TypeInfo &t = valueType(m, vid);
        if (recompute)
          return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                      what + format(": value %d was not stashed", vid));
        if (int k = m.inputIndex[vid]; k >= 0) {
          std::string error;
          if (int st = allocBuffer(run, ctx->device, t.bytes(), "graph input",
                                   b, error))
            return fail(ctx, st, what + ": " + error);
          const void *src =
              run.inputs[(size_t(step) * run.schedule->microbatches + mb) *
                             m.inputs.size() +
                         k];
          if (!src)
            return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                        what + format(": graph input %d is null", k));
          if (int st = toDevice(run, Lane::Compute, *b, src, t.bytes(), error))
            return fail(ctx, st, what + ": graph input: " + error);
        } else {
          std::lock_guard<std::mutex> lock(ds.mu);
          auto v = ds.values.find(std::make_tuple(vid, step, mb));
          if (v == ds.values.end()) {
            int p = m.producer[vid];
            return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                        what + format(": value %d (from stage '%s') is not "
                                      "on the device (missing recv or "
                                      "forward?)",
                                      vid,
                                      p >= 0 ? m.stages[p].name.c_str() : "?"));
          }
          b = v->second.first;
          if (--v->second.second <= 0)
            ds.values.erase(v);
        }
        it = locals.emplace(vid, b).first;
        if (stashInputs)
          stash.external[vid] = b;
      }
      args.push_back(it->second);
    }
    std::vector<BufferPtr> results;
    if (int st = callBlock(ctx, r.forward, args, results,
                           what + " run '" + r.name + "'"))
      return st;
    for (size_t j = 0; j < r.outputs.size(); ++j)
      locals[r.outputs[j]] = results[j];
    if (stashAll) {
      stash.runs[i].inputs.assign(args.begin() + r.params.size(), args.end());
      stash.runs[i].saved.assign(results.begin() + r.outputs.size(),
                                 results.end());
    }
  }
  std::lock_guard<std::mutex> lock(ds.mu);
  if (!recompute) {
    // Publish what other stages read, and the loss.
    for (int rid : stage.runs)
      for (int vid : m.runs[rid].outputs) {
        if (!m.consumers[vid].empty())
          ds.values[std::make_tuple(vid, step, mb)] = {
              locals[vid], int(m.consumers[vid].size())};
        if (vid != m.lossValue)
          continue;
        size_t idx = size_t(step) * run.schedule->microbatches + mb;
        std::string error;
        if (int st = toHost(run, Lane::Compute, &run.losses[idx], *locals[vid],
                            4, error))
          return fail(ctx, st, what + ": reading the loss: " + error);
        run.lossSeen[idx] = true;
        if (run.schedule->forwardOnly)
          continue;
        BufferPtr seed;
        if (int st = allocBuffer(run, ctx->device, 4, "loss seed", seed, error))
          return fail(ctx, st, what + ": " + error);
        float seedValue = float(m.lossSeed / run.schedule->microbatches);
        if (int st = toDevice(run, Lane::Compute, *seed, &seedValue, 4, error))
          return fail(ctx, st, what + ": loss seed: " + error);
        ds.cotangents[std::make_tuple(vid, step, mb, -1)] = seed;
      }
  }
  if (stashInputs)
    ds.stashes[key] = std::move(stash);
  return PIPE_RT_OK;
}

/// Adds `b` into a gradient/cotangent slot (adopting it when empty).
int accumulate(BufferPtr &slot, BufferPtr b, const TypeInfo &t,
               std::string &error) {
  if (!slot) {
    slot = std::move(b);
    return PIPE_RT_OK;
  }
  return addInto(*slot, *b, t, error);
}

int runBackward(pipe_rt_device_ctx *ctx, int sid, int mb, int step, int version,
                int part, const std::string &what) {
  RunState &run = *ctx->run;
  const Manifest &m = *run.m;
  const StageInfo &stage = m.stages[sid];
  DeviceState &ds = deviceOf(ctx);
  std::lock_guard<std::mutex> compute(ds.computeMu);
  auto key = std::make_tuple(sid, step, mb);
  StageStash *stash;
  {
    std::lock_guard<std::mutex> lock(ds.mu);
    auto it = ds.stashes.find(key);
    if (it == ds.stashes.end())
      return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                  what + ": no stashed activations (missing forward?)");
    stash = &it->second;
  }
  auto argsOf = [&](const RunInfo &r, StageStash::Run &sr,
                    std::vector<BufferPtr> &args) {
    for (int pid : r.params) {
      BufferPtr p;
      if (int st = getParam(ctx, pid, version, what, p))
        return st;
      args.push_back(std::move(p));
    }
    args.insert(args.end(), sr.inputs.begin(), sr.inputs.end());
    args.insert(args.end(), sr.cotangents.begin(), sr.cotangents.end());
    args.insert(args.end(), sr.saved.begin(), sr.saved.end());
    return int(PIPE_RT_OK);
  };
  if (part != 2) {
    if (!stash->full)
      return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                  what + ": only the stage inputs are stashed (missing "
                         "recompute?)");
    if (stash->inputDone)
      return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                  what + ": input gradients already computed");
    for (size_t i = stage.runs.size(); i-- > 0;) {
      const RunInfo &r = m.runs[stage.runs[i]];
      StageStash::Run &sr = stash->runs[i];
      sr.cotangents.clear();
      for (int idx : r.diffResults) {
        int vid = r.outputs[idx];
        BufferPtr c;
        {
          std::lock_guard<std::mutex> lock(ds.mu);
          auto it = ds.cotangents.find(std::make_tuple(vid, step, mb, -1));
          if (it != ds.cotangents.end()) {
            c = it->second;
            ds.cotangents.erase(it);
          }
        }
        if (!c)
          if (int st = zeros(ctx, valueType(m, vid), what + " cotangent", c))
            return st;
        sr.cotangents.push_back(std::move(c));
      }
      bool needed = false;
      for (int idx : r.diffInputs)
        needed |= m.inputIndex[r.inputs[idx]] < 0;
      // A full backward runs the fused function: one reverse sweep instead
      // of two that would each redo the cotangent chain.
      bool fused = part == 0 && r.bwdFused >= 0 && !r.diffParams.empty();
      if (!fused && (r.bwdInput < 0 || !needed))
        continue;
      std::vector<BufferPtr> args, results;
      if (int st = argsOf(r, sr, args))
        return st;
      if (int st = callBlock(ctx, fused ? r.bwdFused : r.bwdInput, args,
                             results, what + " run '" + r.name + "'"))
        return st;
      std::lock_guard<std::mutex> lock(ds.mu);
      if (fused) {
        sr.weightDone = true;
        for (size_t j = 0; j < r.diffParams.size(); ++j) {
          int pid = r.params[r.diffParams[j]];
          std::string error;
          if (m.params[pid].trainable)
            if (int st = accumulate(ds.grads[{pid, step}],
                                    results[r.diffInputs.size() + j],
                                    m.types[m.params[pid].type], error))
              return fail(ctx, st, what + ": " + error);
        }
      }
      for (size_t j = 0; j < r.diffInputs.size(); ++j) {
        int vid = r.inputs[r.diffInputs[j]];
        if (m.inputIndex[vid] >= 0)
          continue;
        int producer = m.producer[vid];
        int tag = producer >= 0 && m.stages[producer].device == ctx->device
                      ? -1
                      : sid;
        std::string error;
        if (int st =
                accumulate(ds.cotangents[std::make_tuple(vid, step, mb, tag)],
                           results[j], valueType(m, vid), error))
          return fail(ctx, st, what + ": " + error);
      }
    }
    stash->inputDone = true;
  }
  if (part == 1)
    return PIPE_RT_OK;
  if (!stash->inputDone)
    return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                what + ": weight gradients before input gradients (missing "
                       "backward part 1?)");
  for (size_t i = stage.runs.size(); i-- > 0;) {
    const RunInfo &r = m.runs[stage.runs[i]];
    if (r.bwdWeight < 0 || r.diffParams.empty() || stash->runs[i].weightDone)
      continue;
    std::vector<BufferPtr> args, results;
    if (int st = argsOf(r, stash->runs[i], args))
      return st;
    if (int st = callBlock(ctx, r.bwdWeight, args, results,
                           what + " run '" + r.name + "'"))
      return st;
    std::lock_guard<std::mutex> lock(ds.mu);
    for (size_t j = 0; j < r.diffParams.size(); ++j) {
      int pid = r.params[r.diffParams[j]];
      if (!m.params[pid].trainable)
        continue;
      std::string error;
      if (int st = accumulate(ds.grads[{pid, step}], results[j],
                              m.types[m.params[pid].type], error))
        return fail(ctx, st, what + ": " + error);
    }
  }
  std::lock_guard<std::mutex> lock(ds.mu);
  ds.stashes.erase(key);
  return PIPE_RT_OK;
}

int64_t addToken(pipe_rt_device_ctx *ctx, std::shared_ptr<PendingToken> t) {
  DeviceState &ds = deviceOf(ctx);
  int64_t id = ds.nextToken++;
  ds.tokens.emplace(id, std::move(t));
  return id;
}

/// Waits until every device in `participants` arrived at rendezvous `key`
/// (after `deposit`), then calls `collect` (all under the sync lock).
int rendezvous(pipe_rt_device_ctx *ctx, std::pair<int, int> key,
               const std::set<int> &participants,
               const std::function<void(RunState::Reduce &)> &deposit,
               const std::function<int(RunState::Reduce &)> &collect,
               const std::string &what) {
  RunState &run = *ctx->run;
  std::unique_lock<std::mutex> lock(run.syncMu);
  RunState::Reduce &r = run.reduces[key];
  deposit(r);
  r.arrived.insert(ctx->device);
  run.syncCv.notify_all();
  double watchdog = run.session->options.watchdog_seconds;
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration<double>(watchdog);
  run.syncCv.wait_until(lock, deadline, [&] {
    return r.arrived.size() == participants.size() || run.failed;
  });
  if (r.arrived.size() != participants.size()) {
    if (run.failed)
      return fail(ctx, PIPE_RT_ABORTED,
                  what + ": aborted by an error on "
                         "another device");
    std::string missing;
    for (int d : participants)
      if (!r.arrived.count(d))
        missing += (missing.empty() ? "" : ", ") + std::to_string(d);
    run.failed = true;
    run.syncCv.notify_all();
    return fail(ctx, PIPE_RT_TIMEOUT,
                what + format(": device(s) %s did not join within %g s",
                              missing.c_str(), watchdog));
  }
  int st = collect(r);
  if (++r.collected == participants.size())
    run.reduces.erase(key);
  return st;
}

/// Global gradient-norm clipping before the first update of `step`.
int clipGradients(pipe_rt_device_ctx *ctx, int step, const std::string &what) {
  RunState &run = *ctx->run;
  DeviceState &ds = deviceOf(ctx);
  double local = 0;
  {
    std::lock_guard<std::mutex> lock(ds.mu);
    for (auto &[key, g] : ds.grads) {
      // Each param counted once: by the lowest device holding it.
      if (key.second != step || *run.holders[key.first].begin() != ctx->device)
        continue;
      std::vector<unsigned char> staging;
      std::string error;
      int st;
      const float *p = reinterpret_cast<const float *>(
          hostView(run, Lane::Compute, *g, staging, error, st));
      if (st != PIPE_RT_OK)
        return fail(ctx, st, what + ": " + error);
      int64_t n = run.m->types[run.m->params[key.first].type].numel;
      for (int64_t i = 0; i < n; ++i)
        local += double(p[i]) * p[i];
    }
  }
  double total = 0;
  int st = rendezvous(
      ctx, {-1, step}, run.clipDevices,
      [&](RunState::Reduce &r) { r.sums[ctx->device] = local; },
      [&](RunState::Reduce &r) {
        for (auto &[d, s] : r.sums)
          total += s;
        return int(PIPE_RT_OK);
      },
      what + " (gradient clipping)");
  if (st != PIPE_RT_OK)
    return st;
  double norm = std::sqrt(total);
  double clip = run.session->options.clip_norm;
  ds.clipScale = float(std::min(1.0, clip / (norm + 1e-6)));
  ds.clippedSteps.insert(step);
  return PIPE_RT_OK;
}

pipe_rt_optim_update makeUpdate(pipe_rt_session *session, float *param,
                                SessionParam &state, const float *grad,
                                size_t n, float scale) {
  pipe_rt_optim_update u{};
  u.kind = session->options.optimizer;
  u.sgd = session->options.sgd;
  u.adamw = session->options.adamw;
  u.step = state.step + 1;
  u.param = param;
  bool adam = u.kind == PIPE_RT_OPTIM_ADAMW;
  if (adam || u.sgd.momentum != 0)
    state.state0.resize(n, 0.0f);
  if (adam)
    state.state1.resize(n, 0.0f);
  u.state0 = state.state0.empty() ? nullptr : state.state0.data();
  u.state1 = state.state1.empty() ? nullptr : state.state1.data();
  u.grad = grad;
  u.grad_dtype = PIPE_RT_GRAD_F32;
  u.grad_scale = scale;
  u.n = n;
  return u;
}

/// sum[i] += the i-th element of a pushed gradient copy (f32 or bf16).
void addPushed(float *sum, const Buffer &pushed, bool bf16, int64_t n) {
  if (bf16) {
    addFromBf16(sum, static_cast<const uint16_t *>(pushed.data), n);
    return;
  }
  const float *g = static_cast<const float *>(pushed.data);
  for (int64_t i = 0; i < n; ++i)
    sum[i] += g[i];
}

/// dst = bf16(src) for each span, on every core: the parameter server's
/// shadows when a run starts (302M params take ~0.1 s on one thread).
struct NarrowSpan {
  uint16_t *dst;
  const float *src;
  int64_t n;
};
void narrowInParallel(const std::vector<NarrowSpan> &spans) {
  constexpr int64_t kPiece = int64_t(1) << 20;
  std::vector<NarrowSpan> pieces;
  for (const NarrowSpan &s : spans)
    for (int64_t at = 0; at < s.n; at += kPiece)
      pieces.push_back({s.dst + at, s.src + at, std::min(kPiece, s.n - at)});
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < pieces.size();)
      narrowToBf16(pieces[i].dst, pieces[i].src, pieces[i].n);
  };
  size_t threads = std::min<size_t>(
      std::max(1u, std::thread::hardware_concurrency()), pieces.size());
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t)
    pool.emplace_back(work);
  work();
  for (std::thread &t : pool)
    t.join();
}

/// The host optimizer's update of parameter-server param `pid` (see
/// RunState::PsParam): out of place from the session's committed weights and
/// state into its spare copy the first time in a run, in place on the spare
/// copy after that.
pipe_rt_optim_update psUpdate(RunState &run, int pid, RunState::PsParam &ps,
                              const RunState::PsGrad &grad) {
  pipe_rt_session *session = run.session;
  SessionParam &committed = session->params[pid];
  SessionParam &spare = session->psSpare[pid];
  pipe_rt_optim_update u{};
  u.kind = session->options.optimizer;
  u.sgd = session->options.sgd;
  u.adamw = session->options.adamw;
  u.step = ps.step + 1;
  size_t n = grad.sum.size();
  u.grad = grad.sum.data();
  u.grad_dtype = PIPE_RT_GRAD_F32;
  if (grad.pushed) {
    n = grad.pushed->bytes / (grad.bf16 ? 2 : 4);
    u.grad = grad.pushed->data;
    u.grad_dtype = grad.bf16 ? PIPE_RT_GRAD_BF16 : PIPE_RT_GRAD_F32;
  }
  u.grad_scale = 1.0f;
  u.n = n;
  bool adam = u.kind == PIPE_RT_OPTIM_ADAMW;
  // One state array: in place on the spare copy once it holds the latest
  // values (or zeros for a state the session does not have yet), else out
  // of place from the committed one.
  auto state = [&](bool needed, std::vector<float> &out,
                   const std::vector<float> &in, bool &wrote,
                   const float *&from) {
    if (!needed)
      return (float *)nullptr;
    out.resize(n);
    if (!wrote && in.empty())
      std::fill(out.begin(), out.end(), 0.0f);
    else if (!wrote)
      from = in.data();
    wrote = true;
    return out.data();
  };
  u.state0 = state(adam || u.sgd.momentum != 0, spare.state0, committed.state0,
                   ps.wroteState0, u.state0_in);
  u.state1 =
      state(adam, spare.state1, committed.state1, ps.wroteState1, u.state1_in);
  spare.value.resize(committed.value.size());
  u.param = reinterpret_cast<float *>(spare.value.data());
  if (!ps.updated)
    u.param_in = reinterpret_cast<const float *>(committed.value.data());
  return u;
}

} // namespace

//===----------------------------------------------------------------------===//
// Entry points of device programs
//===----------------------------------------------------------------------===//

extern "C" {

int32_t pipe_rt_act_forward(pipe_rt_device_ctx *ctx, int32_t stage, int32_t mb,
                            int32_t step, int32_t version, int32_t keep) {
  if (!ctx)
    return PIPE_RT_INVALID_ARGUMENT;
  std::string what = describe(ctx, "forward", stage, mb, step);
  if (int st = checkAction(ctx, what, stage, mb, step))
    return st;
  if (mb < 0)
    return fail(ctx, PIPE_RT_INVALID_ARGUMENT, what + ": no micro-batch");
  double t0 = ctx->run->now();
  int st = runStage(ctx, stage, mb, step, version, keep != 0, false, what);
  ctx->run->traceEvent(what.substr(what.find(':') + 2), "compute",
                       TrackKind::Compute, ctx->device, t0, ctx->run->now());
  return st;
}

int32_t pipe_rt_act_recompute(pipe_rt_device_ctx *ctx, int32_t stage,
                              int32_t mb, int32_t step, int32_t version) {
  if (!ctx)
    return PIPE_RT_INVALID_ARGUMENT;
  std::string what = describe(ctx, "recompute", stage, mb, step);
  if (int st = checkAction(ctx, what, stage, mb, step))
    return st;
  double t0 = ctx->run->now();
  int st = runStage(ctx, stage, mb, step, version, true, true, what);
  ctx->run->traceEvent(what.substr(what.find(':') + 2), "compute",
                       TrackKind::Compute, ctx->device, t0, ctx->run->now());
  return st;
}

int32_t pipe_rt_act_backward(pipe_rt_device_ctx *ctx, int32_t stage, int32_t mb,
                             int32_t step, int32_t version, int32_t part) {
  if (!ctx)
    return PIPE_RT_INVALID_ARGUMENT;
  const char *name = part == 1   ? "backward.input"
                     : part == 2 ? "backward.weight"
                                 : "backward";
  std::string what = describe(ctx, name, stage, mb, step);
  if (int st = checkAction(ctx, what, stage, mb, step))
    return st;
  if (part < 0 || part > 2)
    return fail(ctx, PIPE_RT_INVALID_ARGUMENT, what + ": bad part");
  if (ctx->run->schedule->forwardOnly)
    return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                what + ": the schedule is forward-only");
  double t0 = ctx->run->now();
  int st = runBackward(ctx, stage, mb, step, version, part, what);
  ctx->run->traceEvent(what.substr(what.find(':') + 2), "compute",
                       TrackKind::Compute, ctx->device, t0, ctx->run->now());
  return st;
}

/// The checks a send and a recv share; names the transfer in `what` and
/// finds the values it carries (activations travel src -> dst along edge
/// (src, dst), gradients back along the same edge).
static int checkTransfer(pipe_rt_device_ctx *ctx, bool sending, int kind,
                         int src, int dst, int mb, int step, std::string &what,
                         const std::vector<int> *&values) {
  const char *name = sending
                         ? (kind == 0 ? "send activation" : "send gradient")
                         : (kind == 0 ? "recv activation" : "recv gradient");
  int local = sending ? src : dst, peer = sending ? dst : src;
  what = describe(ctx, name, local, mb, step);
  if (int st = checkAction(ctx, what, local, mb, step))
    return st;
  const Manifest &m = *ctx->run->m;
  if ((kind != 0 && kind != 1) || peer < 0 || peer >= int(m.stages.size()))
    return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                what + (sending ? ": bad kind or dst" : ": bad kind or src"));
  what +=
      (sending ? " to stage '" : " from stage '") + m.stages[peer].name + "'";
  auto edge = m.edges.find(kind == 0 ? std::make_pair(src, dst)
                                     : std::make_pair(dst, src));
  if (edge == m.edges.end())
    return fail(ctx, PIPE_RT_INVALID_ARGUMENT, what + ": no such edge");
  values = &edge->second;
  return PIPE_RT_OK;
}

int64_t pipe_rt_act_send(pipe_rt_device_ctx *ctx, int32_t kind, int32_t src,
                         int32_t dst, int32_t mb, int32_t step) {
  if (!ctx)
    return -PIPE_RT_INVALID_ARGUMENT;
  RunState &run = *ctx->run;
  const Manifest &m = *run.m;
  std::string what;
  const std::vector<int> *values;
  if (int st = checkTransfer(ctx, /*sending=*/true, kind, src, dst, mb, step,
                             what, values))
    return -st;
  DeviceState &ds = deviceOf(ctx);
  std::vector<unsigned char> payload;
  // By reference: the buffers themselves (null: zeros), the payload being
  // their id in run.inFlight.
  std::vector<BufferPtr> refs;
  {
    std::lock_guard<std::mutex> compute(ds.computeMu);
    std::lock_guard<std::mutex> lock(ds.mu);
    for (int vid : *values) {
      const TypeInfo &t = valueType(m, vid);
      size_t at = payload.size();
      if (!run.byReference)
        payload.resize(at + t.bytes(), 0);
      if (kind == 0) {
        auto v = ds.values.find(std::make_tuple(vid, step, mb));
        if (v == ds.values.end())
          return -fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                       what + format(": value %d not computed (missing "
                                     "forward?)",
                                     vid));
        if (run.byReference)
          refs.push_back(v->second.first);
        else
          std::memcpy(payload.data() + at, v->second.first->data, t.bytes());
        if (--v->second.second <= 0)
          ds.values.erase(v);
      } else {
        auto c = ds.cotangents.find(std::make_tuple(vid, step, mb, src));
        if (run.byReference)
          refs.push_back(c != ds.cotangents.end() && t.isFloat() ? c->second
                                                                 : nullptr);
        if (c == ds.cotangents.end())
          continue; // no cotangent: zeros
        if (t.isFloat() && !run.byReference)
          std::memcpy(payload.data() + at, c->second->data, t.bytes());
        ds.cotangents.erase(c);
      }
    }
  }
  if (run.byReference) {
    // Values are never written once published, and a sent cotangent left
    // the store: the receiver may read the buffers until it copied them.
    std::lock_guard<std::mutex> lock(run.inFlightMu);
    uint64_t id = run.nextInFlight++;
    run.inFlight[id] = {ctx->device, std::move(refs)};
    payload.resize(sizeof(id));
    std::memcpy(payload.data(), &id, sizeof(id));
  }
  pipe_rt_channel_key key{kind, src, dst, mb, step};
  auto t = std::make_shared<PendingToken>();
  t->what = what;
  t->start = run.now();
  t->link =
      run.tracing() ? run.linkIndex(ctx->device, m.stages[dst].device) : -1;
  int st = pipe_rt_send(run.devs, ctx->device, &key, payload.data(),
                        payload.size(), &t->channel);
  if (st != PIPE_RT_OK)
    return -fail(ctx, st, what + ": " + pipe_rt_last_error(run.devs));
  return addToken(ctx, std::move(t));
}

int64_t pipe_rt_act_recv(pipe_rt_device_ctx *ctx, int32_t kind, int32_t src,
                         int32_t dst, int32_t mb, int32_t step) {
  if (!ctx)
    return -PIPE_RT_INVALID_ARGUMENT;
  RunState &run = *ctx->run;
  const Manifest &m = *run.m;
  std::string what;
  const std::vector<int> *values;
  if (int st = checkTransfer(ctx, /*sending=*/false, kind, src, dst, mb, step,
                             what, values))
    return -st;
  uint64_t total = 0;
  for (int vid : *values)
    total += valueType(m, vid).bytes();
  auto t = std::make_shared<PendingToken>();
  t->what = what;
  t->start = run.now();
  std::string error;
  void *target;
  if (run.byReference) {
    t->inFlightId = std::make_shared<uint64_t>(0);
    target = t->inFlightId.get();
    total = sizeof(uint64_t);
  } else {
    if (int st = allocBuffer(run, ctx->device, total, what.c_str(),
                             t->keepAlive, error))
      return -fail(ctx, st, what + ": " + error);
    target = t->keepAlive->data;
  }
  pipe_rt_channel_key key{kind, src, dst, mb, step};
  int st =
      pipe_rt_recv(run.devs, ctx->device, &key, target, total, &t->channel);
  if (st != PIPE_RT_OK)
    return -fail(ctx, st, what + ": " + pipe_rt_last_error(run.devs));
  int device = ctx->device;
  BufferPtr buffer = t->keepAlive;
  std::shared_ptr<uint64_t> inFlightId = t->inFlightId;
  RunState *runp = &run;
  t->onDone = [runp, device, values, buffer, inFlightId, kind, mb, step,
               what](std::string &error) {
    RunState &run = *runp;
    const Manifest &m = *run.m;
    DeviceState &ds = *run.devices[device];
    std::lock_guard<std::mutex> compute(ds.computeMu);
    int srcDevice = -1;
    std::vector<BufferPtr> refs;
    if (inFlightId) {
      std::lock_guard<std::mutex> lock(run.inFlightMu);
      auto it = run.inFlight.find(*inFlightId);
      if (it == run.inFlight.end() ||
          it->second.second.size() != values->size()) {
        error = "the sender's buffers are gone (size mismatch?)";
        return int(PIPE_RT_SIZE_MISMATCH);
      }
      srcDevice = it->second.first;
      refs = std::move(it->second.second);
      run.inFlight.erase(it);
    }
    uint64_t at = 0;
    for (size_t i = 0; i < values->size(); ++i) {
      int vid = (*values)[i];
      const TypeInfo &t = valueType(m, vid);
      const char *src =
          buffer ? static_cast<const char *>(buffer->data) + at : nullptr;
      at += t.bytes();
      if (kind == 1 && !t.isFloat())
        continue;
      BufferPtr b;
      if (int st = allocBuffer(run, device, t.bytes(), what.c_str(), b, error))
        return st;
      int st = PIPE_RT_OK;
      if (!inFlightId)
        std::memcpy(b->data, src, t.bytes());
      else if (!refs[i])
        st = run.memory->zero(device, Lane::Compute, b->data, t.bytes(), error);
      else
        st = peerCopy(run, device, b->data, srcDevice, refs[i]->data, t.bytes(),
                      error);
      if (st != PIPE_RT_OK)
        return st;
      refs.empty() ? void() : refs[i].reset();
      std::lock_guard<std::mutex> lock(ds.mu);
      if (kind == 0) {
        auto &slot = ds.values[std::make_tuple(vid, step, mb)];
        if (!slot.first)
          slot.first = b;
        ++slot.second;
      } else if (int st = accumulate(
                     ds.cotangents[std::make_tuple(vid, step, mb, -1)], b, t,
                     error)) {
        return st;
      }
    }
    return int(PIPE_RT_OK);
  };
  return addToken(ctx, std::move(t));
}

int32_t pipe_rt_act_wait(pipe_rt_device_ctx *ctx, int64_t token) {
  if (!ctx)
    return PIPE_RT_INVALID_ARGUMENT;
  RunState &run = *ctx->run;
  DeviceState &ds = deviceOf(ctx);
  auto it = ds.tokens.find(token);
  if (it == ds.tokens.end())
    return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                format("device %d: wait of unknown token %lld", ctx->device,
                       (long long)token));
  std::shared_ptr<PendingToken> t = it->second;
  ds.tokens.erase(it);
  std::string error;
  if (t->channel) {
    int st = pipe_rt_wait(run.devs, ctx->device, t->channel);
    if (st == PIPE_RT_ABORTED)
      return fail(ctx, st, t->what + ": aborted by an error elsewhere");
    if (st != PIPE_RT_OK)
      return fail(ctx, st, pipe_rt_last_error(run.devs));
    if (t->link >= 0)
      run.traceEvent(t->what.substr(t->what.find(':') + 2), "transfer",
                     TrackKind::Link, t->link, t->start, run.now());
  } else if (t->job) {
    int st = t->queue->wait(t->job);
    if (st != PIPE_RT_OK)
      return fail(ctx, st, t->what + ": " + t->job->error);
  }
  if (t->onDone) {
    int st = t->onDone(error);
    if (st != PIPE_RT_OK)
      return fail(ctx, st, t->what + ": " + error);
  }
  return PIPE_RT_OK;
}

} // extern "C"

namespace {

/// Queues `work` on `queue` as the asynchronous part of an action; traced
/// on `kind`'s track.
int64_t submitJob(pipe_rt_device_ctx *ctx, JobQueue &queue, TrackKind kind,
                  const char *category, const std::string &what,
                  std::function<int(std::string &)> work,
                  JobQueue::JobPtr *submitted = nullptr) {
  RunState *run = ctx->run;
  int device = ctx->device;
  std::string label = what.substr(what.find(':') + 2);
  auto t = std::make_shared<PendingToken>();
  t->what = what;
  t->queue = &queue;
  t->job = queue.submit([=](std::string &error) {
    double t0 = run->now();
    int st = work(error);
    run->traceEvent(label, category, kind, kind == TrackKind::Host ? 0 : device,
                    t0, run->now());
    return st;
  });
  if (submitted)
    *submitted = t->job;
  return addToken(ctx, std::move(t));
}

/// Waits for jobs another queue must finish first; returns the first error.
int waitFor(const std::vector<RunState::PendingJob> &jobs) {
  int result = PIPE_RT_OK;
  for (const auto &[queue, job] : jobs)
    if (int st = queue->wait(job); st != PIPE_RT_OK && result == PIPE_RT_OK)
      result = st;
  return result;
}

int checkPsStage(pipe_rt_device_ctx *ctx, const std::string &what, int stage,
                 int step) {
  if (int st = checkAction(ctx, what, stage, -1, step))
    return st;
  if (!ctx->run->schedule->psStage[stage])
    return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                what + ": the stage does not use the parameter server");
  return PIPE_RT_OK;
}

/// Whether param `pid` of the parameter server crosses the link as bf16:
/// ps_transfer = bf16 and an f32 param (others move their own bytes). Such
/// params get a shadow when the run starts; the map is not changed after.
bool wantsBf16(const RunState &run, int pid) {
  return run.session->options.ps_transfer == PIPE_RT_PS_TRANSFER_BF16 &&
         run.m->types[run.m->params[pid].type].dtype == DType::F32;
}
bool psBf16(const RunState &run, int pid) {
  return run.psShadow.count(pid) != 0;
}

/// ps.load of a bf16 param: the shadow (host) into `staging` (device,
/// allocated on first use for the largest shadow of the job, `maxBytes`) on
/// the h2d lane, then widened into the param's buffer `dst` on the device.
int loadBf16(RunState &run, int device, Buffer &dst, const Buffer &shadow,
             uint64_t maxBytes, BufferPtr &staging, std::string &error) {
  if (!staging)
    if (int st = allocBuffer(run, device, maxBytes, "ps.load bf16 staging",
                             staging, error))
      return st;
  if (int st = laneCopy(run, device, Lane::H2D, staging->data, shadow.data,
                        shadow.bytes, error))
    return st;
  return run.memory->widenBf16(device, Lane::H2D, dst.data, staging->data,
                               int64_t(dst.bytes / 4), error);
}

/// Moves the buffers of a stash between the arena and host memory.
int moveStash(RunState *run, int device, int stage, int mb, int step,
              bool toHost, std::string &error) {
  DeviceState &ds = *run->devices[device];
  std::lock_guard<std::mutex> compute(ds.computeMu);
  std::set<Buffer *> buffers;
  {
    std::lock_guard<std::mutex> lock(ds.mu);
    auto it = ds.stashes.find(std::make_tuple(stage, step, mb));
    if (it == ds.stashes.end()) {
      error = "nothing stashed for this micro-batch";
      return PIPE_RT_INVALID_ARGUMENT;
    }
    for (auto &[v, b] : it->second.external)
      buffers.insert(b.get());
    for (auto &r : it->second.runs)
      for (auto *list : {&r.inputs, &r.saved, &r.cotangents})
        for (auto &b : *list)
          buffers.insert(b.get());
  }
  for (Buffer *b : buffers) {
    if ((b->device < 0) == toHost)
      continue;
    void *dst = nullptr;
    DeviceMemory &mem = *run->memory;
    if (toHost) {
      dst = mem.allocHost(b->bytes);
      if (!dst) {
        error = "host out of memory";
        return PIPE_RT_OUT_OF_MEMORY;
      }
    } else if (int st = mem.alloc(device, b->bytes, "prefetched activation",
                                  &dst, error)) {
      return st;
    }
    if (int st = laneCopy(*run, device, toHost ? Lane::D2H : Lane::H2D, dst,
                          b->data, b->bytes, error)) {
      toHost ? mem.freeHost(dst) : mem.free(device, dst);
      return st;
    }
    if (toHost)
      mem.free(device, b->data);
    else
      mem.freeHost(b->data);
    b->data = dst;
    b->device = toHost ? -1 : device;
  }
  return PIPE_RT_OK;
}

/// offload (to host memory, on the d2h lane) or prefetch (back, on the h2d
/// lane) of a stash: the asynchronous part of the action.
int64_t submitStashMove(pipe_rt_device_ctx *ctx, const char *kind,
                        int32_t stage, int32_t mb, int32_t step, bool toHost) {
  if (!ctx)
    return -PIPE_RT_INVALID_ARGUMENT;
  std::string what = describe(ctx, kind, stage, mb, step);
  if (int st = checkAction(ctx, what, stage, mb, step))
    return -st;
  RunState *run = ctx->run;
  int device = ctx->device;
  DeviceState &ds = deviceOf(ctx);
  return submitJob(
      ctx, toHost ? *ds.d2h : *ds.h2d, toHost ? TrackKind::D2H : TrackKind::H2D,
      toHost ? "d2h" : "h2d", what, [=](std::string &error) {
        return moveStash(run, device, stage, mb, step, toHost, error);
      });
}

} // namespace

extern "C" {

int64_t pipe_rt_act_ps_load(pipe_rt_device_ctx *ctx, int32_t stage,
                            int32_t step) {
  if (!ctx)
    return -PIPE_RT_INVALID_ARGUMENT;
  std::string what = describe(ctx, "ps.load", stage, -1, step);
  if (int st = checkPsStage(ctx, what, stage, step))
    return -st;
  RunState &run = *ctx->run;
  const Manifest &m = *run.m;
  DeviceState &ds = deviceOf(ctx);
  std::vector<std::pair<int, BufferPtr>> copies;
  for (int pid : m.stages[stage].params) {
    std::lock_guard<std::mutex> lock(ds.mu);
    DeviceParam &dp = ds.params[pid];
    if (dp.loads++ > 0)
      continue;
    std::string error;
    std::string label = "param '" + m.params[pid].name + "'";
    if (int st =
            allocBuffer(run, ctx->device, m.types[m.params[pid].type].bytes(),
                        label.c_str(), dp.value, error)) {
      ds.params.erase(pid);
      return -fail(ctx, st, what + ": " + error);
    }
    copies.push_back({pid, dp.value});
  }
  RunState *runp = &run;
  int device = ctx->device;
  std::vector<RunState::PendingJob> updates;
  {
    std::lock_guard<std::mutex> lock(run.psMu);
    for (auto &[pid, b] : copies) {
      auto it = run.psLastUpdate.find(pid);
      if (it != run.psLastUpdate.end())
        updates.push_back(it->second);
    }
  }
  return submitJob(
      ctx, *ds.h2d, TrackKind::H2D, "h2d", what,
      [runp, device, copies, updates](std::string &error) {
        if (int st = waitFor(updates)) {
          error = "an earlier ps.update of these params failed";
          return st;
        }
        // bf16 params: one device staging buffer for the job, charged while
        // the job runs.
        std::vector<BufferPtr> shadows;
        uint64_t maxBytes = 0;
        {
          std::lock_guard<std::mutex> lock(runp->psMu);
          for (auto &[pid, b] : copies) {
            auto it = runp->psShadow.find(pid);
            shadows.push_back(it == runp->psShadow.end() ? nullptr
                                                         : it->second);
            if (shadows.back())
              maxBytes = std::max(maxBytes, shadows.back()->bytes);
          }
        }
        // One batch for the stage's params: a GPU queues every copy (and
        // widening) on the lane and waits once, not once per tensor.
        BufferPtr staging;
        runp->memory->beginBatch(device, Lane::H2D);
        int st = PIPE_RT_OK;
        for (size_t i = 0; i < copies.size() && st == PIPE_RT_OK; ++i) {
          auto &[pid, b] = copies[i];
          if (shadows[i]) {
            st = loadBf16(*runp, device, *b, *shadows[i], maxBytes, staging,
                          error);
            continue;
          }
          const unsigned char *src;
          {
            std::lock_guard<std::mutex> lock(runp->psMu);
            src = runp->ps[pid].value;
          }
          st = toDevice(*runp, Lane::H2D, *b, src, b->bytes, error);
        }
        std::string drained;
        int end = runp->memory->endBatch(device, Lane::H2D,
                                         st == PIPE_RT_OK ? error : drained);
        return st != PIPE_RT_OK ? st : end;
      });
}

int64_t pipe_rt_act_ps_push(pipe_rt_device_ctx *ctx, int32_t stage,
                            int32_t step) {
  if (!ctx)
    return -PIPE_RT_INVALID_ARGUMENT;
  std::string what = describe(ctx, "ps.push", stage, -1, step);
  if (int st = checkPsStage(ctx, what, stage, step))
    return -st;
  RunState &run = *ctx->run;
  const Manifest &m = *run.m;
  DeviceState &ds = deviceOf(ctx);
  std::vector<std::pair<int, BufferPtr>> grads;
  {
    std::lock_guard<std::mutex> lock(ds.mu);
    for (int pid : m.stages[stage].params) {
      auto it = ds.grads.find({pid, step});
      if (it == ds.grads.end())
        continue;
      grads.push_back({pid, it->second});
      ds.grads.erase(it); // freed once copied
    }
  }
  RunState *runp = &run;
  int device = ctx->device;
  JobQueue::JobPtr job;
  int64_t token = submitJob(
      ctx, *ds.d2h, TrackKind::D2H, "d2h", what,
      [runp, device, grads](std::string &error) {
        // bf16 params: narrowed on the device first, into a staging buffer
        // allocated once for the job's largest one.
        uint64_t maxBf16 = 0;
        for (auto &[pid, g] : grads)
          if (psBf16(*runp, pid))
            maxBf16 = std::max(maxBf16, g->bytes / 2);
        BufferPtr narrow;
        if (maxBf16)
          if (int st = allocBuffer(*runp, device, maxBf16,
                                   "ps.push bf16 staging", narrow, error))
            return st;
        for (auto &[pid, g] : grads) {
          int64_t n = int64_t(g->bytes / 4);
          bool bf16 = psBf16(*runp, pid);
          // The copy the optimizer reads: host memory (page-locked on a
          // GPU), kept until the update.
          BufferPtr host;
          if (n > 0) {
            uint64_t bytes = uint64_t(n) * (bf16 ? 2 : 4);
            if (int st = allocBuffer(*runp, -1, bytes, "ps.push host copy",
                                     host, error))
              return st;
            const void *from = g->data;
            if (bf16) {
              if (int st = runp->memory->narrowBf16(
                      device, Lane::D2H, narrow->data, g->data, n, error))
                return st;
              from = narrow->data;
            }
            if (int st = laneCopy(*runp, device, Lane::D2H, host->data, from,
                                  bytes, error))
              return st;
          }
          RunState::PsGrad *grad;
          bool first;
          {
            std::lock_guard<std::mutex> lock(runp->psMu);
            auto [it, fresh] = runp->psGrads.try_emplace(pid);
            grad = &it->second;
            first = fresh;
          }
          if (first) {
            grad->pushed = std::move(host);
            grad->bf16 = bf16;
            continue;
          }
          // A second push before the update: sum in f32.
          if (grad->pushed) {
            grad->sum.assign(size_t(n), 0.0f);
            addPushed(grad->sum.data(), *grad->pushed, grad->bf16, n);
            grad->pushed.reset();
          }
          if (host)
            addPushed(grad->sum.data(), *host, bf16, n);
        }
        return int(PIPE_RT_OK);
      },
      &job);
  if (token > 0) {
    std::lock_guard<std::mutex> lock(run.psMu);
    for (auto &[pid, g] : grads)
      run.psPendingPushes[pid].push_back({ds.d2h.get(), job});
  }
  return token;
}

int64_t pipe_rt_act_ps_update(pipe_rt_device_ctx *ctx, int32_t stage,
                              int32_t step) {
  if (!ctx)
    return -PIPE_RT_INVALID_ARGUMENT;
  std::string what = describe(ctx, "ps.update", stage, -1, step);
  if (int st = checkPsStage(ctx, what, stage, step))
    return -st;
  RunState *run = ctx->run;
  std::vector<int> owned;
  for (int pid : run->schedule->owns[stage])
    if (run->psParam[pid] && run->m->params[pid].trainable)
      owned.push_back(pid);
  std::vector<RunState::PendingJob> pushes;
  {
    std::lock_guard<std::mutex> lock(run->psMu);
    for (int pid : owned) {
      auto it = run->psPendingPushes.find(pid);
      if (it == run->psPendingPushes.end())
        continue;
      pushes.insert(pushes.end(), it->second.begin(), it->second.end());
      run->psPendingPushes.erase(it);
    }
  }
  JobQueue::JobPtr job;
  int64_t token = submitJob(
      ctx, *run->hostQueue, TrackKind::Host, "host", what,
      [run, owned, pushes](std::string &error) {
        if (int st = waitFor(pushes)) {
          error = "a ps.push of these params failed";
          return st;
        }
        for (int pid : owned) {
          RunState::PsGrad *grad;
          RunState::PsParam *ps;
          BufferPtr shadow; // bf16 transfers
          {
            std::lock_guard<std::mutex> lock(run->psMu);
            auto it = run->psGrads.find(pid);
            if (it == run->psGrads.end())
              continue; // no gradient pushed: skipped, as torch skips None
            grad = &it->second;
            ps = &run->ps[pid];
            auto sh = run->psShadow.find(pid);
            if (sh != run->psShadow.end())
              shadow = sh->second;
          }
          pipe_rt_optim_update u = psUpdate(*run, pid, *ps, *grad);
          // The next ps.load of the param copies its bf16 rounding: written
          // by the optimizer's workers, once per update, not per load.
          if (shadow)
            u.param_bf16 = static_cast<uint16_t *>(shadow->data);
          int st = pipe_rt_host_optimizer_run(run->session->optimizer, &u);
          if (st != PIPE_RT_OK) {
            error = "host optimizer rejected the update of '" +
                    run->m->params[pid].name + "'";
            return st;
          }
          std::lock_guard<std::mutex> lock(run->psMu);
          ps->value = reinterpret_cast<const unsigned char *>(u.param);
          ps->updated = true;
          ++ps->step;
          run->psGrads.erase(pid);
        }
        return int(PIPE_RT_OK);
      },
      &job);
  if (token > 0) {
    std::lock_guard<std::mutex> lock(run->psMu);
    for (int pid : owned)
      run->psLastUpdate[pid] = {run->hostQueue.get(), job};
  }
  return token;
}

int32_t pipe_rt_act_ps_release(pipe_rt_device_ctx *ctx, int32_t stage,
                               int32_t step) {
  if (!ctx)
    return PIPE_RT_INVALID_ARGUMENT;
  std::string what = describe(ctx, "ps.release", stage, -1, step);
  if (int st = checkPsStage(ctx, what, stage, step))
    return st;
  DeviceState &ds = deviceOf(ctx);
  std::lock_guard<std::mutex> lock(ds.mu);
  for (int pid : ctx->run->m->stages[stage].params) {
    auto it = ds.params.find(pid);
    if (it == ds.params.end() || it->second.loads <= 0)
      return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                  what + ": param '" + ctx->run->m->params[pid].name +
                      "' is not loaded");
    if (--it->second.loads == 0)
      ds.params.erase(it);
  }
  return PIPE_RT_OK;
}

int64_t pipe_rt_act_offload(pipe_rt_device_ctx *ctx, int32_t stage, int32_t mb,
                            int32_t step) {
  return submitStashMove(ctx, "offload", stage, mb, step, /*toHost=*/true);
}

int64_t pipe_rt_act_prefetch(pipe_rt_device_ctx *ctx, int32_t stage, int32_t mb,
                             int32_t step) {
  return submitStashMove(ctx, "prefetch", stage, mb, step, /*toHost=*/false);
}

int32_t pipe_rt_act_update(pipe_rt_device_ctx *ctx, int32_t stage,
                           int32_t step) {
  if (!ctx)
    return PIPE_RT_INVALID_ARGUMENT;
  std::string what = describe(ctx, "update", stage, -1, step);
  if (int st = checkAction(ctx, what, stage, -1, step))
    return st;
  RunState &run = *ctx->run;
  const Manifest &m = *run.m;
  DeviceState &ds = deviceOf(ctx);
  double t0 = run.now();
  if (run.session->options.clip_norm > 0 && !ds.clippedSteps.count(step))
    if (int st = clipGradients(ctx, step, what))
      return st;
  float scale = run.session->options.clip_norm > 0 ? ds.clipScale : 1.0f;
  for (int pid : run.schedule->owns[stage]) {
    const ParamInfo &p = m.params[pid];
    if (run.psParam[pid])
      return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                  what + ": param '" + p.name +
                      "' is held by the parameter server (use ps.update)");
    if (!p.trainable)
      continue;
    std::unique_lock<std::mutex> lock(ds.mu);
    auto it = ds.params.find(pid);
    if (it == ds.params.end())
      return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                  what + ": param '" + p.name + "' is not on the device");
    DeviceParam &dp = it->second;
    // Tied params may be owned by several stages of one device: one update
    // per step.
    if (!dp.updatedSteps.insert(step).second)
      continue;
    const TypeInfo &t = m.types[p.type];
    if (run.trackVersions) {
      BufferPtr snap;
      std::string error;
      if (int st = allocBuffer(run, ctx->device, t.bytes(), "weight version",
                               snap, error))
        return fail(ctx, st, what + ": " + error);
      if (int st = laneCopy(run, ctx->device, Lane::Compute, snap->data,
                            dp.value->data, t.bytes(), error))
        return fail(ctx, st, what + ": weight version: " + error);
      dp.versions[dp.updates] = snap;
    }
    ++dp.updates;
    auto g = ds.grads.find({pid, step});
    if (g == ds.grads.end())
      continue; // no gradient: skipped, as torch skips params without grad
    BufferPtr grad = g->second;
    ds.grads.erase(g);
    lock.unlock();
    SessionParam &state = run.deviceOptState[ctx->device][pid];
    // The optimizer runs on the host (HostOptimizer.h): a device the host
    // cannot address gets the param and gradient staged through host memory.
    std::vector<unsigned char> paramStaging, gradStaging;
    std::string error;
    int st;
    auto *value = const_cast<float *>(reinterpret_cast<const float *>(
        hostView(run, Lane::Compute, *dp.value, paramStaging, error, st)));
    if (st != PIPE_RT_OK)
      return fail(ctx, st, what + ": " + error);
    auto *gradValue = reinterpret_cast<const float *>(
        hostView(run, Lane::Compute, *grad, gradStaging, error, st));
    if (st != PIPE_RT_OK)
      return fail(ctx, st, what + ": " + error);
    pipe_rt_optim_update u = makeUpdate(run.session, value, state, gradValue,
                                        size_t(t.numel), scale);
    if (int st = pipe_rt_host_optimizer_run(run.session->optimizer, &u))
      return fail(ctx, st,
                  what + ": the optimizer rejected the update of '" + p.name +
                      "' (bad hyper-parameters?)");
    if (!paramStaging.empty())
      if (int st =
              toDevice(run, Lane::Compute, *dp.value, value, t.bytes(), error))
        return fail(ctx, st, what + ": " + error);
    ++state.step;
  }
  run.traceEvent(what.substr(what.find(':') + 2), "compute", TrackKind::Compute,
                 ctx->device, t0, run.now());
  return PIPE_RT_OK;
}

int32_t pipe_rt_act_reduce_grad(pipe_rt_device_ctx *ctx, int32_t param,
                                int32_t step) {
  if (!ctx)
    return PIPE_RT_INVALID_ARGUMENT;
  RunState &run = *ctx->run;
  const Manifest &m = *run.m;
  std::string what = format("device %d: reduce_grad", ctx->device);
  if (param < 0 || param >= int(m.params.size()))
    return fail(ctx, PIPE_RT_INVALID_ARGUMENT, what + ": no such param");
  what += " '" + m.params[param].name + "'" + format(" step %d", step);
  if (step < 0 || step >= run.schedule->steps)
    return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                what + format(": step out of range (%d)", run.schedule->steps));
  const std::set<int> &participants = run.holders[param];
  if (!participants.count(ctx->device))
    return fail(ctx, PIPE_RT_INVALID_ARGUMENT,
                what + ": the device does not hold the param");
  if (participants.size() == 1 || !m.params[param].trainable)
    return PIPE_RT_OK;
  DeviceState &ds = deviceOf(ctx);
  const TypeInfo &t = m.types[m.params[param].type];
  BufferPtr mine;
  {
    std::lock_guard<std::mutex> lock(ds.mu);
    auto it = ds.grads.find({param, step});
    if (it != ds.grads.end())
      mine = it->second;
  }
  double t0 = run.now();
  int st = rendezvous(
      ctx, {param, step}, participants,
      [&](RunState::Reduce &r) { r.grads[ctx->device] = mine; },
      [&](RunState::Reduce &r) {
        // Every device sums in device order: identical totals everywhere.
        BufferPtr total;
        if (int st = zeros(ctx, t, what, total))
          return st;
        std::string error;
        for (auto &[d, g] : r.grads) {
          if (!g)
            continue;
          BufferPtr local = g;
          if (g->device != ctx->device && !run.memory->hostAccessible()) {
            // Another device's memory: copy it over first.
            if (int st = allocBuffer(run, ctx->device, g->bytes, what.c_str(),
                                     local, error))
              return fail(ctx, st, what + ": " + error);
            if (int st = peerCopy(run, ctx->device, local->data, g->device,
                                  g->data, g->bytes, error))
              return fail(ctx, st, what + ": " + error);
          }
          if (int st = addInto(*total, *local, t, error))
            return fail(ctx, st, what + ": " + error);
        }
        std::lock_guard<std::mutex> lock(ds.mu);
        ds.grads[{param, step}] = total;
        return int(PIPE_RT_OK);
      },
      what);
  run.traceEvent(what.substr(what.find(':') + 2), "collective",
                 TrackKind::Compute, ctx->device, t0, run.now());
  return st;
}

} // extern "C"

//===----------------------------------------------------------------------===//
// The driver
//===----------------------------------------------------------------------===//

namespace {

int runDevice(int device, void *userData) {
  auto &run = *static_cast<RunState *>(userData);
  pipe_rt_device_ctx *ctx = run.ctxs[device].get();
  auto program = reinterpret_cast<int32_t (*)(pipe_rt_device_ctx *)>(
      run.session->programs[run.scheduleIndex][device]);
  int st = program(ctx);
  if (st == PIPE_RT_OK)
    return st;
  if (ctx->error.empty())
    ctx->error = format("device %d: the program failed with '%s'", device,
                        pipe_rt_status_string(st));
  {
    std::lock_guard<std::mutex> lock(run.syncMu);
    run.failed = true;
    run.syncCv.notify_all();
  }
  // Report the original error in preference to the aborts it caused.
  std::lock_guard<std::mutex> lock(run.errorMu);
  if (run.firstStatus == PIPE_RT_OK ||
      (run.firstStatus == PIPE_RT_ABORTED && st != PIPE_RT_ABORTED)) {
    run.firstStatus = st;
    run.firstError = ctx->error;
  }
  return st;
}

} // namespace

int pipe_rt::executeRun(pipe_rt_session *session, int x,
                        const void *const *inputs, float *losses) {
  const Manifest &m = session->manifest;
  const ScheduleInfo &sched = m.schedules[x];
  auto runFail = [&](int status, const std::string &msg) {
    session->error = "schedule '" + sched.name + "': " + msg;
    return status;
  };
  bool hasPs = std::find(sched.psStage.begin(), sched.psStage.end(), true) !=
               sched.psStage.end();
  if (session->options.clip_norm > 0 && (hasPs || sched.steps > 1))
    return runFail(PIPE_RT_INVALID_ARGUMENT,
                   "gradient clipping needs a synchronous schedule (no ps "
                   "stages, one step)");
  if (!inputs && !m.inputs.empty())
    return runFail(PIPE_RT_INVALID_ARGUMENT, "no inputs given");

  auto run = std::make_unique<RunState>();
  run->session = session;
  run->m = &m;
  run->schedule = &sched;
  run->scheduleIndex = x;
  run->inputs = inputs;
  size_t numLosses = size_t(sched.steps) * sched.microbatches;
  run->losses.assign(numLosses, 0.0f);
  run->lossSeen.assign(numLosses, false);
  run->trackVersions = sched.keepsWeightVersions;

  // Who holds which param.
  run->psParam.assign(m.params.size(), false);
  session->psSpare.resize(m.params.size());
  session->psShadows.resize(m.params.size());
  run->holders.assign(m.params.size(), {});
  for (size_t s = 0; s < m.stages.size(); ++s)
    for (int pid : m.stages[s].params) {
      if (sched.psStage[s])
        run->psParam[pid] = true;
      else
        run->holders[pid].insert(m.stages[s].device);
    }
  for (size_t p = 0; p < m.params.size(); ++p) {
    if (run->psParam[p] && !run->holders[p].empty())
      return runFail(PIPE_RT_INVALID_ARGUMENT,
                     "param '" + m.params[p].name +
                         "' is read by a parameter "
                         "server stage and by a device stage");
    if (m.params[p].trainable)
      run->clipDevices.insert(run->holders[p].begin(), run->holders[p].end());
  }

  std::vector<uint64_t> caps(sched.devices);
  for (int d = 0; d < sched.devices; ++d) {
    uint64_t c = session->options.capacity_bytes > 0
                     ? session->options.capacity_bytes
                     : sched.capacity[d];
    caps[d] = c ? c : UINT64_MAX;
  }
  std::shared_ptr<Backend> backend =
      session->backend ? session->backend : hostBackend();
  // A backend with its own memory gets the capacities; the simulated
  // devices then only carry channels, threads and the watchdog.
  std::vector<uint64_t> unlimited(sched.devices, UINT64_MAX);
  run->devs = pipe_rt_devices_create(
      sched.devices, backend->usesArenas() ? caps.data() : unlimited.data(),
      session->options.watchdog_seconds);
  if (!run->devs)
    return runFail(PIPE_RT_INVALID_ARGUMENT, "cannot create the devices");
  {
    std::string error;
    if (int st = backend->createMemory(run->devs, sched.devices, caps.data(),
                                       session->options.watchdog_seconds,
                                       run->memory, error))
      return runFail(st, std::string(backend->name()) + ": " + error);
    run->byReference = !run->memory->hostAccessible();
  }
  run->laneBytes.reset(new std::atomic<uint64_t>[size_t(sched.devices) * 3]);
  for (size_t i = 0; i < size_t(sched.devices) * 3; ++i)
    run->laneBytes[i].store(0, std::memory_order_relaxed);
  run->hostQueue = std::make_unique<JobQueue>();
  run->deviceOptState.resize(sched.devices);
  for (int d = 0; d < sched.devices; ++d) {
    auto ds = std::make_unique<DeviceState>();
    ds->index = d;
    ds->h2d = std::make_unique<JobQueue>();
    ds->d2h = std::make_unique<JobQueue>();
    run->devices.push_back(std::move(ds));
    auto ctx = std::make_unique<pipe_rt_device_ctx>();
    ctx->run = run.get();
    ctx->device = d;
    run->ctxs.push_back(std::move(ctx));
  }
  // Device copies of the params (and their optimizer state), and the
  // parameter server's bf16 shadows.
  std::vector<NarrowSpan> shadows;
  for (size_t p = 0; p < m.params.size(); ++p) {
    const SessionParam &sp = session->params[p];
    std::string label = "param '" + m.params[p].name + "'";
    for (int d : run->holders[p]) {
      DeviceParam &dp = run->devices[d]->params[int(p)];
      std::string error;
      if (int st = allocBuffer(*run, d, sp.value.size(), label.c_str(),
                               dp.value, error))
        return runFail(st, error);
      if (int st = toDevice(*run, Lane::H2D, *dp.value, sp.value.data(),
                            sp.value.size(), error))
        return runFail(st, label + ": " + error);
      SessionParam &state = run->deviceOptState[d][int(p)];
      state.state0 = sp.state0;
      state.state1 = sp.state1;
      state.step = sp.step;
    }
    if (run->psParam[p]) {
      RunState::PsParam &ps = run->ps[int(p)];
      ps.value = sp.value.data();
      ps.step = sp.step;
      if (wantsBf16(*run, int(p))) {
        // The session's shadow, narrowed again only when it does not match
        // the weights; invalid until this run commits (ps.update rewrites
        // it).
        pipe_rt_session::PsShadow &cache = session->psShadows[p];
        uint64_t bytes = sp.value.size() / 2;
        if (cache.bytes != bytes) {
          if (cache.data)
            cache.free(cache.data);
          cache = {run->memory->allocHost(bytes), bytes,
                   run->memory->hostFreeFunction(), false};
          if (!cache.data) {
            cache = {};
            return runFail(PIPE_RT_OUT_OF_MEMORY,
                           label + " bf16 shadow: host out of memory");
          }
        }
        if (!cache.valid)
          shadows.push_back({static_cast<uint16_t *>(cache.data),
                             reinterpret_cast<const float *>(sp.value.data()),
                             int64_t(sp.value.size() / 4)});
        cache.valid = false;
        auto shadow = std::make_shared<Buffer>();
        shadow->run = run.get();
        shadow->data = cache.data;
        shadow->bytes = bytes;
        shadow->owned = false;
        run->psShadow[int(p)] = std::move(shadow);
      }
    }
  }
  narrowInParallel(shadows);
  // The parameter server's masters are copied to devices by every ps.load
  // (bf16 params: their shadows, already page-locked): page-locked for the
  // run where that makes the copies faster.
  for (auto &[pid, ps] : run->ps)
    if (!run->psShadow.count(pid))
      run->memory->registerHost(session->params[pid].value.data(),
                                session->params[pid].value.size());

  int status = pipe_rt_run_devices(run->devs, runDevice, run.get());
  // Let outstanding copies finish before looking at the results.
  run->hostQueue.reset();
  for (auto &ds : run->devices) {
    ds->h2d.reset();
    ds->d2h.reset();
  }
  for (auto &[pid, ps] : run->ps)
    if (!run->psShadow.count(pid))
      run->memory->unregisterHost(session->params[pid].value.data());
  for (int d = 0; d < sched.devices && d < int(session->peak.size()); ++d) {
    uint64_t peak = 0;
    run->memory->usage(d, nullptr, &peak);
    session->peak[d] = std::max(session->peak[d], peak);
  }
  if (session->copyBytes.size() < session->peak.size())
    session->copyBytes.resize(session->peak.size(), {0, 0, 0});
  for (int d = 0; d < sched.devices && d < int(session->copyBytes.size()); ++d)
    for (int lane = 0; lane < 3; ++lane)
      session->copyBytes[d][lane] +=
          run->laneBytes[size_t(d) * 3 + lane].load(std::memory_order_relaxed);
  if (status != PIPE_RT_OK)
    return runFail(status, run->firstError.empty()
                               ? pipe_rt_last_error(run->devs)
                               : run->firstError);
  if (m.lossValue >= 0)
    for (size_t i = 0; i < numLosses; ++i)
      if (!run->lossSeen[i])
        return runFail(PIPE_RT_INVALID_ARGUMENT,
                       format("no loss computed for step %d mb %d",
                              int(i / sched.microbatches),
                              int(i % sched.microbatches)));

  // Success: commit the params and optimizer state. Replicas must agree.
  // Every device copy is read back first, so a failing copy commits nothing.
  std::vector<std::vector<unsigned char>> finals(m.params.size());
  for (size_t p = 0; p < m.params.size(); ++p) {
    const std::set<int> &holders = run->holders[p];
    if (!holders.empty()) {
      int first = *holders.begin();
      const Buffer &v = *run->devices[first]->params[int(p)].value;
      std::string error;
      finals[p].resize(v.bytes);
      if (int st = toHost(*run, Lane::D2H, finals[p].data(), v, v.bytes, error))
        return runFail(st, "reading param '" + m.params[p].name +
                               "' back: " + error);
      for (int d : holders) {
        const Buffer &o = *run->devices[d]->params[int(p)].value;
        std::vector<unsigned char> staging;
        int st;
        const unsigned char *other =
            hostView(*run, Lane::D2H, o, staging, error, st);
        if (st != PIPE_RT_OK)
          return runFail(st, "reading param '" + m.params[p].name +
                                 "' back: " + error);
        if (std::memcmp(finals[p].data(), other, v.bytes) != 0)
          return runFail(PIPE_RT_INVALID_ARGUMENT,
                         format("the copies of param '%s' on devices %d and "
                                "%d differ (an update or reduce_grad missing "
                                "on one of them?)",
                                m.params[p].name.c_str(), first, d));
      }
    }
  }
  for (size_t p = 0; p < m.params.size(); ++p) {
    SessionParam &sp = session->params[p];
    const std::set<int> &holders = run->holders[p];
    if (!holders.empty()) {
      int first = *holders.begin();
      sp.value.swap(finals[p]);
      session->psShadows[p].valid = false;
      SessionParam &state = run->deviceOptState[first][int(p)];
      sp.state0.swap(state.state0);
      sp.state1.swap(state.state1);
      sp.step = state.step;
    } else if (run->psParam[p]) {
      const RunState::PsParam &ps = run->ps[int(p)];
      SessionParam &spare = session->psSpare[p];
      if (ps.updated)
        sp.value.swap(spare.value);
      if (ps.wroteState0)
        sp.state0.swap(spare.state0);
      if (ps.wroteState1)
        sp.state1.swap(spare.state1);
      sp.step = ps.step;
      // Narrowed when the run started or rewritten by its updates.
      if (run->psShadow.count(int(p)))
        session->psShadows[p].valid = true;
    }
  }
  if (losses)
    std::copy(run->losses.begin(), run->losses.end(), losses);
  session->error.clear();
  return PIPE_RT_OK;
}

int pipe_rt_session_copy_bytes(pipe_rt_session *session, int device,
                               uint64_t *h2d, uint64_t *d2h,
                               uint64_t *compute) {
  if (!session || device < 0 || device >= int(session->peak.size()))
    return PIPE_RT_INVALID_ARGUMENT;
  std::array<uint64_t, 3> bytes = {0, 0, 0};
  if (device < int(session->copyBytes.size()))
    bytes = session->copyBytes[device];
  if (compute)
    *compute = bytes[int(Lane::Compute)];
  if (h2d)
    *h2d = bytes[int(Lane::H2D)];
  if (d2h)
    *d2h = bytes[int(Lane::D2H)];
  return PIPE_RT_OK;
}
