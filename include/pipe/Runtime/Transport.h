//===- Transport.h - Moving bytes between the processes of a run -*- C++
//-*-===//
//
// A distributed run is one process (rank) per group of devices, all running
// the same compiled program; each executes only the device programs of its
// own devices. A Transport is what the runtime needs from the distributed
// engine underneath (MPI here, see lib/Runtime/MPI): point-to-point messages
// completed by polling, so that the device threads keep their watchdog, and
// a few blocking collectives for what the ranks must agree on between runs.
// The runtime uses it through pipe_rt::attachTransport; everything else of a
// session (the trainer, checkpoints) is unchanged. See docs/distributed.md.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_RUNTIME_TRANSPORT_H
#define PIPE_RUNTIME_TRANSPORT_H

#include "pipe/Runtime/Status.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

struct pipe_rt_session;

namespace pipe_rt {

class DeviceMemory;

class Transport {
public:
  /// Independent tag spaces: a message on one never matches a receive on
  /// another.
  enum class Channel { Transfers, Meetings, Agreements };

  virtual ~Transport();
  virtual const char *name() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// The rank's place among the ranks of its host (it picks the host's
  /// GPUs, see docs/distributed.md).
  virtual int localRank() const = 0;
  /// The largest tag a message may carry (at least 32767).
  virtual int maxTag() const = 0;
  /// Transfers are matched by their order between two devices only, as
  /// NCCL matches them (it has no tags), and a send completes only once it
  /// was received: the runtime then tags a transfer with its device pair
  /// alone (transferLinkTag), and runs only programs whose device pairs
  /// issue their transfers in the same order on both sides (compiled with
  /// peer-order).
  virtual bool matchesTransfersByOrder() const { return false; }
  /// Whether its transfers send and receive the buffers of `memory`'s
  /// devices directly (as NCCL does GPU memory), so that a transfer to
  /// another rank is not copied through host memory where the host cannot
  /// address the devices' memory: the runtime then posts device pointers of
  /// the sending and receiving devices on Channel::Transfers.
  virtual bool carriesDeviceMemory(const DeviceMemory &memory) const {
    return false;
  }

  /// Data parallelism: whether the replicas' buckets of `dtype`
  /// (PIPE_RT_DTYPE_*) whose gradients are in `memory` are summed by the
  /// transport itself, in place on the devices' memory (allReduce, NCCL's
  /// all-reduce), rather than exchanged and summed by the runtime in
  /// replica order. Its sum order is its own: the same bits for two
  /// replicas (a + b == b + a; but for the sign of a zero sum), within
  /// rounding beyond.
  virtual bool reducesBuckets(const DeviceMemory &memory, int dtype) const {
    return false;
  }

  /// Two devices on different ranks between which transfers cross:
  /// program device `fromDevice` on rank `fromRank` sends to `toDevice` on
  /// `toRank`.
  struct Link {
    int fromRank = 0, toRank = 0, fromDevice = 0, toDevice = 0;
    bool operator<(const Link &o) const {
      return std::tie(fromRank, toRank, fromDevice, toDevice) <
             std::tie(o.fromRank, o.toRank, o.fromDevice, o.toDevice);
    }
  };
  /// Prepares what the transfers over `links` need before any run (NCCL's
  /// communicators). `placeOnHost[d]`: the place among the host's devices
  /// of this rank's program device d, which picks its GPU (-1: another
  /// rank's). Collective: every rank passes the same links in the same
  /// order (attachTransport).
  virtual int connect(const std::vector<Link> &links,
                      const std::vector<int> &placeOnHost, std::string &error) {
    return PIPE_RT_OK;
  }

  /// Prepares allReduce where reducesBuckets: `groups[d]` lists the ranks
  /// running program device d's replicas, in replica order (`placeOnHost`
  /// as for connect). Collective: every rank passes the same groups.
  virtual int connectReplicas(const std::vector<std::vector<int>> &groups,
                              const std::vector<int> &placeOnHost,
                              std::string &error) {
    return PIPE_RT_OK;
  }
  /// Starts summing in place `count` elements of `dtype` at `data` (memory
  /// of program device `device`, the same count on every replica) over the
  /// device's replicas; sets `request`, completed by test(). Each device's
  /// calls come from its thread, in the same order on every replica.
  virtual int allReduce(int device, void *data, uint64_t count, int dtype,
                        uint64_t &request, std::string &error) {
    error = std::string(name()) + " does not sum buckets itself";
    return PIPE_RT_INVALID_ARGUMENT;
  }

