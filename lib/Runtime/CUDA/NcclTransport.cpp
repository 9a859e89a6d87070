//===- NcclTransport.cpp - Transfers between ranks' GPUs over NCCL --------===//
//
// NCCL matches the messages of a communicator by their order only. Each
// directed link (sending device, receiving device; Transport::Link) gets a
// communicator of its own: two NCCL ranks, the sender 0 and the receiver 1,
// each side with a stream of its own, so that a link's messages never wait
// behind another link's and the two directions of a device pair never
// interleave on one communicator. The programs issue each link's transfers
// in the same order on both sides (peer-order, checked by attachTransport
// through matchesTransfersByOrder). The links' communicators are made in
// the links' global order on every rank, so that their pairwise rendezvous
// never waits in a cycle.
//
// A transfer is an ncclSend or ncclRecv of device memory on the link's
// stream followed by an event; test() polls the event and the
// communicator's asynchronous error, so the runtime's watchdog (which names
// the stuck peer rank) covers it. The runtime hands over device buffers
// that are ready (its packing copy waited) and keeps them until the wait.
// Every communicator is non-blocking, so that making one also waits under
// the watchdog (a peer that never joins is named, not waited for forever).
//
// Data-parallel buckets are summed in place by ncclAllReduce, on a
// communicator of each device's replicas and a stream of its own
// (connectReplicas, allReduce).
//
// Two ways to start, docs/distributed.md:
// - Over a bootstrap transport (MPI): the sending rank makes each link's
//   unique id, broadcast over it (so does each replica group's first
//   rank); the agreements and gradient meetings (and buckets of mixed
//   types) go through it, as host memory.
// - Without MPI: a launcher's variables give the ranks (Launch.h), the
//   ranks share one unique id (NCCL_COMM_ID, or a file rank 0 writes) for
//   a communicator of all ranks, the links are split from it, and the other
//   messages go through it too: staged through device memory, each framed
//   with what it is, so that a message received in the place of another is
//   an error rather than wrong data (NCCL has no tags). One device per rank:
//   a rank's messages then come from one thread, in its program's order.
//
//===----------------------------------------------------------------------===//

#include "pipe/Runtime/NcclTransport.h"

#include "Driver.h"

#include "pipe/Runtime/Comm.h"
#include "pipe/Runtime/Status.h"

#ifdef PIPE_RT_HAVE_NCCL
#include "../Backend.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <nccl.h>
#include <thread>
#include <unistd.h>
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

std::shared_ptr<Transport>
pipe_rt::createNcclTransport(pipe_rt_session *, const LaunchEnvironment &,
                             double, std::string &error) {
  NcclCopies::built(error);
  return nullptr;
}

#else

namespace {

std::string ncclFailure(const char *call, ncclResult_t r) {
  return std::string(call) + ": " + ncclGetErrorString(r);
}

using Clock = std::chrono::steady_clock;

bool pastDeadline(Clock::time_point start, double seconds) {
  return Clock::now() - start > std::chrono::duration<double>(seconds);
}

/// Between two polls of something that is usually done within
/// microseconds (NCCL issuing a posted send): yield at first, then sleep.
void backOff(Clock::time_point start) {
  if (Clock::now() - start < std::chrono::milliseconds(2))
    std::this_thread::yield();
  else
    std::this_thread::sleep_for(std::chrono::microseconds(200));
}

/// A non-blocking communicator's state after its last call: ncclSuccess
/// once that call's work is issued, ncclInProgress before, or an error.
ncclResult_t stateOf(ncclComm_t comm) {
  ncclResult_t state = ncclSuccess;
  if (ncclResult_t r = ncclCommGetAsyncError(comm, &state))
    return r;
  return state;
}

/// Waits until `comm`'s last call is done, up to `seconds`; on a timeout
/// `late` says who is late.
int settle(ncclComm_t comm, double seconds, const std::string &late,
           std::string &error) {
  auto start = Clock::now();
  for (;;) {
    ncclResult_t state = stateOf(comm);
    if (state == ncclSuccess)
      return PIPE_RT_OK;
    if (state != ncclInProgress) {
      error = ncclGetErrorString(state);
      return PIPE_RT_DEVICE_ERROR;
    }
    if (pastDeadline(start, seconds)) {
      error = late;
      return PIPE_RT_TIMEOUT;
    }
    backOff(start);
  }
}

ncclConfig_t nonBlocking() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return config;
}

/// What goes before a message of the agreements or meetings when the
/// communicator of all ranks carries it: what it is, so that the receiver
/// sees a message that is not the one it posted for.
struct Frame {
  uint32_t magic = 0x70697065; // "pipe"
  int32_t channel = 0, tag = 0, unused = 0;
  uint64_t bytes = 0;
};

const char *channelName(int channel) {
  switch (Transport::Channel(channel)) {
  case Transport::Channel::Transfers:
    return "transfers";
  case Transport::Channel::Meetings:
    return "meetings";
  case Transport::Channel::Agreements:
    return "agreements";
  }
  return "?";
}

