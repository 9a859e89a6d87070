//===- CudaBackend.cpp - Sessions whose devices are GPUs ------------------===//
//
// The executor's DeviceMemory (lib/Runtime/Backend.h) on CUDA: each logical
// device of a schedule maps to a GPU (several may share one) and owns three
// streams (compute, host-to-device, device-to-host) and a cuBLAS handle,
// kept by the session across runs. Memory comes from the GPU's pool
// (Driver.cpp) and is charged to the logical device against its capacity;
// host staging (offloaded stashes) is page-locked; the bf16 conversions of
// the parameter server's transfers run the kernels of Bf16Kernels.ptx
// (Driver.cpp, convertBf16) on the lane's stream. Every operation waits for
// its stream with the watchdog before returning, which is the contract of
// DeviceMemory: the executor's threads then order everything as on the
// simulated devices, and the three lanes still overlap.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include "../Session.h"

#include "pipe/Runtime/CUDA.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>

using namespace pipe_rt;
using namespace pipe_rt::cuda;

namespace {

/// Lanes of the logical devices, shared by the backend and its runs, and
/// the NCCL communicators of their GPUs when copies go through NCCL
/// (destroyed first).
struct LaneSet {
  std::mutex mu;
  std::vector<std::unique_ptr<Lanes>> lanes;
  std::shared_ptr<NcclCopies> nccl;
};

const char *laneName(Lane lane) {
  switch (lane) {
  case Lane::Compute:
    return "compute";
  case Lane::H2D:
    return "host-to-device";
  case Lane::D2H:
    return "device-to-host";
  }
  return "?";
}

/// Returns allocHost memory to the page-locked pool (process-wide).
void releaseHost(void *ptr) {
  std::string error;
  if (Pool *p = hostPool(error))
    p->release(ptr);
}

class CudaMemory final : public DeviceMemory {
public:
  struct Device {
    Lanes *lanes = nullptr;
    uint64_t capacity = UINT64_MAX, inUse = 0, peak = 0, windowPeak = 0;
    std::mutex mu;
    std::unordered_map<void *, uint64_t> allocs;
    std::vector<void *> deferred; // freed during a block call
    /// Per lane: inside beginBatch/endBatch (only the lane's own thread
    /// touches its flag).
    bool batching[3] = {false, false, false};
  };

  CudaMemory(std::shared_ptr<LaneSet> set, double watchdog)
      : set(std::move(set)), watchdog(watchdog) {}

  ~CudaMemory() override {
    std::string error;
    Pool *hp = hostPool(error);
    for (auto &d : devices) {
      if (!d->lanes)
        continue; // another rank's device
      // Anything left (an aborted run) goes back to the pool once the
      // device's work is done.
      for (CUstream s : d->lanes->streams)
        waitStream(s, watchdog, "releasing a run", error);
      for (auto &[p, bytes] : d->allocs)
        d->lanes->gpu->pool->release(p);
      for (void *p : d->deferred)
        d->lanes->gpu->pool->release(p);
    }
    for (void *p : registered)
      cuMemHostUnregister(p);
    (void)hp;
  }

  std::vector<std::unique_ptr<Device>> devices;
  /// Device-to-device copies through NCCL when set.
  std::shared_ptr<NcclCopies> nccl;

  bool hostAccessible() const override { return false; }
  bool hookAllocsOnDevice() const override { return false; }

  int alloc(int d, uint64_t bytes, const char *what, void **out,
            std::string &error) override {
    *out = nullptr;
    Device &dev = *devices[d];
    const char *label = what ? what : "(unnamed)";
    {
      std::lock_guard<std::mutex> lock(dev.mu);
      if (bytes > dev.capacity - dev.inUse) {
        error = format("device %d: allocation '%s' of %llu bytes exceeds the "
                       "device's capacity: %llu of %llu bytes in use",
                       d, label, (unsigned long long)bytes,
                       (unsigned long long)dev.inUse,
                       (unsigned long long)dev.capacity);
        return PIPE_RT_OUT_OF_MEMORY;
      }
      dev.inUse += bytes;
      dev.peak = std::max(dev.peak, dev.inUse);
      dev.windowPeak = std::max(dev.windowPeak, dev.inUse);
    }
    std::string e;
    void *p = nullptr;
    if (dev.lanes->gpu->pool->alloc(bytes, &p, e) != CUDA_SUCCESS) {
      std::lock_guard<std::mutex> lock(dev.mu);
      dev.inUse -= bytes;
      error = format("device %d: allocation '%s': ", d, label) + e;
      return PIPE_RT_OUT_OF_MEMORY;
    }
    std::lock_guard<std::mutex> lock(dev.mu);
    dev.allocs[p] = bytes;
    *out = p;
    return PIPE_RT_OK;
  }

