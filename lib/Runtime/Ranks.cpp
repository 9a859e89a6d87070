//===- Ranks.cpp - The ranks room of a distributed run --------------------===//
//
// Tags (docs/distributed.md): a transfer's tag is made of its step (modulo a
// window that keeps the tag under the transport's maximum), micro-batch,
// stage pair and kind; a meeting's of its step, param and device pair, on
// the other channel. Messages with equal tags between two ranks are then
// always posted in the same order on both sides (one device thread posts
// each stage's transfers in program order), and MPI's non-overtaking rule
// matches them in that order.
//
//===----------------------------------------------------------------------===//

#include "Ranks.h"

#include "Executor.h"
#include "Format.h"

#include "pipe/Runtime/Comm.h"

#include <chrono>
#include <cstring>
#include <functional>
#include <set>
#include <thread>

using namespace pipe_rt;

Transport::~Transport() = default;

namespace {

using Clock = std::chrono::steady_clock;

/// Messages of one step that may share a tag window, and the window: the
/// most steps whose tags fit under `maxTag` (at least one).
struct TagSpace {
  uint64_t perStep = 1;
  uint64_t window = 1;
  bool fits = false;
  TagSpace(uint64_t perStep, int steps, int maxTag) : perStep(perStep) {
    uint64_t capacity = uint64_t(maxTag) + 1;
    fits = perStep <= capacity;
    window = fits
                 ? std::max<uint64_t>(1, std::min<uint64_t>(uint64_t(steps),
                                                            capacity / perStep))
                 : 1;
  }
  int tag(int step, uint64_t withinStep) const {
    return int((uint64_t(step) % window) * perStep + withinStep);
  }
};

/// The most devices a schedule of `m` uses: the range of transfer link
/// tags.
int manifestDevices(const Manifest &m) {
  int devices = 1;
  for (const ScheduleInfo &sched : m.schedules)
    devices = std::max(devices, sched.devices);
  return devices;
}

TagSpace transferTags(const Manifest &m, const ScheduleInfo &sched,
                      int maxTag) {
  uint64_t stages = m.stages.size();
  return TagSpace(uint64_t(sched.microbatches) * stages * stages * 2,
                  sched.steps, maxTag);
}

TagSpace meetingTags(const Manifest &m, const ScheduleInfo &sched, int maxTag) {
  uint64_t devices = uint64_t(sched.devices);
  return TagSpace((m.params.size() + 1) * devices * devices, sched.steps,
                  maxTag);
}

/// Polls `requests` until all completed; fails past `watchdogSeconds` with
/// `late` or, once `failed` is set, with PIPE_RT_ABORTED.
int waitAll(Transport &t, std::vector<uint64_t> &requests,
            double watchdogSeconds, const std::atomic<bool> &failed,
            const std::string &late, std::string &error) {
  Clock::time_point start = Clock::now();
  auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(watchdogSeconds));
  for (unsigned spins = 0;; ++spins) {
    bool all = true;
    for (uint64_t &r : requests) {
      if (!r)
        continue;
      bool done = false;
      if (int st = t.test(r, done, error))
        return st;
      if (done)
        r = 0;
      else
        all = false;
    }
    if (all)
      break;
    if (failed.load()) {
      error = "aborted: another device failed";
      return PIPE_RT_ABORTED;
    }
    if (Clock::now() > deadline) {
      error = late;
      return PIPE_RT_TIMEOUT;
    }
    // Spin briefly (a message often lands within microseconds), then back
    // off so that a waiting device leaves the core to the compute threads.
    if (spins < 64)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  t.waitNanoseconds += uint64_t(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start)
          .count());
  return PIPE_RT_OK;
}

/// Messages above 1 GiB go in several parts (MPI counts are ints).
constexpr uint64_t kMaxPart = uint64_t(1) << 30;

