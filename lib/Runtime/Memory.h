//===- Memory.h - The memory room of a run ----------------------*- C++ -*-===//
//
// Private to the runtime. The room that owns the memory of a run: its
// DeviceMemory (Backend.h), the buffers allocated from it, the copy
// counters per device and lane (pipe_rt_session_copy_bytes), and the call
// scopes through which the allocation hooks of lowered block code charge a
// block call's allocations to its device. Run-time memory limits belong
// here.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_RUNTIME_MEMORY_H
#define PIPE_RUNTIME_MEMORY_H

#include "Backend.h"

#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace pipe_rt {

/// Storage of one tensor: in a device's memory (device >= 0) or in host
/// memory from DeviceMemory::allocHost (device == -1, e.g. offloaded
/// activations).
struct Buffer {
  DeviceMemory *memory = nullptr;
  int device = -1;
  void *data = nullptr; // what is freed; 64-byte aligned
  uint64_t bytes = 0;
  bool owned = true; // false: memory kept elsewhere (the session's shadows)
  ~Buffer();
};
using BufferPtr = std::shared_ptr<Buffer>;

/// The memory of one run. Every copy of the executor goes through copy /
/// copyPeer, which count the bytes per device and lane (atomics: the device
/// threads and copy jobs count concurrently). `->` reaches the backend's
/// other operations (zero, add, bf16 conversions, batches, host memory).
class RunMemory {
public:
  /// Creates the backend's memory for `numDevices` devices (`hostSlots`: as
  /// Backend::createMemory takes them).
  int create(Backend &backend, pipe_rt_devices *devs, int numDevices,
             const uint64_t *capacities, const std::vector<int> &hostSlots,
             double watchdogSeconds, std::string &error);
  /// Frees the backend's memory; every buffer must be gone.
  void release() { memory.reset(); }
  DeviceMemory *operator->() const { return memory.get(); }
  DeviceMemory &backend() const { return *memory; }

  /// Allocates `bytes` in device `d`'s memory (or host memory when d < 0).
  int alloc(int d, uint64_t bytes, const char *what, BufferPtr &out,
            std::string &error);
  /// A buffer owning `data`, memory of device `d` allocated elsewhere (a
  /// block call's result); `owned` false: freed by its owner.
  BufferPtr adopt(int d, void *data, uint64_t bytes, bool owned = true);

  /// DeviceMemory::copy / copyPeer (on the compute lane), counted.
  int copy(int device, Lane lane, void *dst, const void *src, uint64_t bytes,
           std::string &error);
  int copyPeer(int device, void *dst, int srcDevice, const void *src,
               uint64_t bytes, std::string &error);
  /// Copies host bytes into a device buffer (or the reverse) on `lane`.
  int toDevice(Lane lane, Buffer &dst, const void *src, uint64_t bytes,
               std::string &error);
  int toHost(Lane lane, void *dst, const Buffer &src, uint64_t bytes,
             std::string &error);
  /// The bytes of a buffer as host memory: the buffer itself when the host
  /// can read it, else a copy in `staging`.
  const unsigned char *hostView(Lane lane, const Buffer &b,
                                std::vector<unsigned char> &staging,
                                std::string &error, int &status);
  /// Reads a buffer's bytes into host memory, or writes host bytes into a
  /// buffer: directly when the host can address it, else a copy on `lane`.
  int hostRead(Lane lane, void *dst, const Buffer &src, uint64_t bytes,
               std::string &error);
  int hostWrite(Lane lane, Buffer &dst, const void *src, uint64_t bytes,
                std::string &error);
  /// Bytes copied so far by `device` on `lane`.
  uint64_t copied(int device, Lane lane) const;

private:
  std::unique_ptr<DeviceMemory> memory;
  int numDevices = 0;
  std::unique_ptr<std::atomic<uint64_t>[]> laneBytes; // device * 3 + lane
};

/// The allocation hooks' access to call scopes (Memory.cpp).
struct CallScopeAccess;

/// The block call running on this thread, between enter() and leave(): the
/// allocation hooks charge its allocations to `device` and remember them,
/// so that results the block allocated can be adopted; what it left behind
/// is freed when the scope goes. The first error of the call (an arena
/// overflow in a hook, an index fault, callScopeError) is kept for its
/// action.
class CallScope {
public:
  CallScope(DeviceMemory &memory, int device, const std::string &what)
      : memory(memory), device(device), what(what) {}
  ~CallScope();
  CallScope(const CallScope &) = delete;
  CallScope &operator=(const CallScope &) = delete;
  void enter();
  void leave();
  /// Takes `ptr` out of the call's device allocations (a result the runtime
  /// keeps); false if it is not one of them.
  bool adopt(void *ptr) { return allocs.erase(ptr) != 0; }
  const std::string &error() const { return firstError; }
  int errorStatus() const { return firstStatus; }

private:
  friend struct CallScopeAccess;
  void record(int status, const std::string &message);
  DeviceMemory &memory;
  int device;
  const std::string &what;
  std::set<void *> allocs;     // device memory
  std::set<void *> hostAllocs; // host memory from the hooks
  std::string firstError;
  int firstStatus = PIPE_RT_OUT_OF_MEMORY;
};

} // namespace pipe_rt

#endif // PIPE_RUNTIME_MEMORY_H
