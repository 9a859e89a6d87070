//===- Driver.cpp - CUDA driver state, pools, waits with a watchdog -------===//
//
// Every wait polls (cuStreamQuery / cuEventQuery) against a deadline rather
// than blocking in the driver, so a kernel that never ends or a copy that
// never starts becomes an error naming the device and the action. Also the
// bf16 conversion kernels (Bf16Kernels.ptx, embedded at build time), loaded
// once per GPU on first use.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include "../Backend.h"

#include "pipe/Runtime/Status.h"

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

namespace pipe_rt {
namespace cuda {

std::string driverError(const char *call, CUresult r) {
  if (r == CUDA_ERROR_STUB_LIBRARY) // the stub cannot describe itself
    return format("%s: the CUDA driver is the toolkit's stub library (no GPU "
                  "driver installed) (CUDA_ERROR_STUB_LIBRARY)",
                  call);
  const char *name = nullptr, *text = nullptr;
  if (cuGetErrorName(r, &name) != CUDA_SUCCESS)
    name = nullptr;
  if (cuGetErrorString(r, &text) != CUDA_SUCCESS)
    text = nullptr;
  return format("%s: %s (%s)", call, text ? text : "unknown error",
                name ? name : std::to_string(int(r)).c_str());
}

std::string blasError(const char *call, cublasStatus_t s) {
  const char *name = cublasGetStatusName(s);
  const char *text = cublasGetStatusString(s);
  return format("%s: %s (%s)", call, text ? text : "unknown error",
                name ? name : std::to_string(int(s)).c_str());
}

int deviceCount(std::string &error) {
  static std::once_flag once;
  static CUresult initResult = CUDA_SUCCESS;
  std::call_once(once, [] { initResult = cuInit(0); });
  if (initResult != CUDA_SUCCESS) {
    error = driverError("cuInit", initResult);
    return -1;
  }
  int n = 0;
  if (CUresult r = cuDeviceGetCount(&n)) {
    error = driverError("cuDeviceGetCount", r);
    return -1;
  }
  if (n == 0)
    error = "no CUDA device found";
  return n;
}

//===----------------------------------------------------------------------===//
// Pool
//===----------------------------------------------------------------------===//

namespace {

uint64_t roundSize(uint64_t bytes) {
  constexpr uint64_t kSmall = 512, kLarge = 2ull << 20;
  if (bytes < (1ull << 20))
    return std::max<uint64_t>(kSmall, (bytes + kSmall - 1) / kSmall * kSmall);
  return (bytes + kLarge - 1) / kLarge * kLarge;
}

} // namespace

CUresult Pool::rawAlloc(uint64_t bytes, void **out) {
  if (CUresult r = cuCtxSetCurrent(ctx))
    return r;
  if (host)
    return cuMemHostAlloc(out, bytes, CU_MEMHOSTALLOC_PORTABLE);
  CUdeviceptr p = 0;
  CUresult r = cuMemAlloc(&p, bytes);
  *out = reinterpret_cast<void *>(p);
  return r;
}

void Pool::rawFree(void *ptr) {
  cuCtxSetCurrent(ctx);
  if (host)
    cuMemFreeHost(ptr);
  else
    cuMemFree(reinterpret_cast<CUdeviceptr>(ptr));
}

CUresult Pool::alloc(uint64_t bytes, void **out, std::string &error) {
  uint64_t size = roundSize(bytes);
  std::lock_guard<std::mutex> lock(mu);
  void *p = nullptr;
  // Best fit among the cached blocks, wasting at most a quarter.
  auto it = cached.lower_bound(size);
  if (it != cached.end() && it->first - size <= size / 4) {
    size = it->first;
    p = it->second;
    cached.erase(it);
  } else {
    CUresult r = rawAlloc(size, &p);
    if (r == CUDA_ERROR_OUT_OF_MEMORY && !cached.empty()) {
      trimLocked();
      r = rawAlloc(size, &p);
    }
    if (r != CUDA_SUCCESS) {
      error = driverError(host ? "cuMemHostAlloc" : "cuMemAlloc", r) +
              format(" allocating %llu bytes on GPU %d (%llu bytes in use, "
                     "%llu reserved)",
                     (unsigned long long)bytes, ordinal,
                     (unsigned long long)inUse, (unsigned long long)reserved);
      return r;
    }
    reserved += size;
  }
  live[p] = {size, bytes};
  inUse += bytes;
  peak = std::max(peak, inUse);
  *out = p;
  return CUDA_SUCCESS;
}

bool Pool::release(void *ptr) {
  std::lock_guard<std::mutex> lock(mu);
  auto it = live.find(ptr);
  if (it == live.end())
    return false;
  inUse -= it->second.second;
  cached.emplace(it->second.first, ptr);
  live.erase(it);
  return true;
}

bool Pool::owns(void *ptr) {
  std::lock_guard<std::mutex> lock(mu);
  return live.count(ptr) != 0;
}

void Pool::trimLocked() {
  for (auto &[size, p] : cached) {
    rawFree(p);
    reserved -= size;
  }
  cached.clear();
}

void Pool::trim() {
  std::lock_guard<std::mutex> lock(mu);
  trimLocked();
}

void Pool::stats(uint64_t *inUseOut, uint64_t *peakOut, uint64_t *reservedOut) {
  std::lock_guard<std::mutex> lock(mu);
  if (inUseOut)
    *inUseOut = inUse;
  if (peakOut)
    *peakOut = peak;
  if (reservedOut)
    *reservedOut = reserved;
}

//===----------------------------------------------------------------------===//
// GPUs
//===----------------------------------------------------------------------===//

namespace {

std::mutex gpusMu;
// Never destroyed: modules and pools may still be used by static
// destructors of a program artifact.
std::map<int, Gpu *> &gpus() {
  static auto *m = new std::map<int, Gpu *>();
  return *m;
}
Pool *theHostPool = nullptr;

} // namespace

Gpu *gpu(int ordinal, std::string &error) {
  std::lock_guard<std::mutex> lock(gpusMu);
  auto it = gpus().find(ordinal);
  if (it != gpus().end())
    return it->second;
  int n = deviceCount(error);
  if (n <= 0)
    return nullptr;
  if (ordinal < 0 || ordinal >= n) {
    error = format("GPU %d does not exist (%d device(s))", ordinal, n);
    return nullptr;
  }
  auto g = std::make_unique<Gpu>();
  g->ordinal = ordinal;
  if (CUresult r = cuDeviceGet(&g->device, ordinal)) {
    error = driverError("cuDeviceGet", r);
    return nullptr;
  }
  if (CUresult r = cuDevicePrimaryCtxRetain(&g->ctx, g->device)) {
    error = driverError("cuDevicePrimaryCtxRetain", r) +
            format(" on GPU %d", ordinal);
    return nullptr;
  }
  g->pool = std::make_unique<Pool>(g->ctx, false, ordinal);
  Gpu *raw = g.release();
  gpus()[ordinal] = raw;
  return raw;
}

Gpu *gpuOwning(void *ptr) {
  std::lock_guard<std::mutex> lock(gpusMu);
  for (auto &[ordinal, g] : gpus())
    if (g->pool->owns(ptr))
      return g;
  return nullptr;
}

Pool *hostPool(std::string &error) {
  Gpu *g0 = gpu(0, error);
  if (!g0)
    return nullptr;
  std::lock_guard<std::mutex> lock(gpusMu);
  if (!theHostPool)
    theHostPool = new Pool(g0->ctx, true, 0);
  return theHostPool;
}

CUresult makeCurrent(Gpu &g) { return cuCtxSetCurrent(g.ctx); }

//===----------------------------------------------------------------------===//
// Waits
//===----------------------------------------------------------------------===//

namespace {

template <typename Query>
int pollUntil(Query query, double seconds, const char *call,
              const std::string &what, std::string &error) {
  using Clock = std::chrono::steady_clock;
  auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  // Spin briefly (most waits are short), then back off up to 50 us: a
  // block call or a layer's copy takes 0.1-10 ms, and a wake-up that
  // overshoots by a full millisecond would idle the GPU between actions
  // (every action waits for its stream, docs/cuda-runtime.md).
  int spins = 0;
  auto sleep = std::chrono::microseconds(5);
  while (true) {
    CUresult r = query();
    if (r == CUDA_SUCCESS)
      return PIPE_RT_OK;
    if (r != CUDA_ERROR_NOT_READY) {
      error = what + ": " + driverError(call, r);
      return PIPE_RT_DEVICE_ERROR;
    }
    if (Clock::now() > deadline) {
      error = format("%s did not finish within %g s (watchdog)", what.c_str(),
                     seconds);
      return PIPE_RT_TIMEOUT;
    }
    if (++spins < 200) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(sleep);
      sleep = std::min(sleep * 2, std::chrono::microseconds(50));
    }
  }
}

} // namespace

int waitStream(CUstream stream, double seconds, const std::string &what,
               std::string &error) {
  return pollUntil([&] { return cuStreamQuery(stream); }, seconds,
                   "cuStreamQuery", what, error);
}

int waitEvent(CUevent event, double seconds, const std::string &what,
              std::string &error) {
  return pollUntil([&] { return cuEventQuery(event); }, seconds, "cuEventQuery",
                   what, error);
}

//===----------------------------------------------------------------------===//
// Lanes, call context, errors
//===----------------------------------------------------------------------===//

Lanes::~Lanes() {
  if (!gpu)
    return;
  makeCurrent(*gpu);
  if (blas)
    cublasDestroy(blas);
  if (blasWorkspace)
    gpu->pool->release(blasWorkspace);
  for (CUstream s : streams)
    if (s)
      cuStreamDestroy(s);
}

int createLanes(Lanes &lanes, std::string &error) {
  if (CUresult r = makeCurrent(*lanes.gpu)) {
    error = driverError("cuCtxSetCurrent", r);
    return PIPE_RT_DEVICE_ERROR;
  }
  for (CUstream &s : lanes.streams)
    if (CUresult r = cuStreamCreate(&s, CU_STREAM_NON_BLOCKING)) {
      error = driverError("cuStreamCreate", r);
      return PIPE_RT_DEVICE_ERROR;
    }
  if (cublasStatus_t s = cublasCreate(&lanes.blas)) {
    lanes.blas = nullptr;
    error = blasError("cublasCreate", s);
    return PIPE_RT_DEVICE_ERROR;
  }
  cublasSetStream(lanes.blas, lanes.streams[0]);
  return attachBlasWorkspace(*lanes.gpu, lanes.blas, &lanes.blasWorkspace,
                             error);
}

int attachBlasWorkspace(Gpu &g, cublasHandle_t handle, void **workspace,
                        std::string &error) {
  if (g.pool->alloc(kBlasWorkspaceBytes, workspace, error) != CUDA_SUCCESS) {
    error = "cuBLAS workspace: " + error;
    return PIPE_RT_DEVICE_ERROR;
  }
  if (cublasStatus_t s =
          cublasSetWorkspace(handle, *workspace, kBlasWorkspaceBytes)) {
    g.pool->release(*workspace);
    *workspace = nullptr;
    error = blasError("cublasSetWorkspace", s);
    return PIPE_RT_DEVICE_ERROR;
  }
  return PIPE_RT_OK;
}

namespace {
thread_local CallContext *tlsCall = nullptr;
thread_local std::string tlsLastError;
double gWatchdog = 60;
} // namespace

CallContext *currentCall() { return tlsCall; }
void setCurrentCall(CallContext *call) { tlsCall = call; }
double defaultWatchdog() { return gWatchdog; }

void reportError(const std::string &message) {
  if (tlsCall && callScopeDevice() >= 0) {
    callScopeError(PIPE_RT_DEVICE_ERROR, message);
    return;
  }
  if (tlsLastError.empty())
    tlsLastError = message;
}

//===----------------------------------------------------------------------===//
// bf16 conversion kernels
//===----------------------------------------------------------------------===//

namespace {
const char kBf16Ptx[] =
#include "Bf16Kernels.inc"
    ;
} // namespace

const char *bf16KernelsPtx() { return kBf16Ptx; }

int convertBf16(Gpu &g, CUstream stream, bool narrow, void *dst,
                const void *src, int64_t n, std::string &error) {
  if (n <= 0)
    return PIPE_RT_OK;
  if ((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src)) &
      7) {
    error = format("GPU %d: bf16 conversion of misaligned buffers", g.ordinal);
    return PIPE_RT_INVALID_ARGUMENT;
  }
  if (CUresult r = makeCurrent(g)) {
    error = format("GPU %d: ", g.ordinal) + driverError("cuCtxSetCurrent", r);
    return PIPE_RT_DEVICE_ERROR;
  }
  CUfunction fn;
  {
    // Once per GPU, as MgpuABI.cpp loads a program's modules.
    std::lock_guard<std::mutex> lock(g.kernelsMu);
    if (!g.bf16Module) {
      CUmodule mod;
      if (CUresult r = cuModuleLoadData(&mod, kBf16Ptx)) {
        error = format("GPU %d: loading the bf16 kernels: ", g.ordinal) +
                driverError("cuModuleLoadData", r);
        return PIPE_RT_DEVICE_ERROR;
      }
      CUfunction nf, wf;
      CUresult r = cuModuleGetFunction(&nf, mod, "pipe_rt_narrow_bf16");
      if (r == CUDA_SUCCESS)
        r = cuModuleGetFunction(&wf, mod, "pipe_rt_widen_bf16");
      if (r != CUDA_SUCCESS) {
        cuModuleUnload(mod);
        error = format("GPU %d: the bf16 kernels: ", g.ordinal) +
                driverError("cuModuleGetFunction", r);
        return PIPE_RT_DEVICE_ERROR;
      }
      g.bf16Module = mod;
      g.narrowBf16 = nf;
      g.widenBf16 = wf;
    }
    fn = narrow ? g.narrowBf16 : g.widenBf16;
  }
  // 256 threads a block, one element pair a thread per round; the grid
  // stride loop covers the rest (4096 blocks keep every SM busy).
  constexpr unsigned kThreads = 256, kMaxBlocks = 4096;
  uint64_t pairs = uint64_t(n) / 2;
  unsigned blocks = unsigned(std::min<uint64_t>(
      std::max<uint64_t>((pairs + kThreads - 1) / kThreads, 1), kMaxBlocks));
  CUdeviceptr d = reinterpret_cast<CUdeviceptr>(dst);
  CUdeviceptr s = reinterpret_cast<CUdeviceptr>(src);
  uint64_t count = uint64_t(n);
  void *params[] = {&d, &s, &count};
  if (CUresult r = cuLaunchKernel(fn, blocks, 1, 1, kThreads, 1, 1, 0, stream,
                                  params, nullptr)) {
    error = format("GPU %d: ", g.ordinal) + driverError("cuLaunchKernel", r);
    return PIPE_RT_DEVICE_ERROR;
  }
  return PIPE_RT_OK;
}

