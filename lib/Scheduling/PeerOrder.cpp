//===- PeerOrder.cpp - Recvs in the order their peer sends ----------------===//
//
// NCCL's point-to-point messages carry no tag: between two devices the k-th
// recv one posts takes the k-th message the other sends. Generators order
// each device's transfers by its own compute order, and where a device pair
// carries transfers of several stage pairs (interleaved and Mixed-Pipe
// placements) the two sides then disagree. This moves recvs, never sends:
// each receiver posts its recvs from a peer in the peer's send order, each
// one no later than before, so every wait still follows its recv and no
// action waits for anything new.
//
//===----------------------------------------------------------------------===//

#include "pipe/Scheduling/Schedule.h"

#include <limits>
#include <map>
#include <tuple>

using namespace mlir;
using namespace mlir::pipe;

namespace {

using MessageKey = std::tuple<bool, int, int, int, unsigned>;

MessageKey keyOf(const ScheduleAction &a) {
  return {a.gradient, a.src, a.dst, a.microbatch, a.step};
}

/// The device at the other end of a transfer.
unsigned peerOf(const Pipeline &pipeline, const ScheduleAction &a) {
  return pipeline.stages[a.stage == a.src ? a.dst : a.src].device;
}

} // namespace

Schedule mlir::pipe::orderRecvsBySender(const Pipeline &pipeline,
                                        Schedule schedule) {
  unsigned numDevices = schedule.devices.size();
  // (sender, receiver) -> the messages in the sender's order.
  std::map<std::pair<unsigned, unsigned>, SmallVector<MessageKey>> sent;
  for (unsigned d = 0; d < numDevices; ++d)
    for (const ScheduleAction &a : schedule.devices[d])
      if (a.kind == ActionKind::Send && peerOf(pipeline, a) != d)
        sent[{d, peerOf(pipeline, a)}].push_back(keyOf(a));

  for (unsigned d = 0; d < numDevices; ++d) {
    SmallVector<ScheduleAction> &actions = schedule.devices[d];
    std::map<MessageKey, size_t> recvAt;
    std::map<unsigned, size_t> recvsFrom;
    for (size_t i = 0; i < actions.size(); ++i)
      if (actions[i].kind == ActionKind::Recv &&
          peerOf(pipeline, actions[i]) != d) {
        recvAt[keyOf(actions[i])] = i;
        ++recvsFrom[peerOf(pipeline, actions[i])];
      }

    // Each recv goes where the earliest recv of its message or of a later
    // one from the same peer was; the recvs placed at one spot keep the
    // sender's order.
    std::map<size_t, SmallVector<size_t>> placedAt;
    SmallVector<bool> placed(actions.size(), false);
    bool moved = false;
    for (unsigned peer = 0; peer < numDevices; ++peer) {
      auto it = sent.find({peer, d});
      if (it == sent.end() || recvsFrom[peer] != it->second.size())
        continue; // unmatched messages: left for the verifier to report
      SmallVector<size_t> from;
      for (const MessageKey &key : it->second) {
        auto at = recvAt.find(key);
        if (at == recvAt.end())
          break;
        from.push_back(at->second);
      }
      if (from.size() != it->second.size())
        continue;
      SmallVector<size_t> to(from.size());
      size_t bound = std::numeric_limits<size_t>::max();
      for (size_t k = from.size(); k-- > 0;)
        to[k] = bound = std::min(bound, from[k]);
      for (size_t k = 0; k < from.size(); ++k) {
        placedAt[to[k]].push_back(from[k]);
        placed[from[k]] = true;
        moved |= to[k] != from[k];
      }
    }
    if (!moved)
      continue;
    SmallVector<ScheduleAction> ordered;
    ordered.reserve(actions.size());
    for (size_t i = 0; i < actions.size(); ++i) {
      if (auto group = placedAt.find(i); group != placedAt.end())
        for (size_t r : group->second)
          ordered.push_back(actions[r]);
      if (!placed[i])
        ordered.push_back(actions[i]);
    }
    actions = std::move(ordered);
  }
  return schedule;
}
