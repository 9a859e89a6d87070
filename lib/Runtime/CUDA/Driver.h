//===- Driver.h - CUDA driver state shared by PipeRuntimeCUDA ---*- C++ -*-===//
//
// Private to lib/Runtime/CUDA. One Gpu per device ordinal (its retained
// primary context and its memory pool), created on first use and never
// destroyed (modules and pools may be used from static destructors). The
// thread-local CallContext is set while a block function runs on a logical
// device, so the mgpu* functions and pipe_rt_cuda_gemm use its stream.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_RUNTIME_CUDA_DRIVER_H
#define PIPE_RUNTIME_CUDA_DRIVER_H

#include "../Format.h"

#include <cublas_v2.h>
#include <cuda.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

struct pipe_rt_session;

namespace pipe_rt {
namespace cuda {

/// "cuMemAlloc: out of memory (CUDA_ERROR_OUT_OF_MEMORY)".
std::string driverError(const char *call, CUresult r);
std::string blasError(const char *call, cublasStatus_t s);

/// cuInit once; the number of devices, or -1 with `error` set.
int deviceCount(std::string &error);

/// A caching allocator of device memory (or page-locked host memory) for
/// one GPU: freed blocks are kept by rounded size and reused; the driver is
/// only asked when no cached block fits (after returning the cache to it
/// once on out-of-memory). Callers free a block only once the GPU no longer
/// uses it. Counts requested bytes in use and their peak.
class Pool {
public:
  Pool(CUcontext ctx, bool host, int ordinal)
      : ctx(ctx), host(host), ordinal(ordinal) {}
  /// CUDA_SUCCESS or the driver's error (message in `error`).
  CUresult alloc(uint64_t bytes, void **out, std::string &error);
  /// Returns false if `ptr` is not a live block of this pool.
  bool release(void *ptr);
  bool owns(void *ptr);
  void trim();
  void stats(uint64_t *inUse, uint64_t *peak, uint64_t *reserved);

private:
  CUresult rawAlloc(uint64_t bytes, void **out);
  void rawFree(void *ptr);
  void trimLocked();

