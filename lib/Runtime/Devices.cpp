//===- Devices.cpp - Simulated devices, arenas and channels ---------------===//
//
// One mutex and one condition variable guard the whole state: the simulated
// devices exchange few, large messages, so contention is irrelevant and a
// single lock makes matching, the watchdog and the abort trivially race-free.
// The copy into the receiver's buffer happens under the lock, by whichever
// thread completes the match (the sender, or the receiver posting its recv).
//
//===----------------------------------------------------------------------===//

#include "pipe/Runtime/Devices.h"
#include "Format.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace {

using pipe_rt::describeChannelKey;
using pipe_rt::format;

using KeyTuple = std::tuple<int32_t, int32_t, int32_t, int32_t, int32_t>;

KeyTuple toTuple(const pipe_rt_channel_key &k) {
  return KeyTuple(k.kind, k.src_stage, k.dst_stage, k.micro_batch, k.step);
}

struct Transfer {
  bool isSend = false;
  int device = 0;
  pipe_rt_channel_key key{};
  uint64_t bytes = 0;
  std::vector<unsigned char> buffer; // send: the copied data
  void *dst = nullptr;               // recv: destination
  bool done = false;
  int status = PIPE_RT_OK;
};
using TransferPtr = std::shared_ptr<Transfer>;

struct Allocation {
  uint64_t bytes;
  std::string what;
};

struct Device {
  uint64_t capacity = 0, inUse = 0, peak = 0;
  uint64_t windowPeak = 0; // since pipe_rt_device_start_window
  std::unordered_map<void *, Allocation> allocations;
};

constexpr std::align_val_t kAlign{64};

} // namespace

struct pipe_rt_devices {
  std::vector<Device> devices;
  double watchdogSeconds = 0;
  std::mutex mu;
  std::condition_variable cv;
  std::map<KeyTuple, std::deque<TransferPtr>> unmatchedSends, unmatchedRecvs;
  std::unordered_map<pipe_rt_token, TransferPtr> tokens;
  pipe_rt_token nextToken = 1;
  bool aborted = false;
  std::string lastError;

  bool validDevice(int d) const { return d >= 0 && d < int(devices.size()); }

  /// Records an error message (caller holds `mu`) and returns `status`.
  int fail(int status, std::string msg) {
    lastError = std::move(msg);
    return status;
  }

  /// Aborts every pending transfer (caller holds `mu`).
  void abort() {
    aborted = true;
    cv.notify_all();
  }

  /// Completes a matched pair (caller holds `mu`); returns its status.
  int match(Transfer &send, Transfer &recv) {
    int status = PIPE_RT_OK;
    if (send.bytes != recv.bytes) {
      status = fail(PIPE_RT_SIZE_MISMATCH,
                    format("size mismatch on %s: device %d sent %llu bytes, "
                           "device %d receives %llu bytes",
                           describeChannelKey(send.key).c_str(), send.device,
                           (unsigned long long)send.bytes, recv.device,
                           (unsigned long long)recv.bytes));
      abort();
    } else if (send.bytes) {
      std::memcpy(recv.dst, send.buffer.data(), send.bytes);
    }
    send.buffer.clear();
    send.buffer.shrink_to_fit();
    send.done = recv.done = true;
    send.status = recv.status = status;
    cv.notify_all();
    return status;
  }

  /// Posts `t`: matches it with the oldest opposite transfer of its key or
  /// queues it; returns a token (caller holds `mu`).
  int post(TransferPtr t, pipe_rt_token *token) {
    if (aborted)
      return PIPE_RT_ABORTED;
    auto &opposite = t->isSend ? unmatchedRecvs : unmatchedSends;
    auto &mine = t->isSend ? unmatchedSends : unmatchedRecvs;
    KeyTuple k = toTuple(t->key);
    int status = PIPE_RT_OK;
    auto it = opposite.find(k);
    if (it != opposite.end()) {
      TransferPtr other = it->second.front();
      it->second.pop_front();
      if (it->second.empty())
        opposite.erase(it);
      status = t->isSend ? match(*t, *other) : match(*other, *t);
    } else {
      mine[k].push_back(t);
    }
    pipe_rt_token id = nextToken++;
    tokens.emplace(id, std::move(t));
    *token = id;
    return status;
  }

  /// Removes an unfinished transfer from its queue (caller holds `mu`).
  void unqueue(const TransferPtr &t) {
    auto &queues = t->isSend ? unmatchedSends : unmatchedRecvs;
    auto it = queues.find(toTuple(t->key));
    if (it == queues.end())
      return;
    for (auto q = it->second.begin(); q != it->second.end(); ++q)
      if (*q == t) {
        it->second.erase(q);
        break;
      }
    if (it->second.empty())
      queues.erase(it);
  }
};

