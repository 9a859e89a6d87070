//===- NcclTransport.cpp - Transfers between ranks' GPUs over NCCL --------===//
//
// NCCL matches the messages of a communicator by their order only. Each
// directed link (sending device, receiving device; Transport::Link) gets a
// communicator of its own: two NCCL ranks, the sender 0 and the receiver 1,
// each side with a stream of its own, so that a link's messages never wait
// behind another link's and the two directions of a device pair never
// interleave on one communicator. The programs issue each link's transfers
// in the same order on both sides (peer-order, checked by attachTransport
// through matchesTransfersByOrder). The sending rank makes the link's
// unique id, broadcast over the bootstrap transport in the links' global
// order; both sides then create the communicator in that order, so that
// the pairwise rendezvous of ncclCommInitRank never waits in a cycle.
//
// A transfer is an ncclSend or ncclRecv of device memory on the link's
// stream followed by an event; test() polls the event and the
// communicator's asynchronous error, so the runtime's watchdog (which names
// the stuck peer rank) covers it. The runtime hands over device buffers
// that are ready (its packing copy waited) and keeps them until the wait.
// abortJob aborts every communicator before the bootstrap ends the job.
//
// Everything but the transfers (agreements, gradient meetings and buckets)
// goes through the bootstrap, as host memory.
//
//===----------------------------------------------------------------------===//

#include "pipe/Runtime/NcclTransport.h"

#include "Driver.h"

#include "pipe/Runtime/Status.h"

#ifdef PIPE_RT_HAVE_NCCL
#include "../Backend.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <nccl.h>
#include <vector>
#endif

using namespace pipe_rt;
using namespace pipe_rt::cuda;

#ifndef PIPE_RT_HAVE_NCCL

std::shared_ptr<Transport>
pipe_rt::createNcclTransport(pipe_rt_session *, std::shared_ptr<Transport>,
                             std::string &error) {
  NcclCopies::built(error);
  return nullptr;
}

#else

namespace {

std::string ncclFailure(const char *call, ncclResult_t r) {
  return std::string(call) + ": " + ncclGetErrorString(r);
}

class NcclTransport final : public Transport {
public:
  NcclTransport(pipe_rt_session *session, std::shared_ptr<Transport> bootstrap)
      : session(session), bootstrap(std::move(bootstrap)) {}

  ~NcclTransport() override {
    for (auto &[request, p] : posted)
      cuEventDestroy(p.event);
    for (auto &[tag, link] : links) {
      if (ncclComm_t comm = link.comm.load())
        ncclCommDestroy(comm);
      if (link.stream) {
        makeCurrent(*link.gpu);
        cuStreamDestroy(link.stream);
      }
    }
  }

  const char *name() const override { return "NCCL"; }
  int rank() const override { return bootstrap->rank(); }
  int size() const override { return bootstrap->size(); }
  int localRank() const override { return bootstrap->localRank(); }
  int maxTag() const override { return bootstrap->maxTag(); }
  bool matchesTransfersByOrder() const override { return true; }
  bool carriesDeviceMemory(const DeviceMemory &memory) const override {
    return !memory.hostBacked();
  }