int post(Transport &t, bool isSend, Transport::Channel channel, int peer,
         int tag, void *data, uint64_t bytes, std::vector<uint64_t> &requests,
         std::string &error) {
  uint64_t at = 0;
  do {
    uint64_t part = std::min(kMaxPart, bytes - at);
    uint64_t request = 0;
    char *p = static_cast<char *>(data) + at;
    int st = isSend ? t.isend(channel, peer, tag, p, part, request, error)
                    : t.irecv(channel, peer, tag, p, part, request, error);
    if (st != PIPE_RT_OK)
      return st;
    requests.push_back(request);
    at += part;
  } while (at < bytes);
  return PIPE_RT_OK;
}

class RankCommunicator final : public Communicator {
public:
  RankCommunicator(const RankMap &ranks, const Manifest &m,
                   const ScheduleInfo &sched,
                   std::unique_ptr<Communicator> local, double watchdogSeconds,
                   const std::atomic<bool> &failed, bool deviceBuffers)
      : ranks(ranks), m(m), local(std::move(local)),
        devices(manifestDevices(m)),
        tags(transferTags(m, sched, ranks.transport->maxTag())),
        watchdogSeconds(watchdogSeconds), failed(failed),
        deviceBuffers(deviceBuffers) {}

  int send(int device, const pipe_rt_channel_key &key, const void *payload,
           uint64_t bytes, pipe_rt_token &token, std::string &error) override {
    int peer = m.stages[key.dst_stage].device;
    if (ranks.isLocal(peer))
      return local->send(device, key, payload, bytes, token, error);
    Pending p;
    p.peer = peer;
    p.sending = true;
    // Bytes are the caller's until it returns: keep a copy until the send
    // completed. A device buffer stays the caller's until the wait.
    const void *data = payload;
    if (!deviceBuffers) {
      const auto *bytesIn = static_cast<const unsigned char *>(payload);
      p.buffer.assign(bytesIn, bytesIn + bytes);
      data = nullptr;
    }
    ranks.transport->sentBytes += bytes;
    return postRemote(key, std::move(p), const_cast<void *>(data), bytes, token,
                      error);
  }

  int recv(int device, const pipe_rt_channel_key &key, void *target,
           uint64_t bytes, pipe_rt_token &token, std::string &error) override {
    int peer = m.stages[key.src_stage].device;
    if (ranks.isLocal(peer))
      return local->recv(device, key, target, bytes, token, error);
    Pending p;
    p.peer = peer;
    ranks.transport->receivedBytes += bytes;
    return postRemote(key, std::move(p), target, bytes, token, error);
  }

  int wait(int device, pipe_rt_token token, std::string &error) override {
    if (!(token & kRemote))
      return local->wait(device, token, error);
    Pending p;
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = pending.find(token);
      if (it == pending.end()) {
        error = "unknown transfer token";
        return PIPE_RT_INVALID_ARGUMENT;
      }
      p = std::move(it->second);
      pending.erase(it);
    }
    int rank = ranks.rankOf(p.peer);
    std::string late = format(
        "device %d: %s %s: rank %d (device %d) %s within %g s: is rank %d "
        "stuck?",
        device, p.sending ? "send" : "recv", describeChannelKey(p.key).c_str(),
        rank, p.peer, p.sending ? "took nothing" : "sent nothing",
        watchdogSeconds, rank);
    return waitAll(*ranks.transport, p.requests, watchdogSeconds, failed, late,
                   error);
  }

