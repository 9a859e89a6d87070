//===- PeerOrderTest.cpp - Recvs in their peer's send order ---------------===//

#include "pipe/Scheduling/ScheduleChecker.h"
#include "pipe/Scheduling/ScheduleGenerator.h"
#include "pipe/Scheduling/Simulator.h"

#include <gtest/gtest.h>

#include <map>

using namespace mlir;
using namespace mlir::pipe;

namespace {

/// Pipelines whose device pairs carry transfers of several stage pairs:
/// round-robin (interleaved) placements, a Mixed-Pipe-like one with
/// non-adjacent stages on a device, and two replicas of one.
std::vector<std::pair<std::string, Pipeline>> sharedPairs() {
  std::vector<std::pair<std::string, Pipeline>> cases;
  cases.push_back(
      {"4 stages on 2 devices", Pipeline::makeChain(4, 2, 1, 1, 1)});
  cases.push_back(
      {"8 stages on 4 devices", Pipeline::makeChain(8, 4, 1, 2, 1, 10, 5)});
  Pipeline mixed = Pipeline::makeChain(5, 2, 1, 1, 1, 10, 5);
  for (unsigned s : {0u, 3u, 4u})
    mixed.stages[s].device = 0;
  for (unsigned s : {1u, 2u})
    mixed.stages[s].device = 1;
  cases.push_back({"mixed 0,3,4 | 1,2", mixed});
  Pipeline replicated = Pipeline::makeChain(4, 2, 1, 1, 1, 10, 5, 100);
  replicated.replicas = 2;
  cases.push_back({"2 replicas", replicated});
  return cases;
}

std::vector<ScheduleAction>
othersThanRecvs(const SmallVector<ScheduleAction> &list) {
  std::vector<ScheduleAction> sends;
  for (const ScheduleAction &a : list)
    if (a.kind != ActionKind::Recv)
      sends.push_back(a);
  return sends;
}

TEST(PeerOrder, EveryKindPostsRecvsInTheSendersOrder) {
  unsigned unorderedBefore = 0, checked = 0;
  for (auto &[name, pipeline] : sharedPairs())
    for (const std::string &kind : getScheduleGeneratorNames()) {
      ScheduleOptions options;
      options.microbatches = 6;
      options.steps = getScheduleTraits(kind)->asynchronous ? 2 : 1;
      FailureOr<Schedule> plain =
          generateSchedule(kind, pipeline, options, [](const Twine &) {});
      if (failed(plain))
        continue; // a kind that does not suit this placement
      options.peerOrder = true;
      std::string error;
      FailureOr<Schedule> ordered = generateSchedule(
          kind, pipeline, options, [&](const Twine &m) { error = m.str(); });
      ASSERT_TRUE(succeeded(ordered)) << name << ", " << kind << ": " << error;
      ++checked;

      ScheduleCheckOptions peerOrder;
      peerOrder.checkPeerOrder = true;
      unorderedBefore +=
          !checkSchedule(pipeline, *plain, nullptr, peerOrder).empty();
      for (const ScheduleViolation &v :
           checkSchedule(pipeline, *ordered, nullptr, peerOrder))
        ADD_FAILURE() << name << ", " << kind << ": " << v.message;

      // Only recvs moved, and only earlier: every other action keeps its
      // place relative to the others, and nothing takes longer.
      for (unsigned d = 0; d < plain->devices.size(); ++d) {
        ASSERT_EQ(plain->devices[d].size(), ordered->devices[d].size());
        std::vector<ScheduleAction> before = othersThanRecvs(plain->devices[d]),
                                    after =
                                        othersThanRecvs(ordered->devices[d]);
        for (size_t i = 0; i < before.size(); ++i)
          EXPECT_EQ(before[i].describe(pipeline), after[i].describe(pipeline))
              << name << ", " << kind << ", device " << d;
        // A recv's place: how many other actions precede it.
        auto placesOfRecvs = [&](const SmallVector<ScheduleAction> &list) {
          std::map<std::string, size_t> place;
          size_t others = 0;
          for (const ScheduleAction &a : list)
            if (a.kind == ActionKind::Recv)
              place[a.describe(pipeline)] = others;
            else
              ++others;
          return place;
        };
        std::map<std::string, size_t> was = placesOfRecvs(plain->devices[d]);
        for (auto &[recv, place] : placesOfRecvs(ordered->devices[d]))
          EXPECT_LE(place, was.at(recv))
              << name << ", " << kind << ": " << recv;
      }
      MachineModel machine = MachineModel::makeIdeal(pipeline.numDevices);
      auto time = [&](const Schedule &s) {
        FailureOr<SimulationReport> report =
            simulate(pipeline, s, machine, {}, [](const Twine &) {});
        return succeeded(report) ? report->stepTime : -1.0;
      };
      EXPECT_LE(time(*ordered), time(*plain) * (1 + 1e-12))
          << name << ", " << kind;
    }
  EXPECT_GE(checked, 16u);
  // Without the option the shared pairs are out of order somewhere.
  EXPECT_GE(unorderedBefore, 4u);
}

} // namespace
