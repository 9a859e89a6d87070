//===- Backend.h - Pluggable device memory of the executor ------*- C++ -*-===//
//
// Private to the runtime (and PipeRuntimeCUDA). The executor (Executor.cpp)
// never touches a device buffer's bytes itself: it allocates, frees, copies,
// zeroes and adds through a DeviceMemory. The default one holds the buffers
// in the arenas of the simulated devices (pipe_rt_devices); PipeRuntimeCUDA
// provides one on the GPU (lib/Runtime/CUDA). Schedules, channels (matching,
// watchdog, abort) and device threads stay in pipe_rt_devices for both.
//
// Contract: every operation is complete when it returns (a backend with
// streams waits for its stream, with a watchdog; inside beginBatch/endBatch
// on one lane, when endBatch returns), so the executor's ordering
// (device thread, copy-job threads, host optimizer thread) is the same for
// every backend. `Lane` names the engine an operation belongs to, so a GPU
// backend runs compute-thread copies, host-to-device and device-to-host
// copies on separate streams that overlap.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_RUNTIME_BACKEND_H
#define PIPE_RUNTIME_BACKEND_H

#include "pipe/Runtime/Devices.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pipe_rt {

/// The engine of a device an operation runs on (the calling thread's role).
enum class Lane { Compute = 0, H2D = 1, D2H = 2 };

/// Memory of the devices of one run. Thread-safe. Errors return a
/// pipe_rt_status and set `error` to a message naming the device.
class DeviceMemory {
public:
  virtual ~DeviceMemory() = default;

  /// Whether the host may read and write device buffers directly (the
  /// simulated devices). When false the executor stages every host access
  /// through copy(), and sends carry buffers by reference (see
  /// docs/cuda-runtime.md).
  virtual bool hostAccessible() const = 0;
  /// Whether device buffers are host memory all the same (the staged
  /// simulation of a GPU): a host-memory transport can then carry them.
  virtual bool hostBacked() const { return hostAccessible(); }
  /// Whether the `_mlir_memref_to_llvm_*` hooks allocate device memory
  /// inside a block call (true for the simulated devices). When false they
  /// hand out host memory and device results come from the backend's own
  /// allocator (mgpuMemAlloc on a GPU, through callScopeAlloc below).
  virtual bool hookAllocsOnDevice() const = 0;

  /// `bytes` (0 allowed) of `device`'s memory, charged to it; over its
  /// capacity: PIPE_RT_OUT_OF_MEMORY naming `what`, the device, the bytes
  /// requested, in use and the capacity.
  virtual int alloc(int device, uint64_t bytes, const char *what, void **out,
                    std::string &error) = 0;
  virtual void free(int device, void *ptr) = 0;
  /// Bytes in use now and the peak since the memory was created.
  virtual void usage(int device, uint64_t *inUse, uint64_t *peak) = 0;
  /// Starts a window and returns the bytes in use; windowPeak is the most
  /// in use since. Allocations of every lane count, so the working memory
  /// of one compute action is exact only while no copy job allocates.
  virtual uint64_t startWindow(int device) = 0;
  virtual uint64_t windowPeak(int device) = 0;

  /// Copies `bytes` between host memory and `device`'s memory, or within
  /// `device` (the direction follows from the pointers).
  virtual int copy(int device, Lane lane, void *dst, const void *src,
                   uint64_t bytes, std::string &error) = 0;
  /// Copies from `srcDevice`'s memory into `device`'s (on `device`'s
  /// compute lane).
  virtual int copyPeer(int device, void *dst, int srcDevice, const void *src,
                       uint64_t bytes, std::string &error) = 0;
  virtual int zero(int device, Lane lane, void *ptr, uint64_t bytes,
                   std::string &error) = 0;
  /// dst[i] += src[i] for `n` f32 (or f64 when `f64`) elements of `device`.
  virtual int add(int device, Lane lane, void *dst, const void *src, bool f64,
                  int64_t n, std::string &error) = 0;
  /// Element conversions within `device`'s memory on `lane`, for the bf16
  /// parameter-server transfers: narrowBf16 writes bf16(src[i]) (2 bytes
  /// each, round to nearest even, NaN -> 0x7fff; the rules of Bf16.h, bit
  /// for bit) for `n` f32 elements at `src`; widenBf16 writes the f32 value
  /// of `n` bf16 elements. Buffers are allocations of this memory (at least
  /// 8-byte aligned) and do not overlap.
  virtual int narrowBf16(int device, Lane lane, void *dst, const void *src,
                         int64_t n, std::string &error) = 0;
  virtual int widenBf16(int device, Lane lane, void *dst, const void *src,
                        int64_t n, std::string &error) = 0;
  /// Dense row-major copy into `dst` (device memory) of a tensor of `shape`
  /// at `src` with element `strides`; `src` may be host or device memory.
  virtual int gather(int device, void *dst, const void *src,
                     const std::vector<int64_t> &shape, const int64_t *strides,
                     size_t elemSize, std::string &error) = 0;