private:
  struct Pending {
    int peer = -1;
    bool sending = false;
    pipe_rt_channel_key key{};
    std::vector<unsigned char> buffer; // a send's copy of the payload
    std::vector<uint64_t> requests;
  };
  static constexpr pipe_rt_token kRemote = pipe_rt_token(1) << 63;

  /// A transfer's place among the tags of its step.
  uint64_t withinStep(const pipe_rt_channel_key &key) const {
    uint64_t stages = m.stages.size();
    return ((uint64_t(key.micro_batch) * stages + uint64_t(key.src_stage)) *
                stages +
            uint64_t(key.dst_stage)) *
               2 +
           uint64_t(key.kind);
  }
  /// A transport that matches transfers by order alone: the pair of
  /// devices, sender first (a key's source stage sends, whatever it
  /// carries).
  int devicePairTag(const pipe_rt_channel_key &key) const {
    return transferLinkTag(m.stages[key.src_stage].device,
                           m.stages[key.dst_stage].device, devices);
  }

  /// `data`: a recv's target, a send's device buffer, or null for a send's
  /// copy (the vector's heap buffer, which stays where it is when `p`
  /// moves).
  int postRemote(const pipe_rt_channel_key &key, Pending p, void *data,
                 uint64_t bytes, pipe_rt_token &token, std::string &error) {
    p.key = key;
    if (!data)
      data = p.buffer.data();
    int tag = ranks.transport->matchesTransfersByOrder()
                  ? devicePairTag(key)
                  : tags.tag(key.step, withinStep(key));
    if (int st =
            post(*ranks.transport, p.sending, Transport::Channel::Transfers,
                 ranks.rankOf(p.peer), tag, data, bytes, p.requests, error))
      return st;
    std::lock_guard<std::mutex> lock(mu);
    token = kRemote | next++;
    pending.emplace(token, std::move(p));
    return PIPE_RT_OK;
  }

  const RankMap &ranks;
  const Manifest &m;
  std::unique_ptr<Communicator> local;
  int devices;
  TagSpace tags;
  double watchdogSeconds;
  const std::atomic<bool> &failed;
  bool deviceBuffers;
  std::mutex mu;
  std::map<pipe_rt_token, Pending> pending;
  pipe_rt_token next = 1;
};

} // namespace

//===----------------------------------------------------------------------===//
// Agreements
//===----------------------------------------------------------------------===//

namespace {

/// Waits for the one request of `rank`, naming it when it is late.
int waitForRank(Transport &t, uint64_t request, int rank, const char *what,
                std::string &error) {
  std::vector<uint64_t> one = {request};
  std::atomic<bool> never{false};
  return waitAll(t, one, t.watchdogSeconds, never,
                 format("rank %d did not join %s within %g s: is rank %d "
                        "stuck?",
                        rank, what, t.watchdogSeconds, rank),
                 error);
}

/// Rank 0 gathers every rank's `bytes` and folds them in rank order with
/// `combine(into, from)`, then sends the result back: the same bytes
/// everywhere.
int agree(Transport &t, void *data, uint64_t bytes,
          const std::function<void(void *, const void *)> &combine,
          const char *what, std::string &error) {
  int tag = int(t.agreements++ % (uint64_t(t.maxTag()) + 1));
  auto channel = Transport::Channel::Agreements;
  std::vector<uint64_t> requests;
  if (t.rank() != 0) {
    // The answer lands in `data`, which must not be received into while
    // the send from it is pending: rank 0 answers only after it got every
    // rank's, so waiting for the send first costs nothing.
    for (bool sending : {true, false}) {
      requests.clear();
      if (int st =
              post(t, sending, channel, 0, tag, data, bytes, requests, error))
        return st;
      for (uint64_t r : requests)
        if (int st = waitForRank(t, r, 0, what, error))
          return st;
    }
    return PIPE_RT_OK;
  }
  std::vector<unsigned char> theirs(bytes);
  for (int rank = 1; rank < t.size(); ++rank) {
    requests.clear();
    if (int st = post(t, false, channel, rank, tag, theirs.data(), bytes,
                      requests, error))
      return st;
    for (uint64_t r : requests)
      if (int st = waitForRank(t, r, rank, what, error))
        return st;
    combine(data, theirs.data());
  }
  for (int rank = 1; rank < t.size(); ++rank) {
    requests.clear();
    if (int st =
            post(t, true, channel, rank, tag, data, bytes, requests, error))
      return st;
    for (uint64_t r : requests)
      if (int st = waitForRank(t, r, rank, what, error))
        return st;
  }
  return PIPE_RT_OK;
}

} // namespace

int pipe_rt::agreeSum(Transport &t, double *data, uint64_t count,
                      const char *what, std::string &error) {
  return agree(
      t, data, count * sizeof(double),
      [count](void *into, const void *from) {
        for (uint64_t i = 0; i < count; ++i)
          static_cast<double *>(into)[i] +=
              static_cast<const double *>(from)[i];
      },
      what, error);
}