  int connect(const std::vector<Link> &all, const std::vector<int> &placeOnHost,
              std::string &error) override {
    devices = int(placeOnHost.size());
    // Every link's id first (collective), then this rank's communicators
    // in the links' order.
    std::vector<ncclUniqueId> ids(all.size());
    for (size_t i = 0; i < all.size(); ++i) {
      if (all[i].fromRank == rank())
        if (ncclResult_t r = ncclGetUniqueId(&ids[i])) {
          error = ncclFailure("ncclGetUniqueId", r);
          return PIPE_RT_DEVICE_ERROR;
        }
      if (int st = agreeOn(*this, all[i].fromRank, &ids[i], sizeof(ids[i]),
                           "the NCCL unique ids", error))
        return st;
    }
    std::map<int, int> ordinals; // this rank's devices with links -> GPU
    for (size_t i = 0; i < all.size(); ++i) {
      const Link &l = all[i];
      bool sending = l.fromRank == rank(), receiving = l.toRank == rank();
      if (!sending && !receiving)
        continue;
      int device = sending ? l.fromDevice : l.toDevice;
      int ordinal = gpuOrdinalOf(session, placeOnHost[size_t(device)]);
      Gpu *g = ordinal >= 0 ? gpu(ordinal, error) : nullptr;
      if (!g) {
        error = format("device %d: ", device) +
                (ordinal < 0 ? std::string("the session does not run on GPUs")
                             : error);
        return PIPE_RT_DEVICE_ERROR;
      }
      // A communicator is used by one thread at a time (NCCL's rule), and
      // a device's links by that device's thread only.
      for (const auto &[other, used] : ordinals)
        if (other != device && used == ordinal) {
          error = format("devices %d and %d are both on GPU %d: NCCL between "
                         "processes needs a GPU of its own for each device "
                         "of a rank (--gpu-map)",
                         other, device, ordinal);
          return PIPE_RT_INVALID_ARGUMENT;
        }
      ordinals[device] = ordinal;
      LinkState &link =
          links[transferLinkTag(l.fromDevice, l.toDevice, devices)];
      link.gpu = g;
      link.peerRank = sending ? l.toRank : l.fromRank;
      link.sending = sending;
      std::string where =
          format("device %d (GPU %d), link %d -> %d with rank %d", device,
                 ordinal, l.fromDevice, l.toDevice, link.peerRank);
      makeCurrent(*g);
      if (CUresult r = cuStreamCreate(&link.stream, CU_STREAM_NON_BLOCKING)) {
        error = where + ": " + driverError("cuStreamCreate", r);
        return PIPE_RT_DEVICE_ERROR;
      }
      // Blocking calls, whatever NCCL_COMM_BLOCKING says.
      ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
      config.blocking = 1;
      ncclComm_t comm = nullptr;
      if (ncclResult_t r = ncclCommInitRankConfig(&comm, 2, ids[i],
                                                  sending ? 0 : 1, &config)) {
        error = where + ": " + ncclFailure("ncclCommInitRankConfig", r);
        return PIPE_RT_DEVICE_ERROR;
      }
      link.comm = comm;
      // NCCL connects a pair at its first send/recv, which blocks the
      // caller until the peer posts: do that here, in the links' order, so
      // that no device thread blocks in a post later.
      if (int st = warmUp(link, where, error))
        return st;
    }
    return PIPE_RT_OK;
  }

  int isend(Channel channel, int peer, int tag, const void *data,
            uint64_t bytes, uint64_t &request, std::string &error) override {
    if (channel != Channel::Transfers)
      return bootstrap->isend(channel, peer, tag, data, bytes, request, error);
    LinkState *link = linkOf(true, peer, tag, error);
    return link ? post(*link, const_cast<void *>(data), bytes, request, error)
                : int(PIPE_RT_INVALID_ARGUMENT);
  }
  int irecv(Channel channel, int peer, int tag, void *data, uint64_t bytes,
            uint64_t &request, std::string &error) override {
    if (channel != Channel::Transfers)
      return bootstrap->irecv(channel, peer, tag, data, bytes, request, error);
    LinkState *link = linkOf(false, peer, tag, error);
    return link ? post(*link, data, bytes, request, error)
                : int(PIPE_RT_INVALID_ARGUMENT);
  }

  int test(uint64_t request, bool &done, std::string &error) override {
    if (!(request & kOwn))
      return bootstrap->test(request, done, error);
    std::unique_lock<std::mutex> lock(mu);
    auto it = posted.find(request);
    if (it == posted.end()) {
      error = "NCCL: unknown request";
      return PIPE_RT_INVALID_ARGUMENT;
    }
    Posted p = it->second;
    lock.unlock();
    makeCurrent(*p.link->gpu);
    CUresult r = cuEventQuery(p.event);
    ncclComm_t comm = p.link->comm.load();
    ncclResult_t async = ncclSuccess;
    if (comm)
      ncclCommGetAsyncError(comm, &async);
    done = r == CUDA_SUCCESS;
    int status = PIPE_RT_OK;
    if (r != CUDA_SUCCESS && r != CUDA_ERROR_NOT_READY) {
      error = describe(p) + ": " + driverError("cuEventQuery", r);
      status = PIPE_RT_DEVICE_ERROR;
    } else if (!done && !comm) {
      error = describe(p) + ": the communicator was aborted";
      status = PIPE_RT_ABORTED;
    } else if (!done && async != ncclSuccess && async != ncclInProgress) {
      error = describe(p) + ": " + ncclGetErrorString(async);
      status = PIPE_RT_DEVICE_ERROR;
    }
    if (done || status != PIPE_RT_OK) {
      cuEventDestroy(p.event);
      lock.lock();
      posted.erase(request);
    }
    if (status == PIPE_RT_DEVICE_ERROR)
      abortTransfers();
    return status;
  }

  bool abortTransfers() override {
    for (auto &[tag, link] : links)
      if (ncclComm_t comm = link.comm.exchange(nullptr))
        ncclCommAbort(comm);
    return bootstrap->abortTransfers();
  }

  [[noreturn]] void abortJob(int exitCode) override {
    abortTransfers();
    bootstrap->abortJob(exitCode);
    std::_Exit(exitCode); // not reached: the bootstrap's never returns
  }

private:
  struct LinkState {
    Gpu *gpu = nullptr;
    CUstream stream = nullptr;
    /// Null once aborted (by any thread).
    std::atomic<ncclComm_t> comm{nullptr};
    int peerRank = -1;
    bool sending = false;
  };
  struct Posted {
    LinkState *link = nullptr;
    CUevent event = nullptr;
    uint64_t bytes = 0;
  };
  /// Requests of this transport (the bootstrap's stay below it).
  static constexpr uint64_t kOwn = uint64_t(1) << 63;

