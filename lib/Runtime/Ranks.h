//===- Ranks.h - The ranks room of a distributed run ------------*- C++ -*-===//
//
// Private to the runtime. What a run needs when its devices live in several
// processes (pipe/Runtime/Transport.h): which rank executes which device, a
// Communicator that sends transfers between devices of different ranks over
// the transport (and keeps those within a rank in process), the exchanges
// that let a reduce_grad or a clipping meeting include remote devices, and
// the agreement after a run (losses, params, optimizer state). Message tags
// are derived from what a message is, so that messages never cross; see
// docs/distributed.md, "Tags".
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_RUNTIME_RANKS_H
#define PIPE_RUNTIME_RANKS_H

#include "Session.h"
#include "Transfers.h"

#include "pipe/Runtime/Transport.h"

#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace pipe_rt {

struct Manifest;
struct RunState;
struct ScheduleInfo;

/// Each of a run's `slots` device slots' place among the devices of this
/// host's ranks (Backend::createMemory's hostSlots; slot s runs program
/// device s mod `devices`): the rank's place on its host times the slots
/// it runs, plus the slot's place among them; -1 where another rank runs
/// it. Empty without a transport (every slot in place).
std::vector<int> placesOnHost(const RankMap &ranks, int slots, int devices);

/// Checks that `sched` was compiled for `replicas` data-parallel replicas.
bool checkScheduleReplicas(const ScheduleInfo &sched, int replicas,
                           std::string &error);

/// Checks that the ranks cover the devices of `sched`, that it was compiled
/// for their replicas, and that its messages have distinct tags within the
/// transport's range.
bool checkScheduleFitsRanks(const Manifest &m, const ScheduleInfo &sched,
                            const RankMap &ranks, std::string &error);

/// Whether `run`'s transfers to other ranks move device buffers: its
/// devices' memory is not the host's and the transport carries it
/// (Transport::carriesDeviceMemory), so nothing is staged through host
/// memory.
bool transportCarriesDeviceBuffers(const RunState &run);

/// Whether `run`'s data-parallel buckets of `dtype` are summed by the
/// transport on the devices' memory (Transport::reducesBuckets): replicas
/// on other ranks, one per rank, and device memory the host cannot address.
bool transportReducesBuckets(const RunState &run, int dtype);
/// Starts summing `count` elements of `dtype` at `data` (memory of
/// `device`) over the device's replicas, in place (Transport::allReduce).
int startReplicaReduce(RunState &run, int device, void *data, uint64_t count,
                       int dtype, uint64_t &request, std::string &error);
/// Waits for it under the watchdog (naming the replicas' ranks).
int finishReplicaReduce(RunState &run, int device, uint64_t request,
                        std::string &error);

/// Transfers between stages on devices of this rank go through `local`,
/// the others through the transport. `failed` is the run's flag: a wait
/// for a remote message stops when it is set. `deviceBuffers`: the
/// transport carries the devices' buffers (Transport::carriesDeviceMemory),
/// so a send's payload is a device buffer the caller keeps until its wait,
/// not bytes to copy.
std::unique_ptr<Communicator>
rankCommunicator(const RankMap &ranks, const Manifest &m,
                 const ScheduleInfo &sched, std::unique_ptr<Communicator> local,
                 double watchdogSeconds, const std::atomic<bool> &failed,
                 bool deviceBuffers);

/// A meeting of `participants` across ranks (reduce_grad of param `slot`,
/// clipping with slot = number of params): `device` sends `mine` (`bytes`,
/// null: zeros) to every remote participant and receives theirs into
/// `theirs` (remote device -> bytes). Remote participants only; blocks.
int exchangeWithRemote(RunState &run, int device, int slot, int step,
                       const std::set<int> &participants, const void *mine,
                       uint64_t bytes,
                       std::map<int, std::vector<unsigned char>> &theirs,
                       std::string &error);

/// Data parallelism: `device` sends its gradient of `param` at `step`
/// (`bytes` at `mine`) to the same device of every other replica and
/// receives theirs into `theirs` (replica -> bytes); blocks.
int exchangeWithReplicas(RunState &run, int device, int param, int step,
                         const void *mine, uint64_t bytes,
                         std::map<int, std::vector<unsigned char>> &theirs,
                         std::string &error);

/// Messages exchanged with peers, each way: posted by startExchange (or
/// startExchangeEach), completed by finishExchange (which names a late
/// peer). `theirs` and the data sent must stay in place until then.
struct Exchange {
  /// The device (or replica) a peer stands for, its rank, the tags of the
  /// message each way and what a late peer is called; for
  /// startExchangeEach, what goes to it and how many bytes come back.
  struct Peer {
    int key, rank, sendTag, recvTag;
    std::string name;
    const void *out = nullptr;
    uint64_t outBytes = 0, inBytes = 0;
  };
  std::vector<Peer> peers;
  std::vector<std::vector<uint64_t>> requests;
  /// peer.key -> the bytes it sent.
  std::map<int, std::vector<unsigned char>> theirs;
};
int startExchange(RunState &run, Exchange &x, const void *mine, uint64_t bytes,
                  std::string &error);
/// Each peer's own message (`out`, `outBytes`) and `inBytes` from it.
int startExchangeEach(RunState &run, Exchange &x, std::string &error);
int finishExchange(RunState &run, Exchange &x, std::string &error);
/// The peers of `device`'s exchange with the same device of every other
/// replica, for meeting slot `slot` (a param, or a bucket's first param)
/// at `step`, into `x.peers`.
void replicaExchange(RunState &run, int device, int slot, int step,
                     Exchange &x);

/// What a run measured on each device (peak bytes; bytes per device and
/// Lane, at device * 3 + lane); a rank sees only its own devices'.
struct RunFigures {
  std::vector<int64_t> peak;
  std::vector<double> copied;
};

/// After a successful run on every rank (collective): every rank gets every
/// loss of the run and every device's figures.
int agreeAfterRun(RunState &run, RunFigures &figures, std::string &error);

} // namespace pipe_rt

#endif // PIPE_RUNTIME_RANKS_H