int pipe_rt::agreeMax(Transport &t, int64_t *data, uint64_t count,
                      const char *what, std::string &error) {
  return agree(
      t, data, count * sizeof(int64_t),
      [count](void *into, const void *from) {
        for (uint64_t i = 0; i < count; ++i)
          static_cast<int64_t *>(into)[i] =
              std::max(static_cast<int64_t *>(into)[i],
                       static_cast<const int64_t *>(from)[i]);
      },
      what, error);
}

int pipe_rt::agreeOn(Transport &t, int root, void *data, uint64_t bytes,
                     const char *what, std::string &error) {
  int tag = int(t.agreements++ % (uint64_t(t.maxTag()) + 1));
  auto channel = Transport::Channel::Agreements;
  bool sending = t.rank() == root;
  for (int peer = 0; peer < t.size(); ++peer) {
    // The root sends to every other rank; the others receive from it.
    if (peer == t.rank() || (!sending && peer != root))
      continue;
    std::vector<uint64_t> requests;
    if (int st =
            post(t, sending, channel, peer, tag, data, bytes, requests, error))
      return st;
    for (uint64_t r : requests)
      if (int st = waitForRank(t, r, peer, what, error))
        return st;
  }
  return PIPE_RT_OK;
}

std::vector<int> pipe_rt::placesOnHost(const RankMap &ranks, int slots,
                                       int devices) {
  if (!ranks.transport)
    return {};
  std::vector<int> places(size_t(slots), -1);
  int own = 0;
  for (int s = 0; s < slots; ++s)
    own += ranks.isLocal(s % devices);
  int next = ranks.transport->localRank() * own;
  for (int s = 0; s < slots; ++s)
    if (ranks.isLocal(s % devices))
      places[size_t(s)] = next++;
  return places;
}

bool pipe_rt::checkScheduleReplicas(const ScheduleInfo &sched, int replicas,
                                    std::string &error) {
  if (sched.replicas == replicas)
    return true;
  std::string fix =
      sched.replicas > replicas
          ? format("launch a multiple of %d ranks with mpirun", sched.replicas)
          : format("compile it for them (pipe-opt --pipe-place=replicas=%d, "
                   "pipe-train --data-parallel %d)",
                   replicas, replicas);
  error = format("schedule '%s' was compiled for %d data-parallel "
                 "replica%s, but %d run it: %s",
                 sched.name.c_str(), sched.replicas,
                 sched.replicas == 1 ? "" : "s", replicas, fix.c_str());
  return false;
}

bool pipe_rt::checkScheduleFitsRanks(const Manifest &m,
                                     const ScheduleInfo &sched,
                                     const RankMap &ranks, std::string &error) {
  Transport &t = *ranks.transport;
  if (!checkScheduleReplicas(sched, ranks.replicas * ranks.replicasPerRank,
                             error))
    return false;
  int covered = ranks.ranksPerReplica * ranks.devicesPerRank;
  if (sched.devices != covered) {
    std::string replicas =
        ranks.replicas > 1 ? format(" (of %d replicas)", ranks.replicas) : "";
    error =
        format("schedule '%s' runs on %d devices, but %d ranks%s x %d "
               "devices per rank are %d: launch %d ranks%s",
               sched.name.c_str(), sched.devices, ranks.ranksPerReplica,
               replicas.c_str(), ranks.devicesPerRank, covered,
               ranks.replicas * ((sched.devices + ranks.devicesPerRank - 1) /
                                 ranks.devicesPerRank),
               sched.devices % ranks.devicesPerRank
                   ? " (with another --devices-per-rank)"
                   : "");
    return false;
  }
  // A parameter server serves the devices of its process: each rank must
  // run whole replicas (their ps.reduce exchanges the ranks' gradients).
  if (ranks.ranksPerReplica > 1)
    for (bool ps : sched.psStage)
      if (ps) {
        error = format("schedule '%s' has parameter-server stages, whose "
                       "server serves the devices of its own process: "
                       "launch a number of ranks that divides its %d "
                       "replicas",
                       sched.name.c_str(), sched.replicas);
        return false;
      }
  if (t.matchesTransfersByOrder() && !sched.peerOrder) {
    error = format("schedule '%s' issues the transfers of some device pair in "
                   "different orders on its two sides, and this transport "
                   "(%s: transfers matched by order, as by NCCL) would "
                   "mismatch them: compile it with peer-order "
                   "(pipe-opt --pipe-schedule=\"... peer-order=true\")",
                   sched.name.c_str(), t.name());
    return false;
  }
  uint64_t devices = uint64_t(manifestDevices(m));
  bool pairTagsFit = devices * devices <= uint64_t(t.maxTag()) + 1;
  if (!(t.matchesTransfersByOrder()
            ? pairTagsFit
            : transferTags(m, sched, t.maxTag()).fits) ||
      !meetingTags(m, sched, t.maxTag()).fits) {
    error = format("schedule '%s': its messages of one step need more tags "
                   "than %s allows (%d)",
                   sched.name.c_str(), t.name(), t.maxTag());
    return false;
  }
  return true;
}