class NcclTransport final : public Transport {
public:
  NcclTransport(pipe_rt_session *session, std::shared_ptr<Transport> bootstrap)
      : session(session), bootstrap(std::move(bootstrap)) {}
  NcclTransport(pipe_rt_session *session, const LaunchEnvironment &launch)
      : session(session), launch(launch) {}

  ~NcclTransport() override {
    // A communicator with work that may still wait for a peer, or in an
    // error state, is aborted: destroying it would wait forever, or return
    // early and leave NCCL's group open for the ones after it.
    bool idle = posted.empty() && messages.empty();
    auto end = [idle](ncclComm_t comm) {
      if (!comm)
        return;
      if (idle && stateOf(comm) == ncclSuccess)
        ncclCommDestroy(comm);
      else
        ncclCommAbort(comm);
    };
    for (auto &[tag, link] : links)
      end(link.comm.exchange(nullptr));
    end(world.exchange(nullptr));
    // Nothing runs on the GPUs for them any more; a copy queued by a
    // failed launch may still.
    if (worldStream) {
      makeCurrent(*worldGpu);
      cuStreamSynchronize(worldStream);
    }
    for (auto &[request, p] : posted)
      cuEventDestroy(p.event);
    for (auto &[request, m] : messages) {
      if (m.staging)
        worldGpu->pool->release(m.staging);
      releaseFrame(m);
    }
    messages.clear(); // their batches' events
    lastBatch.reset();
    for (auto &[tag, link] : links)
      if (link.stream) {
        makeCurrent(*link.gpu);
        cuStreamDestroy(link.stream);
      }
    if (worldStream) {
      makeCurrent(*worldGpu);
      cuStreamDestroy(worldStream);
    }
  }

  const char *name() const override { return "NCCL"; }
  int rank() const override {
    return bootstrap ? bootstrap->rank() : launch.rank;
  }
  int size() const override {
    return bootstrap ? bootstrap->size() : launch.size;
  }
  int localRank() const override {
    return bootstrap ? bootstrap->localRank() : launch.localRank;
  }
  int maxTag() const override {
    return bootstrap ? bootstrap->maxTag() : INT_MAX;
  }
  bool matchesTransfersByOrder() const override { return true; }
  bool carriesDeviceMemory(const DeviceMemory &memory) const override {
    return !memory.hostBacked();
  }

  /// Without a bootstrap: the communicator of all ranks, on the GPU of
  /// this rank's first device. `idFile`: where rank 0 writes the unique id
  /// (unless NCCL_COMM_ID gives it, or there is one rank).
  int startWorld(const std::string &idFile, double seconds,
                 std::string &error) {
    watchdogSeconds = seconds;
    int ordinal = gpuOrdinalOf(session, launch.localRank);
    worldGpu = ordinal >= 0 ? gpu(ordinal, error) : nullptr;
    if (!worldGpu) {
      error = ordinal < 0 ? "the session does not run on GPUs" : error;
      return PIPE_RT_DEVICE_ERROR;
    }
    makeCurrent(*worldGpu);
    if (CUresult r = cuStreamCreate(&worldStream, CU_STREAM_NON_BLOCKING)) {
      error = driverError("cuStreamCreate", r);
      return PIPE_RT_DEVICE_ERROR;
    }
    ncclUniqueId id;
    std::memset(&id, 0, sizeof(id));
    // Without a file every rank makes the same id (ncclIdSource).
    bool everyRankMakesIt = idFile.empty();
    if (everyRankMakesIt || launch.rank == 0)
      if (ncclResult_t r = ncclGetUniqueId(&id)) {
        error = ncclFailure("ncclGetUniqueId", r);
        return PIPE_RT_DEVICE_ERROR;
      }
    if (!everyRankMakesIt)
      if (int st = shareThroughFile(idFile, launch.rank == 0, &id, sizeof(id),
                                    seconds, launch.runId, error))
        return st;
    int st = joinWorld(id, seconds, error);
    // Every rank read the file once all joined; a failed start leaves
    // nothing behind either.
    if (!everyRankMakesIt && launch.rank == 0)
      ::unlink(idFile.c_str());
    if (st) {
      error = format("GPU %d: the communicator of all ranks: %s", ordinal,
                     error.c_str());
      abortTransfers();
    }
    return st;
  }

  /// The communicator of all ranks from `id`, waited for up to `seconds`.
  int joinWorld(const ncclUniqueId &id, double seconds, std::string &error) {
    return initComm(world, launch.size, id, launch.rank, seconds,
                    format("not every one of the %d ranks joined within %g s: "
                           "is one stuck, or did it not start?",
                           launch.size, seconds),
                    error);
  }

