//===- HostMemory.cpp - The default DeviceMemory: simulated arenas --------===//
//
// The backend of the simulated devices (hostBackend, Backend.h): buffers in
// the arenas of pipe_rt_devices, host memory from aligned operator new, and
// the "staged" variant that behaves like a device the host cannot address.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "Bf16.h"

#include "pipe/Runtime/Status.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

using namespace pipe_rt;

namespace {

constexpr std::align_val_t kAlign{64};

void *hostAlloc(uint64_t bytes) {
  return ::operator new(size_t(bytes ? bytes : 1), kAlign, std::nothrow);
}
void hostFree(void *p) { ::operator delete(p, kAlign); }

/// Copies a strided view into dense memory: one memcpy when the view is
/// dense, else one per row of its innermost dimension when that is
/// contiguous, else one per element.
void copyStrided(char *dst, const char *src, const std::vector<int64_t> &shape,
                 const int64_t *strides, size_t es) {
  size_t rank = shape.size();
  int64_t numel = 1;
  for (int64_t d : shape)
    numel *= d;
  if (numel == 0)
    return;
  bool dense = true;
  int64_t expect = 1;
  for (size_t i = rank; i-- > 0;) {
    if (shape[i] != 1 && strides[i] != expect)
      dense = false;
    expect *= shape[i];
  }
  if (dense) {
    std::memcpy(dst, src, size_t(numel) * es);
    return;
  }
  int64_t run = rank && strides[rank - 1] == 1 ? shape[rank - 1] : 1;
  size_t outer = run > 1 ? rank - 1 : rank;
  std::vector<int64_t> idx(outer, 0);
  for (int64_t n = 0; n < numel; n += run) {
    int64_t off = 0;
    for (size_t i = 0; i < outer; ++i)
      off += idx[i] * strides[i];
    std::memcpy(dst + n * int64_t(es), src + off * int64_t(es),
                size_t(run) * es);
    for (size_t i = outer; i-- > 0;) {
      if (++idx[i] < shape[i])
        break;
      idx[i] = 0;
    }
  }
}

/// `staged`: behaves like a device the host cannot address (every access
/// through copies, sends by reference, hooks in host memory), to test the
/// executor's GPU paths without a GPU (PIPE_RT_BACKEND=staged).
class HostMemory final : public DeviceMemory {
public:
  HostMemory(pipe_rt_devices *devs, bool staged) : devs(devs), staged(staged) {}
  bool hostAccessible() const override { return !staged; }
  bool hostBacked() const override { return true; }
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
  uint64_t startWindow(int device) override {
    uint64_t inUse = 0;
    pipe_rt_device_start_window(devs, device, &inUse);
    return inUse;
  }
  uint64_t windowPeak(int device) override {
    uint64_t peak = 0;
    pipe_rt_device_window_peak(devs, device, &peak);
    return peak;
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
  int createMemory(pipe_rt_devices *devs, int, const uint64_t *,
                   const std::vector<int> &, double,
                   std::unique_ptr<DeviceMemory> &out, std::string &) override {
    out = std::make_unique<HostMemory>(devs, staged);
    return PIPE_RT_OK;
  }

private:
  bool staged;
};

} // namespace

std::shared_ptr<Backend> pipe_rt::hostBackend() {
  static std::shared_ptr<Backend> backend = [] {
    const char *env = std::getenv("PIPE_RT_BACKEND");
    if (env && *env && std::strcmp(env, "staged") && std::strcmp(env, "host"))
      std::fprintf(stderr,
                   "pipe runtime: ignoring PIPE_RT_BACKEND='%s' (host or "
                   "staged); using host\n",
                   env);
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