/// Runs `fn` on `device`'s counters under the lock; PIPE_RT_INVALID_ARGUMENT
/// for a null `devs` or a device out of range.
template <typename Fn>
static int withDevice(pipe_rt_devices *devs, int device, Fn fn) {
  if (!devs)
    return PIPE_RT_INVALID_ARGUMENT;
  std::lock_guard<std::mutex> lock(devs->mu);
  if (!devs->validDevice(device))
    return PIPE_RT_INVALID_ARGUMENT;
  fn(devs->devices[device]);
  return PIPE_RT_OK;
}

extern "C" {

pipe_rt_devices *pipe_rt_devices_create(int numDevices,
                                        const uint64_t *capacityBytes,
                                        double watchdogSeconds) {
  if (numDevices < 1 || !capacityBytes || !(watchdogSeconds > 0))
    return nullptr;
  auto *devs = new (std::nothrow) pipe_rt_devices();
  if (!devs)
    return nullptr;
  devs->devices.resize(numDevices);
  for (int d = 0; d < numDevices; ++d)
    devs->devices[d].capacity = capacityBytes[d];
  devs->watchdogSeconds = watchdogSeconds;
  return devs;
}

void pipe_rt_devices_destroy(pipe_rt_devices *devs) {
  if (!devs)
    return;
  for (Device &dev : devs->devices)
    for (auto &a : dev.allocations)
      ::operator delete(a.first, kAlign);
  delete devs;
}

int pipe_rt_devices_count(const pipe_rt_devices *devs) {
  return devs ? int(devs->devices.size()) : 0;
}

const char *pipe_rt_last_error(pipe_rt_devices *devs) {
  if (!devs)
    return "";
  std::lock_guard<std::mutex> lock(devs->mu);
  return devs->lastError.c_str();
}

int pipe_rt_alloc(pipe_rt_devices *devs, int device, uint64_t bytes,
                  const char *what, void **out) {
  if (!devs || !out)
    return PIPE_RT_INVALID_ARGUMENT;
  *out = nullptr;
  std::lock_guard<std::mutex> lock(devs->mu);
  if (!devs->validDevice(device))
    return devs->fail(PIPE_RT_INVALID_ARGUMENT,
                      format("pipe_rt_alloc: no device %d", device));
  Device &dev = devs->devices[device];
  const char *label = what ? what : "(unnamed)";
  if (bytes > dev.capacity - dev.inUse)
    return devs->fail(
        PIPE_RT_OUT_OF_MEMORY,
        format("device %d: allocation '%s' of %llu bytes exceeds the arena: "
               "%llu of %llu bytes in use",
               device, label, (unsigned long long)bytes,
               (unsigned long long)dev.inUse,
               (unsigned long long)dev.capacity));
  void *p = ::operator new(size_t(bytes ? bytes : 1), kAlign, std::nothrow);
  if (!p)
    return devs->fail(PIPE_RT_OUT_OF_MEMORY,
                      format("device %d: allocation '%s' of %llu bytes: the "
                             "host is out of memory",
                             device, label, (unsigned long long)bytes));
  dev.allocations.emplace(p, Allocation{bytes, label});
  dev.inUse += bytes;
  dev.peak = std::max(dev.peak, dev.inUse);
  dev.windowPeak = std::max(dev.windowPeak, dev.inUse);
  *out = p;
  return PIPE_RT_OK;
}

int pipe_rt_free(pipe_rt_devices *devs, int device, void *ptr) {
  if (!devs)
    return PIPE_RT_INVALID_ARGUMENT;
  std::lock_guard<std::mutex> lock(devs->mu);
  if (!devs->validDevice(device))
    return devs->fail(PIPE_RT_INVALID_ARGUMENT,
                      format("pipe_rt_free: no device %d", device));
  if (!ptr)
    return PIPE_RT_OK;
  Device &dev = devs->devices[device];
  auto it = dev.allocations.find(ptr);
  if (it == dev.allocations.end())
    return devs->fail(PIPE_RT_INVALID_ARGUMENT,
                      format("device %d: pipe_rt_free of a pointer not "
                             "allocated on this device",
                             device));
  dev.inUse -= it->second.bytes;
  dev.allocations.erase(it);
  ::operator delete(ptr, kAlign);
  return PIPE_RT_OK;
}

int pipe_rt_device_memory(pipe_rt_devices *devs, int device, uint64_t *inUse,
                          uint64_t *peak) {
  return withDevice(devs, device, [&](Device &dev) {
    if (inUse)
      *inUse = dev.inUse;
    if (peak)
      *peak = dev.peak;
  });
}

int pipe_rt_device_start_window(pipe_rt_devices *devs, int device,
                                uint64_t *inUse) {
  return withDevice(devs, device, [&](Device &dev) {
    dev.windowPeak = dev.inUse;
    if (inUse)
      *inUse = dev.inUse;
  });
}

int pipe_rt_device_window_peak(pipe_rt_devices *devs, int device,
                               uint64_t *peak) {
  return withDevice(devs, device, [&](Device &dev) {
    if (peak)
      *peak = dev.windowPeak;
  });
}

int pipe_rt_send(pipe_rt_devices *devs, int device,
                 const pipe_rt_channel_key *key, const void *data,
                 uint64_t bytes, pipe_rt_token *token) {
  if (!devs || !key || !token || (bytes && !data))
    return PIPE_RT_INVALID_ARGUMENT;
  *token = 0;
  auto t = std::make_shared<Transfer>();
  t->isSend = true;
  t->device = device;
  t->key = *key;
  t->bytes = bytes;
  // Copy outside the lock: the buffer is private until posted.
  if (bytes) {
    const auto *src = static_cast<const unsigned char *>(data);
    t->buffer.assign(src, src + bytes);
  }
  std::lock_guard<std::mutex> lock(devs->mu);
  if (!devs->validDevice(device))
    return devs->fail(PIPE_RT_INVALID_ARGUMENT,
                      format("pipe_rt_send: no device %d", device));
  return devs->post(std::move(t), token);
}

int pipe_rt_recv(pipe_rt_devices *devs, int device,
                 const pipe_rt_channel_key *key, void *dst, uint64_t bytes,
                 pipe_rt_token *token) {
  if (!devs || !key || !token || (bytes && !dst))
    return PIPE_RT_INVALID_ARGUMENT;
  *token = 0;
  auto t = std::make_shared<Transfer>();
  t->device = device;
  t->key = *key;
  t->bytes = bytes;
  t->dst = dst;
  std::lock_guard<std::mutex> lock(devs->mu);
  if (!devs->validDevice(device))
    return devs->fail(PIPE_RT_INVALID_ARGUMENT,
                      format("pipe_rt_recv: no device %d", device));
  return devs->post(std::move(t), token);
}

int pipe_rt_wait(pipe_rt_devices *devs, int device, pipe_rt_token token) {
  if (!devs)
    return PIPE_RT_INVALID_ARGUMENT;
  std::unique_lock<std::mutex> lock(devs->mu);
  auto it = devs->tokens.find(token);
  if (it == devs->tokens.end() || it->second->device != device)
    return devs->fail(PIPE_RT_INVALID_ARGUMENT,
                      format("device %d: pipe_rt_wait of unknown token %llu",
                             device, (unsigned long long)token));
  TransferPtr t = it->second;
  devs->tokens.erase(it);
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration<double>(devs->watchdogSeconds);
  devs->cv.wait_until(lock, deadline, [&] { return t->done || devs->aborted; });
  if (t->done)
    return t->status;
  devs->unqueue(t);
  std::string action =
      format("device %d: %s %s", device, t->isSend ? "send" : "recv",
             describeChannelKey(t->key).c_str());
  if (devs->aborted)
    return PIPE_RT_ABORTED; // keep the message of the error that aborted
  int status =
      devs->fail(PIPE_RT_TIMEOUT,
                 format("%s did not match a %s within %g s", action.c_str(),
                        t->isSend ? "recv" : "send", devs->watchdogSeconds));
  devs->abort();
  return status;
}

int pipe_rt_run_devices(pipe_rt_devices *devs, pipe_rt_device_fn fn,
                        void *userData) {
  if (!devs || !fn)
    return PIPE_RT_INVALID_ARGUMENT;
  std::mutex firstMu;
  int first = PIPE_RT_OK;
  std::vector<std::thread> threads;
  threads.reserve(devs->devices.size());
  for (int d = 0, e = int(devs->devices.size()); d < e; ++d)
    threads.emplace_back([&, d] {
      int status = fn(d, userData);
      if (status == PIPE_RT_OK)
        return;
      {
        std::lock_guard<std::mutex> lock(firstMu);
        // An abort is a consequence of another device's error: report that
        // one even if the aborted device got here first.
        if (first == PIPE_RT_OK ||
            (first == PIPE_RT_ABORTED && status != PIPE_RT_ABORTED))
          first = status;
      }
      // A failed device will not post its remaining transfers: release the
      // others now instead of letting each wait for the watchdog.
      std::lock_guard<std::mutex> lock(devs->mu);
      devs->abort();
    });
  for (std::thread &t : threads)
    t.join();
  return first;
}

} // extern "C"