  std::string describe(const Posted &p) const {
    return format("NCCL %s of %llu bytes %s rank %d",
                  p.link->sending ? "send" : "recv",
                  (unsigned long long)p.bytes, p.link->sending ? "to" : "from",
                  p.link->peerRank);
  }

  /// The link a transfer of `tag` with `peer` goes over, or null with
  /// `error`.
  LinkState *linkOf(bool sending, int peer, int tag, std::string &error) {
    auto it = links.find(tag);
    if (it != links.end() && it->second.sending == sending &&
        it->second.peerRank == peer)
      return &it->second;
    int from = 0, to = 0;
    transferLinkOfTag(tag, std::max(devices, 1), from, to);
    error = format("NCCL: no communicator for the %s of device %d -> %d "
                   "with rank %d (not among the program's links)",
                   sending ? "send" : "recv", from, to, peer);
    return nullptr;
  }

  /// An ncclSend or ncclRecv of `bytes` at `data` (device memory of the
  /// link's GPU) on the link's stream, and the event that completes it.
  int post(LinkState &link, void *data, uint64_t bytes, uint64_t &request,
           std::string &error) {
    ncclComm_t comm = link.comm.load();
    if (!comm) {
      error = "NCCL: the communicator was aborted by an earlier error";
      return PIPE_RT_ABORTED;
    }
    makeCurrent(*link.gpu);
    ncclResult_t r =
        link.sending ? ncclSend(data, bytes, ncclUint8, 1, comm, link.stream)
                     : ncclRecv(data, bytes, ncclUint8, 0, comm, link.stream);
    if (r != ncclSuccess) {
      error = ncclFailure(link.sending ? "ncclSend" : "ncclRecv", r);
      return PIPE_RT_DEVICE_ERROR;
    }
    Posted p{&link, nullptr, bytes};
    if (CUresult e = cuEventCreate(&p.event, CU_EVENT_DISABLE_TIMING))
      return error = driverError("cuEventCreate", e), PIPE_RT_DEVICE_ERROR;
    if (CUresult e = cuEventRecord(p.event, link.stream)) {
      cuEventDestroy(p.event);
      return error = driverError("cuEventRecord", e), PIPE_RT_DEVICE_ERROR;
    }
    std::lock_guard<std::mutex> lock(mu);
    request = kOwn | next++;
    posted.emplace(request, p);
    return PIPE_RT_OK;
  }

  /// One byte over `link`, waited for under the watchdog (naming the
  /// peer).
  int warmUp(LinkState &link, const std::string &where, std::string &error) {
    void *byte = nullptr;
    if (link.gpu->pool->alloc(1, &byte, error) != CUDA_SUCCESS) {
      error = where + ": " + error;
      return PIPE_RT_OUT_OF_MEMORY;
    }
    uint64_t request = 0;
    int st = post(link, byte, 1, request, error);
    auto start = std::chrono::steady_clock::now();
    while (st == PIPE_RT_OK) {
      bool done = false;
      st = test(request, done, error);
      if (done || st != PIPE_RT_OK)
        break;
      if (std::chrono::steady_clock::now() - start >
          std::chrono::duration<double>(watchdogSeconds)) {
        error = format("rank %d did not connect within %g s: is rank %d "
                       "stuck?",
                       link.peerRank, watchdogSeconds, link.peerRank);
        st = PIPE_RT_TIMEOUT;
      }
    }
    if (st != PIPE_RT_OK) {
      error = where + ": " + error;
      abortTransfers(); // the byte stays allocated: NCCL may still write it
      return st;
    }
    link.gpu->pool->release(byte);
    return PIPE_RT_OK;
  }

  pipe_rt_session *session;
  std::shared_ptr<Transport> bootstrap;
  int devices = 0;
  /// By link tag; made by connect, then only read (each link's side is
  /// used by one device thread).
  std::map<int, LinkState> links;
  std::mutex mu;
  std::map<uint64_t, Posted> posted;
  uint64_t next = 1;
};

} // namespace

std::shared_ptr<Transport>
pipe_rt::createNcclTransport(pipe_rt_session *session,
                             std::shared_ptr<Transport> bootstrap,
                             std::string &error) {
  if (gpuOrdinalOf(session, 0) < 0) {
    error = "the NCCL transport needs a session on GPUs "
            "(pipe_rt_cuda_session_enable)";
    return nullptr;
  }
  return std::make_shared<NcclTransport>(session, std::move(bootstrap));
}

#endif