bool pipe_rt::transportCarriesDeviceBuffers(const RunState &run) {
  return run.ranks.transport && !run.memory->hostAccessible() &&
         run.ranks.transport->carriesDeviceMemory(run.memory.backend());
}

bool pipe_rt::transportReducesBuckets(const RunState &run, int dtype) {
  const RankMap &ranks = run.ranks;
  return ranks.transport && ranks.replicas > 1 && ranks.replicasPerRank == 1 &&
         run.localReplicas == 1 && !run.memory->hostAccessible() &&
         ranks.transport->reducesBuckets(run.memory.backend(), dtype);
}

int pipe_rt::startReplicaReduce(RunState &run, int device, void *data,
                                uint64_t count, int dtype, uint64_t &request,
                                std::string &error) {
  Transport &t = *run.ranks.transport;
  int st = t.allReduce(run.programDevice(device), data, count, dtype, request,
                       error);
  if (!st) {
    t.sentBytes += count * (dtype == PIPE_RT_DTYPE_F64 ? 8 : 4);
    ++t.allReduces;
  }
  return st;
}

int pipe_rt::finishReplicaReduce(RunState &run, int device, uint64_t request,
                                 std::string &error) {
  const RankMap &ranks = run.ranks;
  int programDevice = run.programDevice(device);
  std::string others;
  for (int q = 0; q < ranks.replicas; ++q)
    if (q != ranks.replica())
      others += (others.empty() ? "" : ", ") +
                std::to_string(ranks.rankOf(programDevice, q));
  double watchdog = run.session->options.watchdog_seconds;
  std::vector<uint64_t> one{request};
  return waitAll(*ranks.transport, one, watchdog, run.failed,
                 format("the replicas of device %d did not join the "
                        "all-reduce within %g s: is one of ranks %s stuck?",
                        programDevice, watchdog, others.c_str()),
                 error);
}

std::unique_ptr<Communicator> pipe_rt::rankCommunicator(
    const RankMap &ranks, const Manifest &m, const ScheduleInfo &sched,
    std::unique_ptr<Communicator> local, double watchdogSeconds,
    const std::atomic<bool> &failed, bool deviceBuffers) {
  return std::make_unique<RankCommunicator>(ranks, m, sched, std::move(local),
                                            watchdogSeconds, failed,
                                            deviceBuffers);
}

namespace {

/// Sends `mine` (`bytes`) to every peer and receives each one's into
/// `x.theirs[peer.key]`, then waits peer by peer so that a late one is
/// named.
int exchange(RunState &run, Exchange &x, const void *mine, uint64_t bytes,
             std::string &error) {
  if (int st = startExchange(run, x, mine, bytes, error))
    return st;
  return finishExchange(run, x, error);
}

/// The tag of a meeting's message of `slot` (a param; the number of params
/// for clipping) at `step` from device `from` to device `to`.
int meetingTag(const RunState &run, int slot, int step, int from, int to) {
  TagSpace tags =
      meetingTags(*run.m, *run.schedule, run.ranks.transport->maxTag());
  uint64_t devices = uint64_t(run.schedule->devices);
  return tags.tag(step, (uint64_t(slot) * devices + uint64_t(from)) * devices +
                            uint64_t(to));
}

} // namespace