  void free(int d, void *ptr) override {
    if (!ptr)
      return;
    Device &dev = *devices[d];
    std::lock_guard<std::mutex> lock(dev.mu);
    auto it = dev.allocs.find(ptr);
    if (it == dev.allocs.end())
      return;
    dev.inUse -= it->second;
    dev.allocs.erase(it);
    // Kernels queued by the running block call may still use it.
    if (inCall == this && inCallDevice == d)
      dev.deferred.push_back(ptr);
    else
      dev.lanes->gpu->pool->release(ptr);
  }

  void usage(int d, uint64_t *inUse, uint64_t *peak) override {
    Device &dev = *devices[d];
    std::lock_guard<std::mutex> lock(dev.mu);
    if (inUse)
      *inUse = dev.inUse;
    if (peak)
      *peak = dev.peak;
  }

  uint64_t startWindow(int d) override {
    Device &dev = *devices[d];
    std::lock_guard<std::mutex> lock(dev.mu);
    dev.windowPeak = dev.inUse;
    return dev.inUse;
  }

  uint64_t windowPeak(int d) override {
    Device &dev = *devices[d];
    std::lock_guard<std::mutex> lock(dev.mu);
    return dev.windowPeak;
  }

  int copy(int d, Lane lane, void *dst, const void *src, uint64_t bytes,
           std::string &error) override {
    if (!bytes)
      return PIPE_RT_OK;
    Lanes &l = *devices[d]->lanes;
    CUstream s = l.streams[int(lane)];
    makeCurrent(*l.gpu);
    if (CUresult r =
            cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst),
                          reinterpret_cast<CUdeviceptr>(src), bytes, s))
      return driverFail(d, lane, "copy", driverError("cuMemcpyAsync", r),
                        error);
    return wait(d, lane, "copy", error);
  }

  int copyPeer(int d, void *dst, int srcDevice, const void *src, uint64_t bytes,
               std::string &error) override {
    if (!bytes)
      return PIPE_RT_OK;
    Lanes &l = *devices[d]->lanes;
    Lanes &from = *devices[srcDevice]->lanes;
    if (nccl)
      return nccl->copy(*l.gpu, l.streams[0], dst, *from.gpu, src, bytes,
                        watchdog,
                        format("device %d (GPU %d): copy from device %d (GPU "
                               "%d) through NCCL",
                               d, l.gpu->ordinal, srcDevice, from.gpu->ordinal),
                        error);
    makeCurrent(*l.gpu);
    CUresult r;
    if (from.gpu == l.gpu)
      r = cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst),
                        reinterpret_cast<CUdeviceptr>(src), bytes,
                        l.streams[0]);
    else
      r = cuMemcpyPeerAsync(reinterpret_cast<CUdeviceptr>(dst), l.gpu->ctx,
                            reinterpret_cast<CUdeviceptr>(src), from.gpu->ctx,
                            bytes, l.streams[0]);
    if (r != CUDA_SUCCESS)
      return driverFail(d, Lane::Compute,
                        format("copy from device %d", srcDevice).c_str(),
                        driverError("cuMemcpyPeerAsync", r), error);
    return wait(d, Lane::Compute,
                format("copy from device %d", srcDevice).c_str(), error);
  }

  int zero(int d, Lane lane, void *ptr, uint64_t bytes,
           std::string &error) override {
    if (!bytes)
      return PIPE_RT_OK;
    Lanes &l = *devices[d]->lanes;
    makeCurrent(*l.gpu);
    if (CUresult r = cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(ptr), 0,
                                     bytes, l.streams[int(lane)]))
      return driverFail(d, lane, "memset", driverError("cuMemsetD8Async", r),
                        error);
    return wait(d, lane, "memset", error);
  }

  int add(int d, Lane lane, void *dst, const void *src, bool f64, int64_t n,
          std::string &error) override {
    if (n <= 0)
      return PIPE_RT_OK;
    Lanes &l = *devices[d]->lanes;
    makeCurrent(*l.gpu);
    cublasStatus_t s;
    {
      std::lock_guard<std::mutex> lock(l.blasMu);
      cublasSetStream(l.blas, l.streams[int(lane)]);
      if (f64) {
        const double one = 1;
        s = cublasDaxpy_v2_64(l.blas, n, &one, static_cast<const double *>(src),
                              1, static_cast<double *>(dst), 1);
      } else {
        const float one = 1;
        s = cublasSaxpy_v2_64(l.blas, n, &one, static_cast<const float *>(src),
                              1, static_cast<float *>(dst), 1);
      }
      cublasSetStream(l.blas, l.streams[0]);
    }
    if (s != CUBLAS_STATUS_SUCCESS)
      return driverFail(d, lane, "gradient accumulation",
                        blasError(f64 ? "cublasDaxpy" : "cublasSaxpy", s),
                        error);
    return wait(d, lane, "gradient accumulation", error);
  }

  void beginBatch(int d, Lane lane) override {
    devices[d]->batching[int(lane)] = true;
  }

  int endBatch(int d, Lane lane, std::string &error) override {
    devices[d]->batching[int(lane)] = false;
    return wait(d, lane, "batched copies", error);
  }

  int narrowBf16(int d, Lane lane, void *dst, const void *src, int64_t n,
                 std::string &error) override {
    return convert(d, lane, true, dst, src, n, error);
  }

  int widenBf16(int d, Lane lane, void *dst, const void *src, int64_t n,
                std::string &error) override {
    return convert(d, lane, false, dst, src, n, error);
  }

  int gather(int d, void *dst, const void *src,
             const std::vector<int64_t> &shape, const int64_t *strides,
             size_t elemSize, std::string &error) override {
    Lanes &l = *devices[d]->lanes;
    int st = gatherStrided(*l.gpu, l.streams[0], dst, src, shape.data(),
                           strides, shape.size(), elemSize, watchdog, error);
    if (st != PIPE_RT_OK)
      error = format("device %d (GPU %d): ", d, l.gpu->ordinal) + error;
    return st;
  }

  void *allocHost(uint64_t bytes) override {
    std::string error;
    Pool *p = hostPool(error);
    void *out = nullptr;
    if (!p || p->alloc(bytes, &out, error) != CUDA_SUCCESS)
      return nullptr;
    return out;
  }

  void freeHost(void *ptr) override { releaseHost(ptr); }
  HostFreeFn hostFreeFunction() const override { return releaseHost; }

  void registerHost(void *ptr, uint64_t bytes) override {
    if (!ptr || !bytes)
      return;
    auto own = std::find_if(devices.begin(), devices.end(),
                            [](const auto &d) { return d->lanes; });
    if (own == devices.end())
      return;
    makeCurrent(*(*own)->lanes->gpu);
    if (cuMemHostRegister(ptr, bytes, CU_MEMHOSTREGISTER_PORTABLE) ==
        CUDA_SUCCESS)
      registered.insert(ptr);
  }

  void unregisterHost(void *ptr) override {
    if (registered.erase(ptr))
      cuMemHostUnregister(ptr);
  }

  void beginCall(int d) override {
    Lanes &l = *devices[d]->lanes;
    makeCurrent(*l.gpu);
    call.lanes = &l;
    call.watchdog = watchdog;
    setCurrentCall(&call);
    inCall = this;
    inCallDevice = d;
  }

  int endCall(int d, std::string &error) override {
    int st = wait(d, Lane::Compute, "the block's kernels", error);
    setCurrentCall(nullptr);
    inCall = nullptr;
    inCallDevice = -1;
    Device &dev = *devices[d];
    std::vector<void *> deferred;
    {
      std::lock_guard<std::mutex> lock(dev.mu);
      deferred.swap(dev.deferred);
    }
    if (st == PIPE_RT_OK) // else still in use: kept until the run ends
      for (void *p : deferred)
        dev.lanes->gpu->pool->release(p);
    else {
      std::lock_guard<std::mutex> lock(dev.mu);
      dev.deferred.insert(dev.deferred.end(), deferred.begin(), deferred.end());
    }
    return st;
  }

