//===- MgpuABI.cpp - MLIR's GPU runtime ABI on the CUDA driver API --------===//
//
// The mgpu* functions that code lowered by MLIR's gpu-to-llvm calls (see
// CUDA.h and docs/cuda-runtime.md for the list). They cannot return errors,
// so an error is reported to the running block call (the action then fails
// with PIPE_RT_DEVICE_ERROR and the message) or, outside one, kept for
// pipe_rt_cuda_last_error.
//
// Modules: generated code loads them from a global constructor, possibly
// before any GPU is chosen (or on a machine without one). So a module
// handle only records the image; it is loaded into a GPU's context on the
// first launch there, once per GPU, which also lets one program run on
// several GPUs of a process.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include "../Backend.h"

#include "pipe/Runtime/CUDA.h"

#include <atomic>
#include <set>

using namespace pipe_rt;
using namespace pipe_rt::cuda;

namespace {

struct Module {
  const void *image = nullptr;
  bool ptx = false;
  int optLevel = 2;
  std::mutex mu;
  std::map<int, CUmodule> loaded; // per GPU ordinal
};

struct Function {
  Module *module = nullptr;
  std::string name;
  std::mutex mu;
  std::map<int, CUfunction> resolved; // per GPU ordinal
};

std::atomic<int> gDefaultOrdinal{0};
std::mutex gManagedMu;
std::set<void *> gManaged; // cuMemAllocManaged allocations

/// The GPU the calling thread works on, its context made current.
Gpu *currentGpu(const char *what) {
  if (CallContext *call = currentCall()) {
    makeCurrent(*call->lanes->gpu);
    return call->lanes->gpu;
  }
  std::string error;
  Gpu *g = gpu(gDefaultOrdinal.load(), error);
  if (!g) {
    reportError(format("%s: %s", what, error.c_str()));
    return nullptr;
  }
  if (CUresult r = makeCurrent(*g)) {
    reportError(format("%s: ", what) + driverError("cuCtxSetCurrent", r));
    return nullptr;
  }
  return g;
}

/// Inside a block call a null stream means the device's compute stream.
CUstream streamOf(void *stream) {
  if (!stream)
    if (CallContext *call = currentCall())
      return call->lanes->streams[0];
  return static_cast<CUstream>(stream);
}

double watchdog() {
  if (CallContext *call = currentCall())
    return call->watchdog;
  return defaultWatchdog();
}

void check(CUresult r, const char *call, const char *what) {
  if (r != CUDA_SUCCESS)
    reportError(format("%s: ", what) + driverError(call, r));
}

CUfunction resolve(Function *f, Gpu &g) {
  std::lock_guard<std::mutex> lock(f->mu);
  auto it = f->resolved.find(g.ordinal);
  if (it != f->resolved.end())
    return it->second;
  Module &m = *f->module;
  CUmodule mod;
  {
    std::lock_guard<std::mutex> mlock(m.mu);
    auto mi = m.loaded.find(g.ordinal);
    if (mi == m.loaded.end()) {
      CUresult r;
      if (m.ptx) {
        CUjit_option opts[] = {CU_JIT_OPTIMIZATION_LEVEL};
        void *values[] = {reinterpret_cast<void *>(intptr_t(m.optLevel))};
        r = cuModuleLoadDataEx(&mod, m.image, 1, opts, values);
      } else {
        r = cuModuleLoadData(&mod, m.image);
      }
      if (r != CUDA_SUCCESS) {
        reportError(
            format("loading the GPU module of kernel '%s' on GPU %d: ",
                   f->name.c_str(), g.ordinal) +
            driverError(m.ptx ? "cuModuleLoadDataEx" : "cuModuleLoadData", r));
        return nullptr;
      }
      m.loaded[g.ordinal] = mod;
    } else {
      mod = mi->second;
    }
  }
  CUfunction fn;
  if (CUresult r = cuModuleGetFunction(&fn, mod, f->name.c_str())) {
    reportError(format("kernel '%s' on GPU %d: ", f->name.c_str(), g.ordinal) +
                driverError("cuModuleGetFunction", r));
    return nullptr;
  }
  f->resolved[g.ordinal] = fn;
  return fn;
}

CUfunction prepareLaunch(void *function, int32_t smem, Gpu *&g) {
  auto *f = static_cast<Function *>(function);
  g = currentGpu("kernel launch");
  if (!f || !g)
    return nullptr;
  CUfunction fn = resolve(f, *g);
  if (fn && smem > 48 * 1024)
    check(cuFuncSetAttribute(
              fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem),
          "cuFuncSetAttribute", f->name.c_str());
  return fn;
}

} // namespace