  int connect(const std::vector<Link> &all, const std::vector<int> &placeOnHost,
              std::string &error) override {
    devices = int(placeOnHost.size());
    // This rank's links and their GPUs, checked before any collective call
    // (an error in the middle would leave the other ranks waiting).
    std::map<int, int> ordinals; // this rank's devices with links -> GPU
    std::vector<Gpu *> gpus(all.size(), nullptr);
    for (size_t i = 0; i < all.size(); ++i) {
      const Link &l = all[i];
      if (l.fromRank != rank() && l.toRank != rank())
        continue;
      int device = l.fromRank == rank() ? l.fromDevice : l.toDevice;
      int ordinal = gpuOrdinalOf(session, placeOnHost[size_t(device)]);
      gpus[i] = ordinal >= 0 ? gpu(ordinal, error) : nullptr;
      if (!gpus[i]) {
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
      // A link split from the communicator of all ranks is on its GPU.
      if (!bootstrap && gpus[i] != worldGpu) {
        error = format("device %d is on GPU %d, not on the rank's GPU %d: "
                       "without MPI each rank runs one device (launch one "
                       "process per device)",
                       device, ordinal, worldGpu->ordinal);
        return PIPE_RT_INVALID_ARGUMENT;
      }
      ordinals[device] = ordinal;
    }
    std::vector<ncclUniqueId> ids;
    if (bootstrap) {
      // Every link's id first (collective), then this rank's communicators
      // in the links' order.
      ids.resize(all.size());
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
    }
    for (size_t i = 0; i < all.size(); ++i) {
      const Link &l = all[i];
      bool sending = l.fromRank == rank();
      if (!gpus[i]) {
        // Splitting is collective over every rank of the parent.
        if (!bootstrap)
          if (int st = split(nullptr, false, l, "", error))
            return st;
        continue;
      }
      int device = sending ? l.fromDevice : l.toDevice;
      LinkState &link =
          links[transferLinkTag(l.fromDevice, l.toDevice, devices)];
      link.gpu = gpus[i];
      link.peerRank = sending ? l.toRank : l.fromRank;
      link.sending = sending;
      std::string where =
          format("device %d (GPU %d), link %d -> %d with rank %d", device,
                 link.gpu->ordinal, l.fromDevice, l.toDevice, link.peerRank);
      makeCurrent(*link.gpu);
      if (CUresult r = cuStreamCreate(&link.stream, CU_STREAM_NON_BLOCKING)) {
        error = where + ": " + driverError("cuStreamCreate", r);
        return PIPE_RT_DEVICE_ERROR;
      }
      int st = bootstrap ? initLink(link, ids[i], where, error)
                         : split(&link, sending, l, where, error);
      if (st)
        return st;
      // NCCL connects a pair at its first send/recv: do that here, in the
      // links' order, so that no device thread waits for it later.
      if (int st = warmUp(link, where, error))
        return st;
    }
    return PIPE_RT_OK;
  }

  bool reducesBuckets(const DeviceMemory &memory, int dtype) const override {
    return !memory.hostBacked() &&
           (dtype == PIPE_RT_DTYPE_F32 || dtype == PIPE_RT_DTYPE_F64);
  }

  /// A communicator per device of this rank over the device's replicas
  /// (NCCL rank = replica), in the devices' order on every rank: made from
  /// an id the first replica's rank makes (over MPI), or split from the
  /// communicator of all ranks (one device per rank).
  int connectReplicas(const std::vector<std::vector<int>> &groups,
                      const std::vector<int> &placeOnHost,
                      std::string &error) override {
    // This rank's groups and their GPUs, checked before any collective
    // call (an error in the middle would leave the other ranks waiting).
    std::vector<Gpu *> gpus(groups.size(), nullptr);
    std::vector<int> positions(groups.size(), -1);
    int splitDevice = -1;
    for (size_t d = 0; d < groups.size(); ++d) {
      const std::vector<int> &group = groups[d];
      auto at = std::find(group.begin(), group.end(), rank());
      if (at == group.end())
        continue;
      positions[d] = int(at - group.begin());
      int ordinal = gpuOrdinalOf(session, placeOnHost[d]);
      gpus[d] = ordinal >= 0 ? gpu(ordinal, error) : nullptr;
      const char *problem =
          !gpus[d]                            ? "no GPU"
          : !bootstrap && gpus[d] != worldGpu ? "not on the rank's GPU"
          : !bootstrap && splitDevice >= 0    ? "a second device of the rank"
                                              : nullptr;
      if (problem) {
        error = format("device %d: %s (without MPI each rank runs one "
                       "device)",
                       int(d), problem);
        return PIPE_RT_INVALID_ARGUMENT;
      }
      if (!bootstrap)
        splitDevice = int(d);
    }
    for (size_t d = 0; d < groups.size(); ++d) {
      const std::vector<int> &group = groups[d];
      ncclUniqueId id;
      if (bootstrap) {
        if (group.front() == rank())
          if (ncclResult_t r = ncclGetUniqueId(&id)) {
            error = ncclFailure("ncclGetUniqueId", r);
            return PIPE_RT_DEVICE_ERROR;
          }
        if (int st = agreeOn(*this, group.front(), &id, sizeof(id),
                             "the NCCL unique ids", error))
          return st;
      }
      if (!gpus[d])
        continue;
      LinkState &entry = links[replicaKey(int(d))];
      entry.gpu = gpus[d];
      for (int r : group)
        if (r != rank())
          entry.replicas +=
              (entry.replicas.empty() ? "" : ", ") + std::to_string(r);
      makeCurrent(*entry.gpu);
      if (CUresult r = cuStreamCreate(&entry.stream, CU_STREAM_NON_BLOCKING)) {
        error = driverError("cuStreamCreate", r);
        return PIPE_RT_DEVICE_ERROR;
      }
      if (!bootstrap)
        continue; // split below
      if (int st = initComm(
              entry.comm, int(group.size()), id, positions[d], watchdogSeconds,
              format("the replicas of device %d (ranks %s) did not join "
                     "within %g s: is one stuck?",
                     int(d), entry.replicas.c_str(), watchdogSeconds),
              error)) {
        abortTransfers();
        return st;
      }
    }
    int color = splitDevice >= 0 ? splitDevice : NCCL_SPLIT_NOCOLOR;
    int key = splitDevice >= 0 ? positions[size_t(splitDevice)] : 0;
    if (bootstrap || groups.empty())
      return PIPE_RT_OK;
    // Without MPI: one split of the communicator of all ranks (collective).
    return splitComm(splitDevice >= 0 ? &links[replicaKey(splitDevice)]
                                      : nullptr,
                     color, key,
                     format("not every rank made the communicators of the "
                            "replicas within %g s: is one stuck?",
                            watchdogSeconds),
                     error);
  }

  int allReduce(int device, void *data, uint64_t count, int dtype,
                uint64_t &request, std::string &error) override {
    auto it = links.find(replicaKey(device));
    if (it == links.end() ||
        (dtype != PIPE_RT_DTYPE_F32 && dtype != PIPE_RT_DTYPE_F64)) {
      error = format("NCCL: no all-reduce of device %d's replicas for that "
                     "type",
                     device);
      return PIPE_RT_INVALID_ARGUMENT;
    }
    LinkState &group = it->second;
    ncclComm_t comm = group.comm.load();
    if (!comm) {
      error = "NCCL: the communicator was aborted by an earlier error";
      return PIPE_RT_ABORTED;
    }
    makeCurrent(*group.gpu);
    bool f64 = dtype == PIPE_RT_DTYPE_F64;
    ncclResult_t r =
        ncclAllReduce(data, data, count, f64 ? ncclFloat64 : ncclFloat32,
                      ncclSum, comm, group.stream);
    if (r != ncclSuccess && r != ncclInProgress) {
      error = ncclFailure("ncclAllReduce", r);
      return PIPE_RT_DEVICE_ERROR;
    }
    return track(group, r, "ncclAllReduce", count * (f64 ? 8 : 4), request,
                 error);
  }

  int isend(Channel channel, int peer, int tag, const void *data,
            uint64_t bytes, uint64_t &request, std::string &error) override {
    if (channel != Channel::Transfers)
      return bootstrap
                 ? bootstrap->isend(channel, peer, tag, data, bytes, request,
                                    error)
                 : postMessage(true, channel, peer, tag,
                               const_cast<void *>(data), bytes, request, error);
    LinkState *link = linkOf(true, peer, tag, error);
    return link ? post(*link, const_cast<void *>(data), bytes, request, error)
                : int(PIPE_RT_INVALID_ARGUMENT);
  }
  int irecv(Channel channel, int peer, int tag, void *data, uint64_t bytes,
            uint64_t &request, std::string &error) override {
    if (channel != Channel::Transfers)
      return bootstrap ? bootstrap->irecv(channel, peer, tag, data, bytes,
                                          request, error)
                       : postMessage(false, channel, peer, tag, data, bytes,
                                     request, error);
    LinkState *link = linkOf(false, peer, tag, error);
    return link ? post(*link, data, bytes, request, error)
                : int(PIPE_RT_INVALID_ARGUMENT);
  }

  int test(uint64_t request, bool &done, std::string &error) override {
    if (!(request & kOwn)) {
      if (bootstrap)
        return bootstrap->test(request, done, error);
      error = "NCCL: unknown request";
      return PIPE_RT_INVALID_ARGUMENT;
    }
    if (request & kMessage)
      return testMessage(request, done, error);
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
    ncclResult_t async = comm ? stateOf(comm) : ncclSuccess;
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
    // After a failure the event stays: the run's end aborts every
    // communicator (abortTransfers, once no device thread uses them).
    if (done) {
      cuEventDestroy(p.event);
      lock.lock();
      posted.erase(request);
    }
    return status;
  }

  bool abortTransfers() override {
    for (auto &[tag, link] : links)
      if (ncclComm_t comm = link.comm.exchange(nullptr))
        ncclCommAbort(comm);
    if (ncclComm_t comm = world.exchange(nullptr))
      ncclCommAbort(comm);
    return bootstrap ? bootstrap->abortTransfers() : true;
  }

  [[noreturn]] void abortJob(int exitCode) override {
    abortTransfers();
    if (bootstrap)
      bootstrap->abortJob(exitCode); // never returns
    // Without MPI the others stop at their watchdog (or their launcher
    // ends them when this one exits).
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(exitCode);
  }

private:
  /// A link's side, or the communicator of a device's data-parallel
  /// replicas (kept in `links` under replicaKey: `replicas` set, the other
  /// ranks in it).
  struct LinkState {
    Gpu *gpu = nullptr;
    CUstream stream = nullptr;
    /// Null once aborted (by any thread).
    std::atomic<ncclComm_t> comm{nullptr};
    int peerRank = -1;
    bool sending = false;
    std::string replicas;
  };
  /// Where a device's replica communicator is in `links` (link tags are
  /// not negative).
  static int replicaKey(int device) { return -1 - device; }
  struct Posted {
    LinkState *link = nullptr;
    CUevent event = nullptr;
    uint64_t bytes = 0;
  };
  /// Messages launched together on the communicator of all ranks (one
  /// group), and the event recorded once NCCL issued them.
  struct Batch {
    CUevent event = nullptr;
    bool recorded = false;
    ~Batch() {
      if (event)
        cuEventDestroy(event);
    }
  };
  /// An agreement's or meeting's message without a bootstrap.
  struct Message {
    bool sending = false;
    int channel = 0, peer = 0, tag = 0;
    void *data = nullptr;
    uint64_t bytes = 0;
    /// Frame + payload, in page-locked host memory: a copy from pageable
    /// memory may wait for the stream, behind kernels waiting for a peer.
    unsigned char *frame = nullptr;
    uint64_t frameBytes = 0;
    void *staging = nullptr;          // its copy on the GPU
    std::shared_ptr<Batch> batch;     // null until launched
  };
  /// Requests of this transport (the bootstrap's stay below it), and of
  /// its messages of all ranks.
  static constexpr uint64_t kOwn = uint64_t(1) << 63;
  static constexpr uint64_t kMessage = uint64_t(1) << 62;

  std::string describe(const Posted &p) const {
    if (!p.link->replicas.empty())
      return format("NCCL all-reduce of %llu bytes with ranks %s",
                    (unsigned long long)p.bytes, p.link->replicas.c_str());
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

  std::string lateRank(int peer, const char *what) const {
    return format("rank %d did not %s within %g s: is rank %d stuck?", peer,
                  what, watchdogSeconds, peer);
  }

  /// A communicator from `id`, NCCL rank `rank` of `nranks`, into `slot`,
  /// waited for up to `seconds` (`late` then says who is late).
  int initComm(std::atomic<ncclComm_t> &slot, int nranks,
               const ncclUniqueId &id, int rank, double seconds,
               const std::string &late, std::string &error) {
    ncclConfig_t config = nonBlocking();
    ncclComm_t comm = nullptr;
    ncclResult_t r = ncclCommInitRankConfig(&comm, nranks, id, rank, &config);
    if (r != ncclSuccess && r != ncclInProgress) {
      error = ncclFailure("ncclCommInitRankConfig", r);
      return PIPE_RT_DEVICE_ERROR;
    }
    slot = comm;
    return settle(comm, seconds, late, error);
  }

  /// The link's communicator from its unique id (the sender is NCCL rank 0).
  int initLink(LinkState &link, const ncclUniqueId &id,
               const std::string &where, std::string &error) {
    if (int st =
            initComm(link.comm, 2, id, link.sending ? 0 : 1, watchdogSeconds,
                     lateRank(link.peerRank, "join the link"), error)) {
      error = where + ": " + error;
      abortTransfers();
      return st;
    }
    return PIPE_RT_OK;
  }

  /// The link's communicator split from the one of all ranks (every rank
  /// calls this for every link, in order; `link` null where this rank is
  /// not on it).
  int split(LinkState *link, bool sending, const Link &l,
            const std::string &where, std::string &error) {
    int st = splitComm(link, link ? 0 : NCCL_SPLIT_NOCOLOR, sending ? 0 : 1,
                       format("not every rank made the communicator of link "
                              "%d -> %d within %g s: is one stuck?",
                              l.fromDevice, l.toDevice, watchdogSeconds),
                       error);
    if (st && !where.empty())
      error = where + ": " + error;
    return st;
  }

  /// A communicator split from the one of all ranks into `entry` (null,
  /// with NCCL_SPLIT_NOCOLOR, where this rank is in none): collective over
  /// every rank, waited for under the watchdog (`late`). On failure every
  /// communicator is aborted.
  int splitComm(LinkState *entry, int color, int key, const std::string &late,
                std::string &error) {
    ncclConfig_t config = nonBlocking();
    ncclComm_t comm = nullptr;
    ncclComm_t parent = world.load();
    ncclResult_t r = parent ? ncclCommSplit(parent, color, key, &comm, &config)
                            : ncclInvalidUsage;
    if (r != ncclSuccess && r != ncclInProgress) {
      error = ncclFailure("ncclCommSplit", r);
      return PIPE_RT_DEVICE_ERROR;
    }
    // The split is done when the parent's state says so; only then is
    // `comm` set.
    int st = settle(parent, watchdogSeconds, late, error);
    if (!st && entry && !comm) {
      error = "ncclCommSplit gave no communicator";
      st = PIPE_RT_DEVICE_ERROR;
    }
    if (!st && entry) {
      entry->comm = comm;
      st = settle(comm, watchdogSeconds, late, error);
    }
    if (st) {
      // Aborting the parent ends the split, which may then still write a
      // half-made communicator into `comm`: abort that one after.
      bool inEntry = comm && entry && entry->comm.load() == comm;
      abortTransfers(); // the entry's too
      if (comm && !inEntry)
        ncclCommAbort(comm);
    }
    return st;
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
    const char *call = link.sending ? "ncclSend" : "ncclRecv";
    if (r != ncclSuccess && r != ncclInProgress) {
      error = ncclFailure(call, r);
      return PIPE_RT_DEVICE_ERROR;
    }
    return track(link, r, call, bytes, request, error);
  }

  /// After `call` on `link` returned `r` (success or in progress): the
  /// event that completes it, once NCCL issued the work (on a connected
  /// communicator this is short), as `request`.
  int track(LinkState &link, ncclResult_t r, const char *call, uint64_t bytes,
            uint64_t &request, std::string &error) {
    if (r == ncclInProgress)
      if (int st = settle(
              link.comm.load(), watchdogSeconds,
              format("NCCL did not issue it within %g s", watchdogSeconds),
              error)) {
        error = std::string(call) + ": " + error;
        return st;
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
    auto start = Clock::now();
    while (st == PIPE_RT_OK) {
      bool done = false;
      st = test(request, done, error);
      if (done || st != PIPE_RT_OK)
        break;
      if (pastDeadline(start, watchdogSeconds)) {
        error = lateRank(link.peerRank, "connect");
        st = PIPE_RT_TIMEOUT;
      }
      backOff(start);
    }
    if (st != PIPE_RT_OK) {
      error = where + ": " + error;
      abortTransfers(); // the byte stays allocated: NCCL may still write it
      return st;
    }
    link.gpu->pool->release(byte);
    return PIPE_RT_OK;
  }

  //===--------------------------------------------------------------------===//
  // Agreements and meetings without a bootstrap
  //===--------------------------------------------------------------------===//

  /// Queues a message; flush() (or the first test() of a queued one)
  /// launches every queued one in one group: a device posts an exchange's
  /// sends and receives before it waits, and NCCL needs them together.
  int postMessage(bool sending, Channel channel, int peer, int tag, void *data,
                  uint64_t bytes, uint64_t &request, std::string &error) {
    if (peer < 0 || peer >= size() || peer == rank()) {
      error = format("NCCL: no rank %d to exchange with", peer);
      return PIPE_RT_INVALID_ARGUMENT;
    }
    Message m;
    m.sending = sending;
    m.channel = int(channel);
    m.peer = peer;
    m.tag = tag;
    m.data = data;
    m.bytes = bytes;
    m.frameBytes = sizeof(Frame) + bytes;
    Pool *pinned = hostPool(error);
    void *frame = nullptr;
    if (!pinned || pinned->alloc(m.frameBytes, &frame, error) != CUDA_SUCCESS)
      return PIPE_RT_OUT_OF_MEMORY;
    m.frame = static_cast<unsigned char *>(frame);
    if (sending) {
      Frame f;
      f.channel = m.channel;
      f.tag = tag;
      f.bytes = bytes;
      std::memcpy(m.frame, &f, sizeof(f));
      if (bytes)
        std::memcpy(m.frame + sizeof(f), data, bytes);
    }
    std::lock_guard<std::mutex> lock(messagesMu);
    if (!broken.empty()) {
      error = broken;
      return PIPE_RT_ABORTED;
    }
    request = kOwn | kMessage | next++;
    messages.emplace(request, std::move(m));
    queued.push_back(request);
    return PIPE_RT_OK;
  }

  int flush(std::string &error) override {
    if (bootstrap)
      return bootstrap->flush(error);
    std::lock_guard<std::mutex> lock(messagesMu);
    return launchQueued(error);
  }

  /// Records the batch's event once NCCL issued its group (the
  /// communicator's state is no longer in progress). Under messagesMu.
  int recordWhenIssued(Batch &batch, std::string &error) {
    if (batch.recorded)
      return PIPE_RT_OK;
    ncclComm_t comm = world.load();
    ncclResult_t state = comm ? stateOf(comm) : ncclInvalidUsage;
    if (state == ncclInProgress)
      return PIPE_RT_OK;
    if (state != ncclSuccess)
      return breakMessages(comm ? std::string("NCCL (all ranks): ") +
                                      ncclGetErrorString(state)
                                : "NCCL: the communicator was aborted",
                           error);
    makeCurrent(*worldGpu);
    if (CUresult r = cuEventRecord(batch.event, worldStream))
      return breakMessages(driverError("cuEventRecord", r), error);
    batch.recorded = true;
    return PIPE_RT_OK;
  }

  /// Launches the queued messages as one group, once NCCL issued the last
  /// group (no NCCL call on a communicator before its last one is done).
  /// Under messagesMu.
  int launchQueued(std::string &error) {
    if (!broken.empty()) {
      error = broken;
      return PIPE_RT_ABORTED;
    }
    if (queued.empty())
      return PIPE_RT_OK;
    if (lastBatch) {
      if (int st = recordWhenIssued(*lastBatch, error))
        return st;
      if (!lastBatch->recorded)
        return PIPE_RT_OK;
    }
    ncclComm_t comm = world.load();
    if (!comm)
      return breakMessages("NCCL: the communicator was aborted", error);
    makeCurrent(*worldGpu);
    auto batch = std::make_shared<Batch>();
    if (CUresult r = cuEventCreate(&batch->event, CU_EVENT_DISABLE_TIMING)) {
      batch->event = nullptr;
      return breakMessages(driverError("cuEventCreate", r), error);
    }
    for (uint64_t request : queued) {
      Message &m = messages.at(request);
      std::string why;
      if (worldGpu->pool->alloc(m.frameBytes, &m.staging, why) !=
          CUDA_SUCCESS) {
        m.staging = nullptr;
        return breakMessages(why, error);
      }
      // Ordered before the send on the stream; the frame stays in place
      // until the message is done.
      if (m.sending)
        if (CUresult r = cuMemcpyHtoDAsync(CUdeviceptr(m.staging), m.frame,
                                           m.frameBytes, worldStream))
          return breakMessages(driverError("cuMemcpyHtoDAsync", r), error);
    }
    ncclGroupStart();
    for (uint64_t request : queued) {
      Message &m = messages.at(request);
      if (m.sending)
        ncclSend(m.staging, m.frameBytes, ncclUint8, m.peer, comm, worldStream);
      else
        ncclRecv(m.staging, m.frameBytes, ncclUint8, m.peer, comm, worldStream);
      m.batch = batch;
    }
    ncclResult_t r = ncclGroupEnd();
    queued.clear();
    lastBatch = batch;
    if (r != ncclSuccess && r != ncclInProgress)
      return breakMessages(ncclFailure("ncclGroupEnd (all ranks)", r), error);
    return recordWhenIssued(*batch, error);
  }

  int testMessage(uint64_t request, bool &done, std::string &error) {
    done = false;
    std::lock_guard<std::mutex> lock(messagesMu);
    auto it = messages.find(request);
    if (it == messages.end()) {
      error = "NCCL: unknown request";
      return PIPE_RT_INVALID_ARGUMENT;
    }
    Message &m = it->second;
    // Whatever waits here, what was queued behind an earlier group goes as
    // soon as NCCL issued that one.
    int st = m.batch ? recordWhenIssued(*m.batch, error) : PIPE_RT_OK;
    if (!st && !queued.empty())
      st = launchQueued(error);
    if (st || !m.batch || !m.batch->recorded)
      return failed(m, st, error);
    makeCurrent(*worldGpu);
    CUresult r = cuEventQuery(m.batch->event);
    if (r == CUDA_ERROR_NOT_READY) {
      ncclComm_t comm = world.load();
      ncclResult_t state = comm ? stateOf(comm) : ncclInvalidUsage;
      if (state != ncclSuccess && state != ncclInProgress)
        return failed(m,
                      breakMessages(comm ? std::string("NCCL (all ranks): ") +
                                               ncclGetErrorString(state)
                                         : "NCCL: the communicator was aborted",
                                    error),
                      error);
      return PIPE_RT_OK;
    }
    if (r != CUDA_SUCCESS)
      return failed(m, breakMessages(driverError("cuEventQuery", r), error),
                    error);
    if (!m.sending) {
      if (CUresult c =
              cuMemcpyDtoH(m.frame, CUdeviceptr(m.staging), m.frameBytes))
        return failed(m, breakMessages(driverError("cuMemcpyDtoH", c), error),
                      error);
      Frame f;
      std::memcpy(&f, m.frame, sizeof(f));
      if (f.magic != Frame().magic || f.channel != m.channel ||
          f.tag != m.tag || f.bytes != m.bytes) {
        std::string what = format(
            "rank %d sent %s message %d of %llu bytes where this rank waited "
            "for %s message %d of %llu bytes: the ranks issue their messages "
            "in different orders, which NCCL (no tags) cannot match; run "
            "under mpirun",
            m.peer, channelName(f.channel), f.tag, (unsigned long long)f.bytes,
            channelName(m.channel), m.tag, (unsigned long long)m.bytes);
        breakMessages(what, error);
        return failed(m, PIPE_RT_SIZE_MISMATCH, error);
      }
      if (m.bytes)
        std::memcpy(m.data, m.frame + sizeof(f), m.bytes);
    }
    done = true;
    worldGpu->pool->release(m.staging);
    releaseFrame(m);
    messages.erase(it);
    return PIPE_RT_OK;
  }

  static void releaseFrame(Message &m) {
    std::string ignored;
    if (Pool *pinned = m.frame ? hostPool(ignored) : nullptr)
      pinned->release(m.frame);
    m.frame = nullptr;
  }

  /// Every later message fails with `why` (the communicator of all ranks is
  /// in an unknown state; the run's end aborts it). Returns
  /// PIPE_RT_DEVICE_ERROR with `error`. Under messagesMu.
  int breakMessages(const std::string &why, std::string &error) {
    if (broken.empty())
      broken = why;
    error = why;
    return PIPE_RT_DEVICE_ERROR;
  }

  /// `st` with `error` naming message `m`'s peer, where `st` is a failure.
  /// The message stays (NCCL may still use its buffers until aborted).
  int failed(const Message &m, int st, std::string &error) const {
    if (st)
      error = format("%s %s rank %d: ", m.sending ? "send" : "recv",
                     m.sending ? "to" : "from", m.peer) +
              error;
    return st;
  }

  pipe_rt_session *session;
  /// MPI, or null (launched without it: `launch`).
  std::shared_ptr<Transport> bootstrap;
  LaunchEnvironment launch;
  int devices = 0;
  /// By link tag; made by connect, then only read (each link's side is
  /// used by one device thread).
  std::map<int, LinkState> links;
  std::mutex mu;
  std::map<uint64_t, Posted> posted;
  std::atomic<uint64_t> next{1};

  /// Without a bootstrap: the communicator of all ranks, its GPU and
  /// stream, and the agreements' and meetings' messages over it.
  Gpu *worldGpu = nullptr;
  CUstream worldStream = nullptr;
  std::atomic<ncclComm_t> world{nullptr};
  std::mutex messagesMu;
  std::map<uint64_t, Message> messages;
  std::vector<uint64_t> queued;
  /// Why the messages of all ranks failed (empty while they work).
  std::string broken;
  /// The last group launched: the next one waits until NCCL issued it.
  std::shared_ptr<Batch> lastBatch;
};

/// Whether NCCL's environment lets the transport work (`overBootstrap`:
/// with MPI), and on GPUs.
bool usable(pipe_rt_session *session, bool overBootstrap, std::string &error) {
  if (gpuOrdinalOf(session, 0) < 0) {
    error = "the NCCL transport needs a session on GPUs "
            "(pipe_rt_cuda_session_enable)";
    return false;
  }
  // It would make every communicator blocking: no watchdog while one is
  // made or a peer connects.
  const char *blocking = std::getenv("NCCL_COMM_BLOCKING");
  if (blocking && std::strcmp(blocking, "0") != 0) {
    error = "NCCL_COMM_BLOCKING is set: the runtime needs NCCL's "
            "non-blocking communicators to watch for stuck ranks (unset it)";
    return false;
  }
  // It would give every link's communicator the same address.
  if (overBootstrap && std::getenv("NCCL_COMM_ID")) {
    error = "NCCL_COMM_ID is set: it serves runs without MPI (docs/"
            "distributed.md, \"NCCL without MPI\"); under mpirun the links' "
            "ids go over MPI (unset it)";
    return false;
  }
  return true;
}

} // namespace

std::shared_ptr<Transport>
pipe_rt::createNcclTransport(pipe_rt_session *session,
                             std::shared_ptr<Transport> bootstrap,
                             std::string &error) {
  if (!usable(session, true, error))
    return nullptr;
  return std::make_shared<NcclTransport>(session, std::move(bootstrap));
}

std::shared_ptr<Transport>
pipe_rt::createNcclTransport(pipe_rt_session *session,
                             const LaunchEnvironment &launch,
                             double watchdogSeconds, std::string &error) {
  std::string idFile;
  if (!usable(session, false, error) ||
      !ncclIdSource(launch, std::getenv, idFile, error))
    return nullptr;
  auto transport = std::make_shared<NcclTransport>(session, launch);
  if (transport->startWorld(idFile, watchdogSeconds, error)) {
    error =
        format("rank %d (%s): ", launch.rank, launch.source.c_str()) + error;
    return nullptr;
  }
  return transport;
}

#endif