int pipe_rt::startExchange(RunState &run, Exchange &x, const void *mine,
                           uint64_t bytes, std::string &error) {
  for (Exchange::Peer &peer : x.peers) {
    peer.out = mine;
    peer.outBytes = peer.inBytes = bytes;
  }
  return startExchangeEach(run, x, error);
}

int pipe_rt::startExchangeEach(RunState &run, Exchange &x, std::string &error) {
  Transport &t = *run.ranks.transport;
  auto channel = Transport::Channel::Meetings;
  x.requests.assign(x.peers.size(), {});
  for (size_t i = 0; i < x.peers.size(); ++i) {
    const Exchange::Peer &peer = x.peers[i];
    std::vector<unsigned char> &in = x.theirs[peer.key];
    in.resize(peer.inBytes);
    if (int st = post(t, true, channel, peer.rank, peer.sendTag,
                      const_cast<void *>(peer.out), peer.outBytes,
                      x.requests[i], error))
      return st;
    if (int st = post(t, false, channel, peer.rank, peer.recvTag, in.data(),
                      peer.inBytes, x.requests[i], error))
      return st;
    t.sentBytes += peer.outBytes;
    t.receivedBytes += peer.inBytes;
  }
  return t.flush(error);
}

int pipe_rt::finishExchange(RunState &run, Exchange &x, std::string &error) {
  Transport &t = *run.ranks.transport;
  double watchdog = run.session->options.watchdog_seconds;
  for (size_t i = 0; i < x.peers.size(); ++i)
    if (int st =
            waitAll(t, x.requests[i], watchdog, run.failed,
                    format("%s did not join within %g s: is rank %d "
                           "stuck?",
                           x.peers[i].name.c_str(), watchdog, x.peers[i].rank),
                    error))
      return st;
  return PIPE_RT_OK;
}

void pipe_rt::replicaExchange(RunState &run, int device, int slot, int step,
                              Exchange &x) {
  const RankMap &ranks = run.ranks;
  // The pair (device, device): a reduce_grad's pairs are of two devices.
  int tag = meetingTag(run, slot, step, device, device);
  x.peers.clear();
  for (int q = 0; q < ranks.replicas; ++q)
    if (q != ranks.replica())
      x.peers.push_back(
          {q, ranks.rankOf(device, q), tag, tag,
           format("replica %d (rank %d)", q, ranks.rankOf(device, q))});
}

int pipe_rt::exchangeWithRemote(
    RunState &run, int device, int slot, int step,
    const std::set<int> &participants, const void *mine, uint64_t bytes,
    std::map<int, std::vector<unsigned char>> &theirs, std::string &error) {
  const RankMap &ranks = run.ranks;
  std::vector<unsigned char> zeros;
  if (!mine) {
    zeros.assign(bytes, 0);
    mine = zeros.data();
  }
  Exchange x;
  for (int q : participants)
    if (!ranks.isLocal(q))
      x.peers.push_back({q, ranks.rankOf(q),
                         meetingTag(run, slot, step, device, q),
                         meetingTag(run, slot, step, q, device),
                         format("rank %d (device %d)", ranks.rankOf(q), q)});
  int st = exchange(run, x, mine, bytes, error);
  theirs = std::move(x.theirs);
  return st;
}

int pipe_rt::exchangeWithReplicas(
    RunState &run, int device, int param, int step, const void *mine,
    uint64_t bytes, std::map<int, std::vector<unsigned char>> &theirs,
    std::string &error) {
  Exchange x;
  replicaExchange(run, device, param, step, x);
  int st = exchange(run, x, mine, bytes, error);
  theirs = std::move(x.theirs);
  return st;
}