extern "C" {

void *mgpuModuleLoad(void *data, size_t) {
  auto *m = new Module();
  m->image = data;
  return m;
}

void *mgpuModuleLoadJIT(void *data, int optLevel) {
  auto *m = new Module();
  m->image = data;
  m->ptx = true;
  m->optLevel = optLevel;
  return m;
}

void mgpuModuleUnload(void *module) {
  auto *m = static_cast<Module *>(module);
  if (!m)
    return;
  // Called from a destructor at exit: errors (a driver already shut down)
  // are ignored. Function handles of the module are leaked with it.
  for (auto &[ordinal, mod] : m->loaded)
    cuModuleUnload(mod);
  m->loaded.clear();
}

void *mgpuModuleGetFunction(void *module, const char *name) {
  auto *f = new Function();
  f->module = static_cast<Module *>(module);
  f->name = name ? name : "";
  return f;
}

void mgpuLaunchKernel(void *function, intptr_t gx, intptr_t gy, intptr_t gz,
                      intptr_t bx, intptr_t by, intptr_t bz, int32_t smem,
                      void *stream, void **params, void **extra, size_t) {
  Gpu *g;
  CUfunction fn = prepareLaunch(function, smem, g);
  if (!fn)
    return;
  check(cuLaunchKernel(fn, unsigned(gx), unsigned(gy), unsigned(gz),
                       unsigned(bx), unsigned(by), unsigned(bz), unsigned(smem),
                       streamOf(stream), params, extra),
        "cuLaunchKernel", static_cast<Function *>(function)->name.c_str());
}

void mgpuLaunchClusterKernel(void *function, intptr_t cx, intptr_t cy,
                             intptr_t cz, intptr_t gx, intptr_t gy, intptr_t gz,
                             intptr_t bx, intptr_t by, intptr_t bz,
                             int32_t smem, void *stream, void **params,
                             void **extra, size_t) {
  Gpu *g;
  CUfunction fn = prepareLaunch(function, smem, g);
  if (!fn)
    return;
  CUlaunchAttribute attr;
  attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attr.value.clusterDim.x = unsigned(cx);
  attr.value.clusterDim.y = unsigned(cy);
  attr.value.clusterDim.z = unsigned(cz);
  CUlaunchConfig config = {};
  config.gridDimX = unsigned(gx);
  config.gridDimY = unsigned(gy);
  config.gridDimZ = unsigned(gz);
  config.blockDimX = unsigned(bx);
  config.blockDimY = unsigned(by);
  config.blockDimZ = unsigned(bz);
  config.sharedMemBytes = unsigned(smem);
  config.hStream = streamOf(stream);
  config.attrs = &attr;
  config.numAttrs = 1;
  check(cuLaunchKernelEx(&config, fn, params, extra), "cuLaunchKernelEx",
        static_cast<Function *>(function)->name.c_str());
}

void *mgpuStreamCreate(void) {
  if (CallContext *call = currentCall())
    return call->lanes->streams[0];
  if (!currentGpu("mgpuStreamCreate"))
    return nullptr;
  CUstream s = nullptr;
  check(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate",
        "mgpuStreamCreate");
  return s;
}

void mgpuStreamDestroy(void *stream) {
  if (!stream)
    return;
  if (CallContext *call = currentCall())
    for (CUstream s : call->lanes->streams)
      if (s == stream)
        return; // the device's own stream
  check(cuStreamDestroy(static_cast<CUstream>(stream)), "cuStreamDestroy",
        "mgpuStreamDestroy");
}

void mgpuStreamSynchronize(void *stream) {
  std::string error;
  if (waitStream(streamOf(stream), watchdog(), "mgpuStreamSynchronize",
                 error) != 0)
    reportError(error);
}

void mgpuStreamWaitEvent(void *stream, void *event) {
  check(cuStreamWaitEvent(streamOf(stream), static_cast<CUevent>(event), 0),
        "cuStreamWaitEvent", "mgpuStreamWaitEvent");
}

void *mgpuEventCreate(void) {
  if (!currentGpu("mgpuEventCreate"))
    return nullptr;
  CUevent e = nullptr;
  check(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), "cuEventCreate",
        "mgpuEventCreate");
  return e;
}

void mgpuEventDestroy(void *event) {
  if (event)
    check(cuEventDestroy(static_cast<CUevent>(event)), "cuEventDestroy",
          "mgpuEventDestroy");
}

void mgpuEventSynchronize(void *event) {
  std::string error;
  if (waitEvent(static_cast<CUevent>(event), watchdog(), "mgpuEventSynchronize",
                error) != 0)
    reportError(error);
}

void mgpuEventRecord(void *event, void *stream) {
  check(cuEventRecord(static_cast<CUevent>(event), streamOf(stream)),
        "cuEventRecord", "mgpuEventRecord");
}