//===----------------------------------------------------------------------===//
// Strided gather
//===----------------------------------------------------------------------===//

namespace {

CUresult copy2D(CUstream stream, void *dst, size_t dstPitch, const void *src,
                size_t srcPitch, size_t width, size_t height) {
  CUDA_MEMCPY2D c;
  std::memset(&c, 0, sizeof(c));
  c.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
  c.srcDevice = reinterpret_cast<CUdeviceptr>(src);
  c.srcPitch = srcPitch;
  c.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
  c.dstDevice = reinterpret_cast<CUdeviceptr>(dst);
  c.dstPitch = dstPitch;
  c.WidthInBytes = width;
  c.Height = height;
  return cuMemcpy2DAsync(&c, stream);
}

} // namespace

int gatherStrided(Gpu &g, CUstream stream, void *dst, const void *src,
                  const int64_t *shape, const int64_t *strides, size_t rank,
                  size_t es, double watchdog, std::string &error) {
  int64_t numel = 1;
  for (size_t i = 0; i < rank; ++i)
    numel *= shape[i];
  if (numel == 0)
    return PIPE_RT_OK;
  if (CUresult r = makeCurrent(g)) {
    error = driverError("cuCtxSetCurrent", r);
    return PIPE_RT_DEVICE_ERROR;
  }
  bool dense = true, positive = true;
  int64_t expect = 1;
  for (size_t i = rank; i-- > 0;) {
    if (shape[i] != 1 && strides[i] != expect)
      dense = false;
    if (shape[i] != 1 && strides[i] <= 0)
      positive = false;
    expect *= shape[i];
  }
  auto *d = static_cast<char *>(dst);
  auto *s = static_cast<const char *>(src);
  CUresult r = CUDA_SUCCESS;
  if (dense) {
    r = cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(d),
                      reinterpret_cast<CUdeviceptr>(s), numel * es, stream);
  } else if (positive && rank >= 1) {
    // One 2-D copy per index of the outer dimensions: rows of the innermost
    // dimension when it is contiguous, else single elements (width es).
    size_t r1 = rank - 1;
    bool innerUnit = strides[r1] == 1 || shape[r1] == 1;
    size_t outerRank = innerUnit && rank >= 2 ? rank - 2 : r1;
    int64_t outer = 1;
    for (size_t i = 0; i < outerRank; ++i)
      outer *= shape[i];
    if (outer > 4096)
      positive = false; // too many copies: the host path below is faster
    std::vector<int64_t> idx(outerRank, 0);
    for (int64_t o = 0; positive && o < outer && r == CUDA_SUCCESS; ++o) {
      int64_t off = 0;
      for (size_t i = 0; i < outerRank; ++i)
        off += idx[i] * strides[i];
      size_t width, height, srcPitch, dstPitch;
      if (innerUnit && rank >= 2) {
        width = size_t(shape[r1]) * es;
        height = size_t(shape[rank - 2]);
        srcPitch =
            shape[rank - 2] == 1 ? width : size_t(strides[rank - 2]) * es;
        dstPitch = width;
      } else if (innerUnit) {
        width = size_t(shape[r1]) * es;
        height = 1;
        srcPitch = dstPitch = width;
      } else {
        width = es;
        height = size_t(shape[r1]);
        srcPitch = size_t(strides[r1]) * es;
        dstPitch = es;
      }
      if (srcPitch < width) {
        positive = false;
        break;
      }
      r = copy2D(stream, d + o * int64_t(width * height), dstPitch,
                 s + off * int64_t(es), srcPitch, width, height);
      for (size_t i = outerRank; i-- > 0;) {
        if (++idx[i] < shape[i])
          break;
        idx[i] = 0;
      }
    }
  }
  if (!dense && !positive) {
    // Any layout (broadcasts, negative strides): through host memory.
    int64_t lo = 0, hi = 0;
    for (size_t i = 0; i < rank; ++i)
      (strides[i] < 0 ? lo : hi) += (shape[i] - 1) * strides[i];
    std::vector<char> span(size_t(hi - lo + 1) * es), dense(numel * es);
    r = cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(span.data()),
                      reinterpret_cast<CUdeviceptr>(s + lo * int64_t(es)),
                      span.size(), stream);
    if (r == CUDA_SUCCESS) {
      if (int st = waitStream(stream, watchdog,
                              format("GPU %d: strided copy", g.ordinal), error))
        return st;
      std::vector<int64_t> idx(rank, 0);
      for (int64_t n = 0; n < numel; ++n) {
        int64_t off = -lo;
        for (size_t i = 0; i < rank; ++i)
          off += idx[i] * strides[i];
        std::memcpy(&dense[n * es], &span[off * es], es);
        for (size_t i = rank; i-- > 0;) {
          if (++idx[i] < shape[i])
            break;
          idx[i] = 0;
        }
      }
      r = cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(d),
                        reinterpret_cast<CUdeviceptr>(dense.data()),
                        dense.size(), stream);
      // `dense` must outlive the copy: wait here.
      if (r == CUDA_SUCCESS)
        return waitStream(stream, watchdog,
                          format("GPU %d: strided copy", g.ordinal), error);
    }
  }
  if (r != CUDA_SUCCESS) {
    error = format("GPU %d: strided copy: ", g.ordinal) +
            driverError("cuMemcpy", r);
    return PIPE_RT_DEVICE_ERROR;
  }
  return waitStream(stream, watchdog, format("GPU %d: strided copy", g.ordinal),
                    error);
}

} // namespace cuda
} // namespace pipe_rt