  /// Host memory for offloaded stashes and staging (page-locked on a GPU);
  /// 64-byte aligned; null when out of memory.
  virtual void *allocHost(uint64_t bytes) = 0;
  virtual void freeHost(void *ptr) = 0;
  /// Frees allocHost memory without this object: for memory a session keeps
  /// across runs (the parameter server's bf16 shadows).
  using HostFreeFn = void (*)(void *);
  virtual HostFreeFn hostFreeFunction() const = 0;
  /// Page-locks host memory owned elsewhere (the parameter server's master
  /// copies) for the run; best effort.
  virtual void registerHost(void *, uint64_t) {}
  virtual void unregisterHost(void *) {}

  /// Between beginBatch and endBatch, on the thread that owns `lane` of
  /// `device`, copy, zero, add, narrowBf16 and widenBf16 on that lane may
  /// return before they are done (they stay in order on the lane); endBatch
  /// waits for all of them and returns the first error. Everything they read or
  /// write must stay valid and unchanged until endBatch returns. A backend
  /// whose operations finish when they return ignores both.
  virtual void beginBatch(int, Lane) {}
  virtual int endBatch(int, Lane, std::string &) { return 0; }

  /// Around every block function call on `device`'s thread. endCall waits
  /// for the work the call queued and reports device errors.
  virtual void beginCall(int) {}
  virtual int endCall(int, std::string &) { return 0; }
};

/// Creates the DeviceMemory of each run. `devs` are the run's simulated
/// devices (created with unlimited arenas when the backend keeps its own
/// accounting, see usesArenas()).
class Backend {
public:
  virtual ~Backend() = default;
  virtual const char *name() const = 0;
  /// Whether the memory lives in the arenas of `devs` (then they get the
  /// capacities); else `capacities` are passed to createMemory.
  virtual bool usesArenas() const = 0;
  /// `hostSlots[d]` is device d's place among the devices the processes of
  /// this host run (a GPU backend gives device d the GPU of that place), or
  /// -1 when another process runs it (it never gets memory there); empty:
  /// this process runs every device, device d in place d.
  virtual int createMemory(pipe_rt_devices *devs, int numDevices,
                           const uint64_t *capacities,
                           const std::vector<int> &hostSlots,
                           double watchdogSeconds,
                           std::unique_ptr<DeviceMemory> &out,
                           std::string &error) = 0;
};

/// The default: the arenas of the simulated devices in host memory
/// (stagedBackend() instead when PIPE_RT_BACKEND=staged is set).
std::shared_ptr<Backend> hostBackend();
/// The same arenas used like a device the host cannot address: every access
/// through copies, sends by reference, hook allocations in host memory (the
/// code paths of a GPU backend, testable without a GPU).
std::shared_ptr<Backend> stagedBackend();

//===----------------------------------------------------------------------===//
// The block call running on the calling thread (for backend allocators).
//===----------------------------------------------------------------------===//

/// Device of the block call running on this thread, or -1 outside one.
int callScopeDevice();
/// Allocates device memory for the block call on this thread (charged to its
/// device; adopted when it is a result, freed after the call otherwise).
/// Null over capacity or outside a call; the error is then recorded for the
/// action (see callScopeError).
void *callScopeAlloc(size_t bytes);
/// Frees a callScopeAlloc allocation; false if `ptr` is not one of this
/// call's.
bool callScopeFree(void *ptr);
/// Records an error of the running block call (the first one is kept); the
/// action then fails with `status`.
void callScopeError(int status, const std::string &message);

} // namespace pipe_rt

#endif // PIPE_RUNTIME_BACKEND_H