private:
  /// The kernels of Bf16Kernels.ptx on the lane's stream, then a wait.
  int convert(int d, Lane lane, bool narrow, void *dst, const void *src,
              int64_t n, std::string &error) {
    if (n <= 0)
      return PIPE_RT_OK;
    Lanes &l = *devices[d]->lanes;
    const char *what = narrow ? "bf16 narrowing" : "bf16 widening";
    std::string e;
    if (int st =
            convertBf16(*l.gpu, l.streams[int(lane)], narrow, dst, src, n, e)) {
      driverFail(d, lane, what, e, error);
      return st;
    }
    return wait(d, lane, what, error);
  }
  int wait(int d, Lane lane, const char *what, std::string &error) {
    if (devices[d]->batching[int(lane)])
      return PIPE_RT_OK; // endBatch waits
    Lanes &l = *devices[d]->lanes;
    return waitStream(l.streams[int(lane)], watchdog,
                      format("device %d (GPU %d) %s stream: %s", d,
                             l.gpu->ordinal, laneName(lane), what),
                      error);
  }
  int driverFail(int d, Lane lane, const char *what, const std::string &msg,
                 std::string &error) {
    Lanes &l = *devices[d]->lanes;
    error = format("device %d (GPU %d) %s stream: %s: ", d, l.gpu->ordinal,
                   laneName(lane), what) +
            msg;
    return PIPE_RT_DEVICE_ERROR;
  }

  std::shared_ptr<LaneSet> set;
  double watchdog;
  std::set<void *> registered;
  // The block call running on this thread (one per device thread).
  static thread_local CallContext call;
  static thread_local CudaMemory *inCall;
  static thread_local int inCallDevice;
};