int pipe_rt::agreeAfterRun(RunState &run, RunFigures &figures,
                           std::string &error) {
  Transport &t = *run.ranks.transport;
  // Two agreements: the sums (each loss slot, one per replica's
  // micro-batch, is computed on one rank and is 0 elsewhere, so the sum
  // gathers it exactly; the copy counters) and the maxima (which losses
  // were seen; other ranks' devices' peaks, 0 here).
  size_t numLosses = run.losses.size();
  std::vector<double> sums(run.losses.begin(), run.losses.end());
  sums.insert(sums.end(), figures.copied.begin(), figures.copied.end());
  // Metric counts add up across ranks like the copy counters (exact in a
  // double below 2^53).
  sums.insert(sums.end(), run.metricTotals.begin(), run.metricTotals.end());
  std::vector<int64_t> maxima(run.lossSeen.begin(), run.lossSeen.end());
  maxima.insert(maxima.end(), figures.peak.begin(), figures.peak.end());
  const char *what = "the agreement after the run";
  if (int st = agreeSum(t, sums.data(), sums.size(), what, error))
    return st;
  if (int st = agreeMax(t, maxima.data(), maxima.size(), what, error))
    return st;
  auto copiedEnd = sums.begin() + numLosses + figures.copied.size();
  std::copy(sums.begin() + numLosses, copiedEnd, figures.copied.begin());
  std::transform(copiedEnd, sums.end(), run.metricTotals.begin(),
                 [](double v) { return int64_t(v); });
  std::copy(maxima.begin() + numLosses, maxima.end(), figures.peak.begin());
  for (size_t i = 0; i < numLosses; ++i) {
    run.losses[i] = float(sums[i]);
    run.lossSeen[i] = maxima[i] != 0;
  }
  return PIPE_RT_OK;
}

int pipe_rt::shareParams(pipe_rt_session *session, std::string &error) {
  Transport *transport = session ? session->ranks.transport.get() : nullptr;
  if (!transport)
    return PIPE_RT_OK;
  Transport &t = *transport;
  const Manifest &m = session->manifest;
  const char *what = "sharing the params";
  for (size_t p = 0; p < m.params.size(); ++p) {
    // The committed copy is the one of the lowest device reading the param.
    int lowest = -1;
    for (int stage : m.paramReaders[p])
      if (lowest < 0 || m.stages[stage].device < lowest)
        lowest = m.stages[stage].device;
    if (lowest < 0)
      continue;
    int root = session->ranks.rankOf(lowest, /*replica=*/0);
    SessionParam &sp = session->params[p];
    int64_t sizes[3] = {int64_t(sp.state0.size()), int64_t(sp.state1.size()),
                        sp.step};
    if (int st = agreeOn(t, root, sizes, sizeof(sizes), what, error))
      return st;
    sp.state0.resize(size_t(sizes[0]));
    sp.state1.resize(size_t(sizes[1]));
    sp.step = sizes[2];
    for (auto [data, bytes] :
         {std::make_pair<void *, uint64_t>(sp.value.data(), sp.value.size()),
          std::make_pair<void *, uint64_t>(sp.state0.data(),
                                           sp.state0.size() * sizeof(float)),
          std::make_pair<void *, uint64_t>(sp.state1.data(),
                                           sp.state1.size() * sizeof(float))})
      if (bytes)
        if (int st = agreeOn(t, root, data, bytes, what, error))
          return st;
    if (root != t.rank() && p < session->psShadows.size())
      session->psShadows[p].valid = false;
  }
  return PIPE_RT_OK;
}

//===----------------------------------------------------------------------===//
// Attaching a session
//===----------------------------------------------------------------------===//

namespace {

/// The device pairs on different ranks that the transfers of `m`'s
/// schedules cross (activations along each edge, gradients back), over
/// every replica, sorted.
std::vector<Transport::Link> crossRankLinks(const Manifest &m,
                                            const RankMap &ranks) {
  std::set<Transport::Link> links;
  for (const auto &[edge, values] : m.edges) {
    int producer = m.stages[edge.first].device;
    int consumer = m.stages[edge.second].device;
    for (int r = 0; r < ranks.replicas; ++r) {
      int from = ranks.rankOf(producer, r), to = ranks.rankOf(consumer, r);
      if (from == to)
        continue;
      links.insert({from, to, producer, consumer});
      links.insert({to, from, consumer, producer});
    }
  }
  return {links.begin(), links.end()};
}

} // namespace

int pipe_rt::programDevices(const pipe_rt_session *session) {
  return manifestDevices(session->manifest);
}

int pipe_rt::programReplicas(const pipe_rt_session *session) {
  int replicas = 1;
  for (const ScheduleInfo &sched : session->manifest.schedules)
    replicas = std::max(replicas, sched.replicas);
  return replicas;
}