  /// Posts a message of `bytes` to/from `peer`; sets `request` (never 0).
  /// The data must stay valid until test() reported the request done.
  /// Return PIPE_RT_* statuses; errors fill `error`. Thread-safe.
  virtual int isend(Channel channel, int peer, int tag, const void *data,
                    uint64_t bytes, uint64_t &request, std::string &error) = 0;
  virtual int irecv(Channel channel, int peer, int tag, void *data,
                    uint64_t bytes, uint64_t &request, std::string &error) = 0;
  /// Sets `done` once the request completed (then it is freed); a receive
  /// of another size than posted is PIPE_RT_SIZE_MISMATCH.
  virtual int test(uint64_t request, bool &done, std::string &error) = 0;
  /// Starts the messages posted so far on Channel::Meetings or Agreements.
  /// A transport may hold them until then, or until the first test() of
  /// one, to start them together (NCCL needs an exchange's sends and
  /// receives in one group); the runtime calls it after posting an
  /// exchange that it waits for later.
  virtual int flush(std::string &error) { return PIPE_RT_OK; }

  /// Stops the messages in flight after a run failed (NCCL's kernels wait
  /// on the GPU for their peer until aborted; MPI's posted requests still
  /// read or write their buffers): later transfers fail. Returns whether
  /// none is in flight any more, so that their buffers may be freed; the
  /// runtime keeps the run's memory otherwise (the job is about to end).
  virtual bool abortTransfers() { return true; }

  /// Ends every rank of the job now (after a fatal error on this one).
  [[noreturn]] virtual void abortJob(int exitCode) = 0;

  /// How long a rank waits for a peer before it reports the peer stuck
  /// (the session's watchdog; set by attachTransport).
  double watchdogSeconds = 60;
  /// Agreements made so far (their tags); the same on every rank.
  uint64_t agreements = 0;

  /// Bytes this rank sent and received so far, and the time its device
  /// threads spent waiting for messages (for the profile).
  std::atomic<uint64_t> sentBytes{0}, receivedBytes{0}, waitNanoseconds{0};
  /// Buckets it summed itself (allReduce).
  std::atomic<uint64_t> allReduces{0};
  /// The devices whose programs ran in this process, as a bit set (the
  /// profile shows that each rank ran only its own).
  std::atomic<uint64_t> devicesRan{0};
};

/// The tag of a transfer from program device `from` to `to` over a
/// transport that matches transfers by order, and its inverse; `devices`
/// is the program's (programDevices).
inline int transferLinkTag(int from, int to, int devices) {
  return from * devices + to;
}
inline void transferLinkOfTag(int tag, int devices, int &from, int &to) {
  from = tag / devices;
  to = tag % devices;
}

/// The most devices a schedule of the program uses.
int programDevices(const pipe_rt_session *session);

/// The data-parallel replicas the program was compiled for (its schedules'
/// `replicas` record, pipe.placement replicas in the IR; 1 without).
int programReplicas(const pipe_rt_session *session);

/// Makes `session` one rank of a distributed run over `transport`: rank r
/// executes devices [r * devicesPerRank, (r + 1) * devicesPerRank) of every
/// schedule. A program compiled for `replicas` > 1 (data parallelism) runs
/// as that many copies of the pipeline, each on the ranks [k * R, (k + 1) *
/// R) with R = size / replicas; each replica runs its own share of every
/// step's micro-batches (the trainer gives it), and its reduce_grad actions
/// sum each gradient over the replicas, in replica order, before the update.
/// `replicas` must be the program's. Checks that every rank loaded the same
/// program and that the ranks cover each schedule's devices exactly (a clear
/// error otherwise, before any step); collective. After each run every rank
/// holds every loss and the memory figures of every device; see shareParams for
/// the params. `optionsFingerprint` (trainingFingerprint of the caller's
/// options; 0: not checked) must be every rank's: ranks started with other
/// hyper-parameters would train a mix of them.
int attachTransport(pipe_rt_session *session,
                    std::shared_ptr<Transport> transport, int devicesPerRank,
                    int replicas, std::string &error,
                    uint64_t optionsFingerprint = 0);

/// Agreements of the ranks (collective: every rank calls them in the same
/// order, from one thread, outside a run). Point-to-point through rank 0,
/// which combines in rank order, so that every wait names the peer it waits
/// for when the watchdog fires ("rank 1 did not join ...: stuck?").
int agreeSum(Transport &t, double *data, uint64_t count, const char *what,
             std::string &error);
int agreeMax(Transport &t, int64_t *data, uint64_t count, const char *what,
             std::string &error);
/// Every rank gets rank `root`'s `bytes` at `data`.
int agreeOn(Transport &t, int root, void *data, uint64_t bytes,
            const char *what, std::string &error);

/// Each rank commits, after a run, the params its own devices hold: every
/// rank has what its next run needs, but not the params of other ranks.
/// This gives every rank every param's value and optimizer state (from the
/// rank of the lowest device reading it), as before writing a checkpoint or
/// the weights; collective. A no-op in one process.
int shareParams(pipe_rt_session *session, std::string &error);

} // namespace pipe_rt

#endif // PIPE_RUNTIME_TRANSPORT_H