  std::mutex mu;
  CUcontext ctx;
  bool host;
  int ordinal;
  std::multimap<uint64_t, void *> cached; // size -> block
  std::unordered_map<void *, std::pair<uint64_t, uint64_t>>
      live; // (block, requested)
  uint64_t inUse = 0, peak = 0, reserved = 0;
};

struct Gpu {
  int ordinal = 0;
  CUdevice device = 0;
  CUcontext ctx = nullptr; // the retained primary context
  std::unique_ptr<Pool> pool;
  std::mutex blasMu;
  cublasHandle_t blas = nullptr; // for calls outside a block call
  void *blasWorkspace = nullptr; // its workspace (pool memory)
  /// The kernels of Bf16Kernels.ptx, loaded on first use (convertBf16).
  std::mutex kernelsMu;
  CUmodule bf16Module = nullptr;
  CUfunction narrowBf16 = nullptr, widenBf16 = nullptr;
};

/// The Gpu of `ordinal` (initialised on first use), or null with `error`.
Gpu *gpu(int ordinal, std::string &error);
/// The initialised Gpu whose pool allocated `ptr`, or null.
Gpu *gpuOwning(void *ptr);
/// The page-locked host memory pool (portable across GPUs).
Pool *hostPool(std::string &error);
/// Makes the Gpu's context current on this thread.
CUresult makeCurrent(Gpu &g);

/// Polls `stream` until its work is done: PIPE_RT_OK, PIPE_RT_TIMEOUT after
/// `seconds` ("<what> did not finish within N s") or PIPE_RT_DEVICE_ERROR.
int waitStream(CUstream stream, double seconds, const std::string &what,
               std::string &error);
int waitEvent(CUevent event, double seconds, const std::string &what,
              std::string &error);

/// The engines of one logical device: a compute stream and two copy
/// streams, and a cuBLAS handle bound to the compute stream.
struct Lanes {
  int device = 0; // logical
  Gpu *gpu = nullptr;
  CUstream streams[3] = {nullptr, nullptr, nullptr}; // compute, h2d, d2h
  std::mutex blasMu;
  cublasHandle_t blas = nullptr;
  void *blasWorkspace = nullptr; // pool memory, see attachBlasWorkspace
  ~Lanes();
};
int createLanes(Lanes &lanes, std::string &error);

/// Gives `handle` a workspace from `g`'s pool (kBlasWorkspaceBytes) instead
/// of the one cuBLAS would allocate itself, so that the pool's figures (and
/// a profile's peak device memory) count it; sets *workspace.
constexpr uint64_t kBlasWorkspaceBytes = uint64_t(32) << 20; // Hopper's
int attachBlasWorkspace(Gpu &g, cublasHandle_t handle, void **workspace,
                        std::string &error);

/// Device-to-device copies through NCCL (pipe_rt_cuda_session_use_nccl):
/// one communicator rank per GPU of the process (ncclCommInitAll); a copy is
/// a send on the source GPU's rank and a recv on the destination GPU's, in
/// one group (a self send/recv when both are on one GPU). Copies run one at
/// a time: a communicator is not thread-safe, and each waits for its
/// streams with the watchdog, aborting every communicator on an error or a
/// hang.
class NcclCopies {
public:
  /// The communicators of `gpus` (distinct); null with `error` when NCCL
  /// fails, or when the runtime was built without NCCL.
  static std::unique_ptr<NcclCopies> create(const std::vector<Gpu *> &gpus,
                                            std::string &error);
  /// Whether the runtime was built with NCCL (else why not, in `error`).
  static bool built(std::string &error);
  virtual ~NcclCopies() = default;
  virtual const std::vector<Gpu *> &gpus() const = 0;
  /// Whether an error aborted the communicators (a new NcclCopies is then
  /// needed).
  virtual bool aborted() const = 0;
  /// Copies `bytes` from `src` on `from` to `dst` on `to`, receiving on
  /// `stream` (a stream of `to`); done when it returns.
  virtual int copy(Gpu &to, CUstream stream, void *dst, Gpu &from,
                   const void *src, uint64_t bytes, double watchdog,
                   const std::string &what, std::string &error) = 0;
};

/// The GPU ordinal that `session`'s backend gives the device at `place`
/// among its host's devices (--gpu-map, else place mod count); -1 when the
/// session does not run on GPUs.
int gpuOrdinalOf(const pipe_rt_session *session, int place);

/// Set while a block function runs on this thread.
struct CallContext {
  Lanes *lanes = nullptr;
  double watchdog = 60;
};
CallContext *currentCall();
void setCurrentCall(CallContext *call);

/// The watchdog for waits outside block calls.
double defaultWatchdog();

/// Reports an error of an mgpu*/gemm call: to the running action inside a
/// block call, else to pipe_rt_cuda_last_error.
void reportError(const std::string &message);

/// Queues dst[i] = bf16(src[i]) (`narrow`) or f32(src[i]) for `n` elements
/// of device memory on `stream` (8-byte aligned buffers); does not wait.
/// Loads Bf16Kernels.ptx into the GPU's context on first use.
/// PIPE_RT_DEVICE_ERROR (or PIPE_RT_INVALID_ARGUMENT for misaligned
/// buffers) with `error` naming the GPU.
int convertBf16(Gpu &g, CUstream stream, bool narrow, void *dst,
                const void *src, int64_t n, std::string &error);
/// The PTX text of the kernels (for tests).
const char *bf16KernelsPtx();

/// Strided gather of `shape` elements at `src` (host or device memory) into
/// dense device memory `dst`, on `stream`, then waits.
int gatherStrided(Gpu &g, CUstream stream, void *dst, const void *src,
                  const int64_t *shape, const int64_t *strides, size_t rank,
                  size_t elemSize, double watchdog, std::string &error);

} // namespace cuda
} // namespace pipe_rt

#endif // PIPE_RUNTIME_CUDA_DRIVER_H