thread_local CallContext CudaMemory::call;
thread_local CudaMemory *CudaMemory::inCall = nullptr;
thread_local int CudaMemory::inCallDevice = -1;

class CudaBackend final : public Backend {
public:
  CudaBackend(std::vector<int> map, int count)
      : map(std::move(map)), count(count), lanes(std::make_shared<LaneSet>()) {}

  const char *name() const override { return "cuda"; }
  bool usesArenas() const override { return false; }

  int createMemory(pipe_rt_devices *, int numDevices,
                   const uint64_t *capacities,
                   const std::vector<int> &hostSlots, double watchdogSeconds,
                   std::unique_ptr<DeviceMemory> &out,
                   std::string &error) override {
    auto mem = std::make_unique<CudaMemory>(lanes, watchdogSeconds);
    std::lock_guard<std::mutex> lock(lanes->mu);
    if (int(lanes->lanes.size()) < numDevices)
      lanes->lanes.resize(size_t(numDevices));
    for (int d = 0; d < numDevices; ++d) {
      // Only the devices of this process get a GPU: with one rank per GPU
      // of a host, the rank's place on the host picks it.
      int slot = hostSlots.empty() ? d : hostSlots[d];
      if (slot >= 0 && !lanes->lanes[d]) {
        int ordinal = ordinalOf(slot);
        auto l = std::make_unique<Lanes>();
        l->device = d;
        l->gpu = gpu(ordinal, error);
        if (!l->gpu) {
          error = format("device %d: ", d) + error;
          return PIPE_RT_DEVICE_ERROR;
        }
        if (int st = createLanes(*l, error)) {
          error = format("device %d (GPU %d): ", d, ordinal) + error;
          return st;
        }
        lanes->lanes[d] = std::move(l);
      }
      auto dev = std::make_unique<CudaMemory::Device>();
      dev->lanes = slot >= 0 ? lanes->lanes[d].get() : nullptr;
      dev->capacity = capacities[d];
      mem->devices.push_back(std::move(dev));
    }
    if (useNccl) {
      if (int st = attachNccl(numDevices, error))
        return st;
      mem->nccl = lanes->nccl;
    }
    out = std::move(mem);
    return PIPE_RT_OK;
  }

