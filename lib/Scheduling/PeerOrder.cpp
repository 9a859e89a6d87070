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

#include <deque>
#include <limits>
#include <map>
#include <set>

using namespace mlir;
using namespace mlir::pipe;

namespace {

/// The device at the other end of a transfer.
unsigned peerOf(const Pipeline &pipeline, const ScheduleAction &a) {
  return pipeline.stages[a.stage == a.src ? a.dst : a.src].device;
}

/// The transfers between two devices, as indices into their action lists.
using Order = SmallVector<int>;

/// (sender, receiver) -> its sends, and (sender, receiver) -> the
/// receiver's recvs from it, each in list order.
void collectTransfers(const Pipeline &pipeline, const Schedule &schedule,
                      std::map<std::pair<unsigned, unsigned>, Order> &sends,
                      std::map<std::pair<unsigned, unsigned>, Order> &recvs) {
  for (unsigned d = 0; d < schedule.devices.size(); ++d)
    for (int i = 0, e = schedule.devices[d].size(); i < e; ++i) {
      const ScheduleAction &a = schedule.devices[d][i];
      if (a.kind != ActionKind::Send && a.kind != ActionKind::Recv)
        continue;
      unsigned peer = peerOf(pipeline, a);
      if (peer == d)
        continue;
      if (a.kind == ActionKind::Send)
        sends[{d, peer}].push_back(i);
      else
        recvs[{peer, d}].push_back(i);
    }
}

} // namespace

SmallVector<PeerOrderMismatch>
mlir::pipe::findPeerOrderMismatches(const Pipeline &pipeline,
                                    const Schedule &schedule) {
  std::map<std::pair<unsigned, unsigned>, Order> sends, recvs;
  collectTransfers(pipeline, schedule, sends, recvs);
  std::set<std::pair<unsigned, unsigned>> pairs;
  for (const auto &[pair, order] : sends)
    pairs.insert(pair);
  for (const auto &[pair, order] : recvs)
    pairs.insert(pair);
  SmallVector<PeerOrderMismatch> mismatches;
  for (const std::pair<unsigned, unsigned> &pair : pairs) {
    const Order &sent = sends[pair], &received = recvs[pair];
    size_t k = 0;
    while (k < sent.size() && k < received.size() &&
           schedule.devices[pair.first][sent[k]].getTransferKey() ==
               schedule.devices[pair.second][received[k]].getTransferKey())
      ++k;
    if (k == sent.size() && k == received.size())
      continue;
    mismatches.push_back({pair.first, pair.second,
                          k < sent.size() ? sent[k] : -1,
                          k < received.size() ? received[k] : -1, unsigned(k)});
  }
  return mismatches;
}

Schedule mlir::pipe::orderRecvsBySender(const Pipeline &pipeline,
                                        Schedule schedule) {
  unsigned numDevices = schedule.devices.size();
  std::map<std::pair<unsigned, unsigned>, Order> sends, recvs;
  collectTransfers(pipeline, schedule, sends, recvs);

  // The indices above are into the lists as generated: reorder copies.
  Schedule result = schedule;
  for (unsigned d = 0; d < numDevices; ++d) {
    const SmallVector<ScheduleAction> &actions = schedule.devices[d];
    // A message sent twice (two edges between a stage pair) is received
    // in the order of its recvs.
    std::map<ScheduleAction::TransferKey, std::deque<size_t>> recvAt;
    for (unsigned peer = 0; peer < numDevices; ++peer)
      for (int i : recvs[{peer, d}])
        recvAt[actions[i].getTransferKey()].push_back(i);

    // Each recv goes where the earliest recv of its message or of a later
    // one from the same peer was; the recvs placed at one spot keep the
    // sender's order.
    std::map<size_t, SmallVector<size_t>> placedAt;
    SmallVector<bool> placed(actions.size(), false);
    bool moved = false;
    for (unsigned peer = 0; peer < numDevices; ++peer) {
      auto it = sends.find({peer, d});
      if (it == sends.end() || recvs[{peer, d}].size() != it->second.size())
        continue; // unmatched messages: left for the verifier to report
      SmallVector<size_t> from;
      for (int i : it->second) {
        auto at = recvAt.find(schedule.devices[peer][i].getTransferKey());
        if (at == recvAt.end() || at->second.empty())
          break;
        from.push_back(at->second.front());
        at->second.pop_front();
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
    result.devices[d] = std::move(ordered);
  }
  return result;
}
