//===- Memory.cpp - The memory room of a run ------------------------------===//
//
// Buffers, counted copies and the allocation hooks of lowered block code
// (`_mlir_memref_to_llvm_*`, pipe_rt_index_fault) with their call scopes.
//
//===----------------------------------------------------------------------===//

#include "Memory.h"

#include "Format.h"

#include "pipe/Runtime/Program.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <new>
#include <unordered_map>

using namespace pipe_rt;

Buffer::~Buffer() {
  if (!data || !owned)
    return;
  if (device >= 0)
    memory->free(device, data);
  else
    memory->freeHost(data);
}

//===----------------------------------------------------------------------===//
// RunMemory
//===----------------------------------------------------------------------===//

int RunMemory::create(Backend &b, pipe_rt_devices *devs, int n,
                      const uint64_t *capacities,
                      const std::vector<int> &hostSlots, double watchdogSeconds,
                      std::string &error) {
  if (int st = b.createMemory(devs, n, capacities, hostSlots, watchdogSeconds,
                              memory, error))
    return st;
  numDevices = n;
  laneBytes.reset(new std::atomic<uint64_t>[size_t(n) * 3]);
  for (size_t i = 0; i < size_t(n) * 3; ++i)
    laneBytes[i].store(0, std::memory_order_relaxed);
  return PIPE_RT_OK;
}

int RunMemory::alloc(int d, uint64_t bytes, const char *what, BufferPtr &out,
                     std::string &error) {
  auto b = std::make_shared<Buffer>();
  b->memory = memory.get();
  b->bytes = bytes;
  if (d < 0) {
    b->data = memory->allocHost(bytes);
    if (!b->data) {
      error = format("%s: host out of memory (%llu bytes)", what,
                     (unsigned long long)bytes);
      return PIPE_RT_OUT_OF_MEMORY;
    }
  } else {
    int st = memory->alloc(d, bytes, what, &b->data, error);
    if (st != PIPE_RT_OK)
      return st;
    b->device = d;
  }
  out = std::move(b);
  return PIPE_RT_OK;
}

BufferPtr RunMemory::adopt(int d, void *data, uint64_t bytes, bool owned) {
  auto b = std::make_shared<Buffer>();
  b->memory = memory.get();
  b->device = d;
  b->data = data;
  b->bytes = bytes;
  b->owned = owned;
  return b;
}

int RunMemory::copy(int device, Lane lane, void *dst, const void *src,
                    uint64_t bytes, std::string &error) {
  int st = memory->copy(device, lane, dst, src, bytes, error);
  if (st == PIPE_RT_OK)
    laneBytes[size_t(device) * 3 + size_t(lane)].fetch_add(
        bytes, std::memory_order_relaxed);
  return st;
}

int RunMemory::copyPeer(int device, void *dst, int srcDevice, const void *src,
                        uint64_t bytes, std::string &error) {
  int st = memory->copyPeer(device, dst, srcDevice, src, bytes, error);
  if (st == PIPE_RT_OK)
    laneBytes[size_t(device) * 3 + size_t(Lane::Compute)].fetch_add(
        bytes, std::memory_order_relaxed);
  return st;
}

int RunMemory::toDevice(Lane lane, Buffer &dst, const void *src, uint64_t bytes,
                        std::string &error) {
  return copy(dst.device, lane, dst.data, src, bytes, error);
}

int RunMemory::toHost(Lane lane, void *dst, const Buffer &src, uint64_t bytes,
                      std::string &error) {
  return copy(src.device, lane, dst, src.data, bytes, error);
}

const unsigned char *RunMemory::hostView(Lane lane, const Buffer &b,
                                         std::vector<unsigned char> &staging,
                                         std::string &error, int &status) {
  status = PIPE_RT_OK;
  if (b.device < 0 || memory->hostAccessible())
    return static_cast<const unsigned char *>(b.data);
  staging.resize(b.bytes);
  status = toHost(lane, staging.data(), b, b.bytes, error);
  return staging.data();
}

int RunMemory::hostRead(Lane lane, void *dst, const Buffer &src, uint64_t bytes,
                        std::string &error) {
  if (src.device < 0 || memory->hostAccessible()) {
    std::memcpy(dst, src.data, bytes);
    return PIPE_RT_OK;
  }
  return toHost(lane, dst, src, bytes, error);
}

int RunMemory::hostWrite(Lane lane, Buffer &dst, const void *src,
                         uint64_t bytes, std::string &error) {
  if (dst.device < 0 || memory->hostAccessible()) {
    std::memcpy(dst.data, src, bytes);
    return PIPE_RT_OK;
  }
  return toDevice(lane, dst, src, bytes, error);
}

