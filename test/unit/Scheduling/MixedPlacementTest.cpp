//===- MixedPlacementTest.cpp - Generators on Mixed-Pipe placements -------===//
//
// Placements where a device hosts several non-adjacent stages (the V-shaped
// stage -> device map [0,1,2,3,3,2,1,0] the Mixed-Pipe partitioner makes)
// and parameters tied across stages on different devices. Every kind must
// give schedules the checker accepts and the simulator plays to the end.
//
//===----------------------------------------------------------------------===//

#include "pipe/Scheduling/ScheduleChecker.h"
#include "pipe/Scheduling/ScheduleGenerator.h"
#include "pipe/Scheduling/Simulator.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::pipe;

namespace {

/// A chain of `devices.size()` stages with stage s on devices[s]; stage
/// costs vary so that the list scheduler sees uneven readiness.
Pipeline makePlaced(ArrayRef<unsigned> devices, unsigned numDevices) {
  Pipeline pipeline;
  pipeline.numDevices = numDevices;
  for (unsigned s = 0; s < devices.size(); ++s) {
    PipelineStage stage;
    stage.name = "s" + std::to_string(s);
    stage.device = devices[s];
    stage.forwardTime = 1e-3 * (1 + s % 3);
    stage.backwardInputTime = 1e-3 * (1 + (s + 1) % 2);
    stage.backwardWeightTime = 1e-3;
    stage.savedBytes = 10;
    stage.paramBytes = 64;
    stage.paramCount = 32;
    pipeline.stages.push_back(stage);
    if (s > 0)
      pipeline.edges.push_back({s - 1, s, 8});
  }
  return pipeline;
}

struct Case {
  const char *name;
  Pipeline pipeline;
};

std::vector<Case> makeCases() {
  std::vector<Case> cases;
  const unsigned vShape[] = {0, 1, 2, 3, 3, 2, 1, 0};
  // Tied embedding on the first and last stage, both on device 0.
  Pipeline v = makePlaced(vShape, 4);
  v.sharedParams.push_back({"wte", 64, {0, 7}});
  cases.push_back({"v-shape", v});
  // Encoder embedding, decoder embedding and LM head tied across devices
  // 0, 3 and 1: the devices hosting readers differ from the ends.
  Pipeline t5 = makePlaced(vShape, 4);
  t5.sharedParams.push_back({"shared", 64, {0, 4, 6}});
  t5.sharedParams.push_back({"rel_bias", 16, {5, 2}});
  cases.push_back({"v-shape-tied-across-devices", t5});
  // Devices hosting two stages that are not mirror images.
  const unsigned mixed[] = {0, 1, 0, 2, 1, 2};
  Pipeline m = makePlaced(mixed, 3);
  m.sharedParams.push_back({"wte", 64, {0, 5}});
  cases.push_back({"interleaved-non-adjacent", m});
  // A DAG: s0 -> {s1, s2} -> s3, with s0 and s3 on different devices.
  const unsigned diamond[] = {0, 1, 0, 1};
  Pipeline dag = makePlaced(diamond, 2);
  dag.edges = {{0, 1, 8}, {0, 2, 8}, {1, 3, 8}, {2, 3, 8}};
  dag.sharedParams.push_back({"wte", 64, {0, 3}});
  cases.push_back({"dag", dag});
  return cases;
}

struct KindOptions {
  const char *kind;
  unsigned steps;
  bool stash;
};

TEST(MixedPlacement, EveryKindVerifiesAndSimulates) {
  const KindOptions kinds[] = {{"gpipe", 1, true},
                               {"gpipe", 2, true},
                               {"1f1b", 2, true},
                               {"zb-h1", 2, true},
                               {"mixed", 2, true},
                               {"pipedream-async", 1, true},
                               {"pipedream-async", 2, true},
                               {"pipedream-async", 3, false}};
  for (Case &c : makeCases())
    for (const KindOptions &k : kinds)
      for (unsigned microbatches : {3u, 8u})
        for (bool forwardOnly : {false, true}) {
          std::string what = std::string(c.name) + " " + k.kind +
                             (k.stash ? "" : " stale") +
                             " steps=" + std::to_string(k.steps) +
                             " m=" + std::to_string(microbatches) +
                             (forwardOnly ? " fwd" : "");
          ScheduleOptions options;
          options.microbatches = microbatches;
          options.steps = k.steps;
          options.stashWeights = k.stash;
          options.forwardOnly = forwardOnly;
          std::string error;
          FailureOr<Schedule> schedule =
              generateSchedule(k.kind, c.pipeline, options,
                               [&](const Twine &m) { error = m.str(); });
          ASSERT_TRUE(succeeded(schedule)) << what << ": " << error;
          for (const ScheduleViolation &v :
               checkSchedule(c.pipeline, *schedule, nullptr))
            ADD_FAILURE() << what << ": " << v.message;
          MachineModel machine = MachineModel::makeIdeal(c.pipeline.numDevices);
          EXPECT_TRUE(succeeded(simulate(c.pipeline, *schedule, machine, {},
                                         [&](const Twine &m) {
                                           ADD_FAILURE()
                                               << what << ": " << m.str();
                                         })))
              << what;
          if (forwardOnly)
            continue;
          // Every device hosting a reader of a shared parameter reduces it
          // once per step.
          for (unsigned p = 0; p < c.pipeline.sharedParams.size(); ++p)
            for (unsigned d = 0; d < c.pipeline.numDevices; ++d) {
              bool hosts = llvm::any_of(
                  c.pipeline.sharedParams[p].stages,
                  [&](unsigned s) { return c.pipeline.stages[s].device == d; });
              unsigned count = 0;
              for (const ScheduleAction &a : schedule->devices[d])
                count += a.kind == ActionKind::ReduceGrad && a.param == (int)p;
              EXPECT_EQ(count, hosts ? k.steps : 0u)
                  << what << ": param " << p << " device " << d;
            }
        }
}

} // namespace