extern "C" void pipe_rt_cuda_set_watchdog(double seconds) {
  if (seconds > 0)
    pipe_rt::cuda::gWatchdog = seconds;
}

extern "C" const char *pipe_rt_cuda_last_error(void) {
  static thread_local std::string last;
  last.swap(pipe_rt::cuda::tlsLastError);
  pipe_rt::cuda::tlsLastError.clear();
  return last.c_str();
}

extern "C" int pipe_rt_cuda_pool_stats(int ordinal, uint64_t *inUse,
                                       uint64_t *peak, uint64_t *reserved) {
  std::string error;
  pipe_rt::cuda::Gpu *g = pipe_rt::cuda::gpu(ordinal, error);
  if (!g)
    return PIPE_RT_DEVICE_ERROR;
  g->pool->stats(inUse, peak, reserved);
  return PIPE_RT_OK;
}

extern "C" int pipe_rt_cuda_device_memory(int ordinal, uint64_t *used,
                                          uint64_t *total) {
  std::string error;
  pipe_rt::cuda::Gpu *g = pipe_rt::cuda::gpu(ordinal, error);
  if (!g || pipe_rt::cuda::makeCurrent(*g) != CUDA_SUCCESS)
    return PIPE_RT_DEVICE_ERROR;
  size_t freeBytes = 0, totalBytes = 0;
  if (cuMemGetInfo(&freeBytes, &totalBytes) != CUDA_SUCCESS)
    return PIPE_RT_DEVICE_ERROR;
  if (used)
    *used = totalBytes - freeBytes;
  if (total)
    *total = totalBytes;
  return PIPE_RT_OK;
}

extern "C" void pipe_rt_cuda_pool_trim(int ordinal) {
  std::string error;
  if (pipe_rt::cuda::Gpu *g = pipe_rt::cuda::gpu(ordinal, error))
    g->pool->trim();
}

extern "C" int pipe_rt_cuda_device_count(char *error, size_t errorSize) {
  std::string message;
  int n = pipe_rt::cuda::deviceCount(message);
  if (n <= 0 && error && errorSize)
    std::snprintf(error, errorSize, "%s", message.c_str());
  return n < 0 ? 0 : n;
}