uint64_t RunMemory::copied(int device, Lane lane) const {
  if (!laneBytes || device < 0 || device >= numDevices)
    return 0;
  return laneBytes[size_t(device) * 3 + size_t(lane)].load(
      std::memory_order_relaxed);
}

//===----------------------------------------------------------------------===//
// Allocation hooks and call scopes
//===----------------------------------------------------------------------===//

namespace {

thread_local CallScope *tlsScope = nullptr;

/// Host allocations made by the hooks (outside any block call, as a
/// stand-in after an arena overflow, or always on a backend whose hooks
/// allocate host memory): pointer -> alignment. Process-wide, as the hooks
/// are.
std::mutex hookHostMu;
std::unordered_map<void *, size_t> hookHostAllocs;

} // namespace

/// The hooks' access to the scope of the calling thread.
struct pipe_rt::CallScopeAccess {
  static void *alloc(size_t bytes, size_t alignment) {
    CallScope *scope = tlsScope;
    if (scope && scope->memory.hookAllocsOnDevice()) {
      void *p = nullptr;
      if (alignment <= 64) {
        std::string error;
        int st = scope->memory.alloc(scope->device, bytes, scope->what.c_str(),
                                     &p, error);
        if (st == PIPE_RT_OK) {
          scope->allocs.insert(p);
          return p;
        }
        // The hook cannot fail: record the error for the action and hand
        // out host memory so the block function can finish.
        scope->record(st, error);
      } else {
        scope->record(PIPE_RT_OUT_OF_MEMORY,
                      format("%s: alignment %zu unsupported",
                             scope->what.c_str(), alignment));
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

  static void free(void *p) {
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
        scope->memory.free(scope->device, p);
    }
    // Otherwise: an arena pointer freed outside a block call, which
    // generated code never does; the arena frees it with the run.
  }

  static void *scopeAlloc(size_t bytes) {
    CallScope *scope = tlsScope;
    if (!scope)
      return nullptr;
    void *p = nullptr;
    std::string error;
    int st = scope->memory.alloc(scope->device, bytes, scope->what.c_str(), &p,
                                 error);
    if (st != PIPE_RT_OK) {
      scope->record(st, error);
      return nullptr;
    }
    scope->allocs.insert(p);
    return p;
  }

  static bool scopeFree(void *ptr) {
    CallScope *scope = tlsScope;
    if (!scope || !scope->allocs.erase(ptr))
      return false;
    scope->memory.free(scope->device, ptr);
    return true;
  }

  static void error(int status, const std::string &message, bool prefix) {
    if (CallScope *scope = tlsScope)
      scope->record(status, prefix ? scope->what + ": " + message : message);
  }

  static int device() { return tlsScope ? tlsScope->device : -1; }
};

void CallScope::enter() { tlsScope = this; }
void CallScope::leave() { tlsScope = nullptr; }

CallScope::~CallScope() {
  // Temporaries the block did not free (and results it aliased).
  for (void *p : allocs)
    memory.free(device, p);
  for (void *p : std::set<void *>(hostAllocs))
    CallScopeAccess::free(p);
}

void CallScope::record(int status, const std::string &message) {
  if (firstError.empty()) {
    firstError = message;
    firstStatus = status;
  }
}

extern "C" {
void *_mlir_memref_to_llvm_alloc(size_t bytes) {
  return CallScopeAccess::alloc(bytes, 16);
}
void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t bytes) {
  return CallScopeAccess::alloc(bytes, alignment);
}
void _mlir_memref_to_llvm_free(void *ptr) { CallScopeAccess::free(ptr); }

void pipe_rt_index_fault(const char *site, int64_t index, int64_t bound) {
  // The block goes on with a clamped index; its action then fails with the
  // first fault.
  CallScopeAccess::error(PIPE_RT_INVALID_ARGUMENT,
                         format("%s: index %lld is outside [0, %lld)", site,
                                (long long)index, (long long)bound),
                         /*prefix=*/false);
}
}

int pipe_rt::callScopeDevice() { return CallScopeAccess::device(); }

void *pipe_rt::callScopeAlloc(size_t bytes) {
  return CallScopeAccess::scopeAlloc(bytes);
}

bool pipe_rt::callScopeFree(void *ptr) {
  return CallScopeAccess::scopeFree(ptr);
}

void pipe_rt::callScopeError(int status, const std::string &message) {
  CallScopeAccess::error(status, message, /*prefix=*/true);
}