int pipe_rt::attachTransport(pipe_rt_session *session,
                             std::shared_ptr<Transport> transport,
                             int devicesPerRank, int replicas,
                             std::string &error, uint64_t optionsFingerprint) {
  if (!session || !transport || devicesPerRank < 1 || replicas < 1) {
    error = "attachTransport: no session or transport, or devices per rank "
            "or replicas < 1";
    return PIPE_RT_INVALID_ARGUMENT;
  }
  // A parameter-server program's replicas share their rank's server: a
  // rank runs several when there are more replicas than ranks.
  bool psReplicas = false;
  for (const ScheduleInfo &sched : session->manifest.schedules)
    psReplicas |= sched.replicas > 1 && sched.hasPsStages();
  int size = transport->size();
  bool grouped = psReplicas && replicas > size && replicas % size == 0;
  if (size % replicas != 0 && !grouped) {
    error = format("%d ranks do not make %d data-parallel replicas (the rank "
                   "count must be a multiple of --data-parallel%s)",
                   size, replicas,
                   psReplicas ? ", or divide it: a rank's parameter server "
                                "serves whole replicas"
                              : "");
    return PIPE_RT_INVALID_ARGUMENT;
  }
  RankMap ranks{transport, devicesPerRank, grouped ? size : replicas,
                grouped ? 1 : size / replicas, grouped ? replicas / size : 1};
  // Every rank must run the same program with the same rank layout: compare
  // with rank 0's, then agree on the outcome so that all ranks stop together.
  int64_t mine[4] = {int64_t(session->manifestHash), devicesPerRank, replicas,
                     int64_t(optionsFingerprint)};
  int64_t rank0[4] = {mine[0], mine[1], mine[2], mine[3]};
  transport->watchdogSeconds = session->options.watchdog_seconds;
  const char *what = "the start-up check";
  if (int st = agreeOn(*transport, 0, rank0, sizeof(rank0), what, error))
    return st;
  // The first rank that differs, and in what (1: program or layout, 2: the
  // training options).
  bool layout =
      mine[0] != rank0[0] || mine[1] != rank0[1] || mine[2] != rank0[2];
  bool options = mine[3] != rank0[3];
  int64_t differs[2] = {layout ? transport->rank() : 0,
                        options ? transport->rank() : 0};
  if (int st = agreeMax(*transport, differs, 2, what, error))
    return st;
  if (differs[0]) {
    error =
        format("rank %d loaded another program than rank 0, or has "
               "another --devices-per-rank or --data-parallel (every rank must "
               "run the same artifact with the same options)",
               int(differs[0]));
    return PIPE_RT_INVALID_ARGUMENT;
  }
  if (differs[1]) {
    error = format("rank %d has other training options than rank 0 (the "
                   "optimizer, learning rate and its schedule, steps, seed, "
                   "clipping, evaluation or checkpoint settings): every rank "
                   "must run the same command",
                   int(differs[1]));
    return PIPE_RT_INVALID_ARGUMENT;
  }
  for (const ScheduleInfo &sched : session->manifest.schedules)
    if (!checkScheduleFitsRanks(session->manifest, sched, ranks, error))
      return PIPE_RT_INVALID_ARGUMENT;
  std::vector<int> places =
      placesOnHost(ranks, programDevices(session), programDevices(session));
  if (int st = transport->connect(crossRankLinks(session->manifest, ranks),
                                  places, error))
    return st;
  // The groups of each device's replicas, for a transport that sums the
  // buckets itself.
  if (ranks.replicas > 1 && ranks.replicasPerRank == 1) {
    std::vector<std::vector<int>> groups(size_t(programDevices(session)));
    for (size_t d = 0; d < groups.size(); ++d)
      for (int q = 0; q < ranks.replicas; ++q)
        groups[d].push_back(ranks.rankOf(int(d), q));
    if (int st = transport->connectReplicas(groups, places, error))
      return st;
  }
  session->ranks = std::move(ranks);
  // The rank runs only its own devices: the host optimizer's default share
  // of the cores follows.
  return resizeHostOptimizer(*session, error);
}