  /// Device-to-device copies of later runs go through NCCL.
  bool useNccl = false;
  /// The GPU of the device at `place` among the host's devices.
  int ordinalOf(int place) const {
    return place < int(map.size()) ? map[place] : place % count;
  }

private:
  /// Communicators covering the GPUs of the first `numDevices` lanes
  /// (lanes->mu held): those of an earlier run when they do and no error
  /// aborted them, else new ones.
  int attachNccl(int numDevices, std::string &error) {
    std::vector<Gpu *> gpus;
    if (lanes->nccl)
      gpus = lanes->nccl->gpus();
    bool covered = lanes->nccl && !lanes->nccl->aborted();
    for (int d = 0; d < numDevices; ++d) {
      Lanes *l = lanes->lanes[d].get();
      if (l && std::find(gpus.begin(), gpus.end(), l->gpu) == gpus.end()) {
        gpus.push_back(l->gpu);
        covered = false;
      }
    }
    if (covered)
      return PIPE_RT_OK;
    lanes->nccl.reset();
    lanes->nccl = NcclCopies::create(gpus, error);
    if (!lanes->nccl) {
      error = "NCCL: " + error;
      return PIPE_RT_DEVICE_ERROR;
    }
    return PIPE_RT_OK;
  }

  std::vector<int> map;
  int count;
  std::shared_ptr<LaneSet> lanes;
};

void writeError(char *error, size_t size, const std::string &msg) {
  if (error && size)
    std::snprintf(error, size, "%s", msg.c_str());
}

} // namespace

int pipe_rt::cuda::gpuOrdinalOf(const pipe_rt_session *session, int place) {
  auto *backend =
      session ? dynamic_cast<const CudaBackend *>(session->backend.get())
              : nullptr;
  return backend && place >= 0 ? backend->ordinalOf(place) : -1;
}

extern "C" int pipe_rt_cuda_session_enable(pipe_rt_session *session,
                                           const char *deviceMap, char *error,
                                           size_t errorSize) {
  if (!session) {
    writeError(error, errorSize, "pipe_rt_cuda_session_enable: no session");
    return PIPE_RT_INVALID_ARGUMENT;
  }
  std::string message;
  int count = deviceCount(message);
  if (count <= 0) {
    writeError(error, errorSize, "no usable GPU: " + message);
    return PIPE_RT_DEVICE_ERROR;
  }
  std::vector<int> map;
  if (deviceMap && *deviceMap) {
    std::stringstream in(deviceMap);
    std::string item;
    while (std::getline(in, item, ',')) {
      char *end = nullptr;
      long v = std::strtol(item.c_str(), &end, 10);
      if (item.empty() || *end || v < 0 || v >= count) {
        writeError(error, errorSize,
                   format("device map '%s': '%s' is not a GPU ordinal below "
                          "%d",
                          deviceMap, item.c_str(), count));
        return PIPE_RT_INVALID_ARGUMENT;
      }
      map.push_back(int(v));
    }
  }
  session->backend = std::make_shared<CudaBackend>(std::move(map), count);
  return PIPE_RT_OK;
}

extern "C" int pipe_rt_cuda_session_use_nccl(pipe_rt_session *session,
                                             char *error, size_t errorSize) {
  auto *backend =
      session ? dynamic_cast<CudaBackend *>(session->backend.get()) : nullptr;
  if (!backend) {
    writeError(error, errorSize,
               "pipe_rt_cuda_session_use_nccl: the session does not run on "
               "GPUs (pipe_rt_cuda_session_enable first)");
    return PIPE_RT_INVALID_ARGUMENT;
  }
  std::string why;
  if (!NcclCopies::built(why)) {
    writeError(error, errorSize, why);
    return PIPE_RT_DEVICE_ERROR;
  }
  backend->useNccl = true;
  return PIPE_RT_OK;
}