void *mgpuMemAlloc(uint64_t bytes, void *, bool hostShared) {
  Gpu *g = currentGpu("mgpuMemAlloc");
  if (!g)
    return nullptr;
  if (hostShared) {
    CUdeviceptr p = 0;
    check(cuMemAllocManaged(&p, bytes ? bytes : 1, CU_MEM_ATTACH_GLOBAL),
          "cuMemAllocManaged", "mgpuMemAlloc");
    if (p) {
      std::lock_guard<std::mutex> lock(gManagedMu);
      gManaged.insert(reinterpret_cast<void *>(p));
    }
    return reinterpret_cast<void *>(p);
  }
  if (currentCall() && callScopeDevice() >= 0)
    if (void *p = callScopeAlloc(bytes))
      return p;
  // Outside a block call; or over the logical device's capacity (the error
  // is recorded and the action fails), where the kernels still get real
  // memory so that they do not fault.
  void *p = nullptr;
  std::string error;
  if (g->pool->alloc(bytes, &p, error) != CUDA_SUCCESS) {
    reportError("mgpuMemAlloc: " + error);
    return nullptr;
  }
  return p;
}

void mgpuMemFree(void *ptr, void *stream) {
  if (!ptr)
    return;
  if (currentCall() && callScopeFree(ptr))
    return; // released once the call's work is done
  CUstream s = streamOf(stream);
  std::string error;
  if (waitStream(s, watchdog(), "mgpuMemFree", error) != 0) {
    reportError(error); // still in use: leak it rather than reuse it
    return;
  }
  {
    std::lock_guard<std::mutex> lock(gManagedMu);
    if (gManaged.erase(ptr)) {
      check(cuMemFree(reinterpret_cast<CUdeviceptr>(ptr)), "cuMemFree",
            "mgpuMemFree");
      return;
    }
  }
  // Whichever GPU's pool holds it.
  if (Gpu *g = gpuOwning(ptr)) {
    g->pool->release(ptr);
    return;
  }
  reportError("mgpuMemFree: pointer not allocated by mgpuMemAlloc");
}

void mgpuMemcpy(void *dst, void *src, size_t bytes, void *stream) {
  if (!currentGpu("mgpuMemcpy"))
    return;
  check(cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst),
                      reinterpret_cast<CUdeviceptr>(src), bytes,
                      streamOf(stream)),
        "cuMemcpyAsync", "mgpuMemcpy");
}

void mgpuMemset32(void *dst, uint32_t value, size_t count, void *stream) {
  if (!currentGpu("mgpuMemset32"))
    return;
  check(cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(dst), value, count,
                         streamOf(stream)),
        "cuMemsetD32Async", "mgpuMemset32");
}

void mgpuMemset16(void *dst, uint16_t value, size_t count, void *stream) {
  if (!currentGpu("mgpuMemset16"))
    return;
  check(cuMemsetD16Async(reinterpret_cast<CUdeviceptr>(dst), value, count,
                         streamOf(stream)),
        "cuMemsetD16Async", "mgpuMemset16");
}

void mgpuMemHostRegister(void *ptr, uint64_t bytes) {
  if (!ptr || !bytes || !currentGpu("mgpuMemHostRegister"))
    return;
  check(cuMemHostRegister(ptr, bytes, CU_MEMHOSTREGISTER_PORTABLE),
        "cuMemHostRegister", "mgpuMemHostRegister");
}

void mgpuMemHostUnregister(void *ptr) {
  if (!ptr || !currentGpu("mgpuMemHostUnregister"))
    return;
  check(cuMemHostUnregister(ptr), "cuMemHostUnregister",
        "mgpuMemHostUnregister");
}

} // extern "C"

namespace {

/// The bytes a ranked memref descriptor spans: {allocated, aligned, offset,
/// sizes[rank], strides[rank]}.
std::pair<char *, uint64_t> memrefSpan(int64_t rank, void *descriptor,
                                       int64_t elemBytes) {
  auto *words = static_cast<int64_t *>(descriptor);
  char *aligned = reinterpret_cast<char *>(words[1]);
  int64_t offset = words[2];
  int64_t last = 0;
  for (int64_t i = 0; i < rank; ++i) {
    int64_t size = words[3 + i], stride = words[3 + rank + i];
    if (size == 0)
      return {aligned, 0};
    last += (size - 1) * stride;
  }
  return {aligned + offset * elemBytes, uint64_t(last + 1) * elemBytes};
}

} // namespace

extern "C" {

void mgpuMemHostRegisterMemRef(int64_t rank, void *descriptor,
                               int64_t elemBytes) {
  auto [ptr, bytes] = memrefSpan(rank, descriptor, elemBytes);
  mgpuMemHostRegister(ptr, bytes);
}

void mgpuMemHostUnregisterMemRef(int64_t rank, void *descriptor,
                                 int64_t elemBytes) {
  auto [ptr, bytes] = memrefSpan(rank, descriptor, elemBytes);
  if (bytes)
    mgpuMemHostUnregister(ptr);
}

void mgpuSetDefaultDevice(int32_t device) { gDefaultOrdinal = device; }

} // extern "C"
