//===- ReduceBucketsTest.cpp - Bucketed data-parallel all-reduces ---------===//

#include "pipe/Scheduling/ScheduleChecker.h"
#include "pipe/Scheduling/ScheduleGenerator.h"
#include "pipe/Scheduling/Simulator.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::pipe;

namespace {

constexpr uint64_t kWeightBytes = 4 << 20, kBiasBytes = 1 << 10;

/// Two replicas of 4 stages round-robin on 2 devices; each stage reads a
/// 4 MiB weight and a 1 KiB bias of its own, and stages 0 and 3 (on devices
/// 0 and 1) share an embedding.
Pipeline makeReplicated() {
  Pipeline pipeline = Pipeline::makeChain(4, 2, 1e-3, 1e-3, 1e-3);
  pipeline.replicas = 2;
  pipeline.sharedParams.push_back({"wte", kBiasBytes, {0, 3}});
  for (unsigned s = 0; s < 4; ++s) {
    std::string stage = "s" + std::to_string(s);
    pipeline.sharedParams.push_back({stage + ".w", kWeightBytes, {s}});
    pipeline.sharedParams.push_back({stage + ".b", kBiasBytes, {s}});
  }
  return pipeline;
}

/// 1 GB/s between all devices: a 4 MiB bucket of two replicas takes 4 ms,
/// two stage backwards' worth.
MachineModel makeSlowLinks() {
  MachineModel machine = MachineModel::makeIdeal(4);
  machine.defaultLink.bandwidth = 1e9;
  return machine;
}

Schedule generate(StringRef kind, const Pipeline &pipeline,
                  uint64_t bucketBytes) {
  ScheduleOptions options;
  options.microbatches = 4;
  options.steps = kind == "pipedream-async" ? 2 : 1;
  options.reduceBucketBytes = bucketBytes;
  std::string error;
  FailureOr<Schedule> schedule = generateSchedule(
      kind, pipeline, options, [&](const Twine &m) { error = m.str(); });
  EXPECT_TRUE(succeeded(schedule)) << kind.str() << ": " << error;
  return succeeded(schedule) ? *schedule : Schedule();
}

double stepTime(const Pipeline &pipeline, const Schedule &schedule) {
  FailureOr<SimulationReport> report =
      simulate(pipeline, schedule, makeSlowLinks(), {},
               [](const Twine &m) { ADD_FAILURE() << m.str(); });
  return succeeded(report) ? report->stepTime : 0;
}

TEST(ReduceBuckets, EveryKindStaysValidAndIsNoSlower) {
  Pipeline pipeline = makeReplicated();
  for (StringRef kind :
       {"gpipe", "1f1b", "interleaved-1f1b", "zb-h1", "pipedream-async"}) {
    Schedule blocking = generate(kind, pipeline, 0);
    Schedule bucketed = generate(kind, pipeline, uint64_t(25) << 20);
    for (const Schedule *schedule : {&blocking, &bucketed})
      for (const ScheduleViolation &v :
           checkSchedule(pipeline, *schedule, nullptr))
        ADD_FAILURE() << kind.str() << ": " << v.message;
    // Only the embedding, read on both devices, keeps a blocking reduction.
    EXPECT_EQ(bucketed.count(ActionKind::ReduceGrad), 2 * blocking.steps)
        << kind.str();
    EXPECT_EQ(bucketed.count(ActionKind::ReduceBucket), 4 * blocking.steps)
        << kind.str();
    EXPECT_LE(stepTime(pipeline, bucketed), stepTime(pipeline, blocking))
        << kind.str();
  }
}

TEST(ReduceBuckets, OverlapTheBackwardOfEarlierStages) {
  // Interleaved: device 0 finishes the backwards of s2 before those of s0.
  // The bucket of s2 starts before s0's last backward and ends under the
  // backwards left.
  Pipeline pipeline = makeReplicated();
  Schedule blocking = generate("interleaved-1f1b", pipeline, 0);
  Schedule bucketed = generate("interleaved-1f1b", pipeline, 25 << 20);
  const SmallVector<ScheduleAction> &device0 = bucketed.devices[0];
  auto firstIndex = [&](auto predicate) {
    return std::find_if(device0.begin(), device0.end(), predicate) -
           device0.begin();
  };
  auto s2Bucket = firstIndex([](const ScheduleAction &a) {
    return a.kind == ActionKind::ReduceBucket;
  });
  auto lastS0Backward =
      device0.rend() -
      std::find_if(device0.rbegin(), device0.rend(),
                   [](const ScheduleAction &a) {
                     return a.kind == ActionKind::Backward && a.stage == 0;
                   }) -
      1;
  EXPECT_EQ(device0[s2Bucket].params.size(), 2u);
  EXPECT_LT(s2Bucket, lastS0Backward);
  double overlapped = stepTime(pipeline, bucketed);
  double serial = stepTime(pipeline, blocking);
  // Blocking: 4 ms per stage's weight after the last backward, twice per
  // device; overlapped: s2's under s0's backwards.
  EXPECT_LT(overlapped, serial - 3e-3) << overlapped << " vs " << serial;
}

TEST(ReduceBuckets, BucketBytesBoundTheMessages) {
  Pipeline pipeline = makeReplicated();
  // 1 KiB: every weight (4 MiB) and bias is a bucket of its own.
  Schedule small = generate("1f1b", pipeline, 1 << 10);
  EXPECT_EQ(small.count(ActionKind::ReduceBucket), 8u);
  for (const SmallVector<ScheduleAction> &device : small.devices)
    for (const ScheduleAction &a : device) {
      if (a.kind == ActionKind::ReduceBucket) {
        EXPECT_EQ(a.params.size(), 1u);
      }
    }
  EXPECT_TRUE(checkSchedule(pipeline, small, nullptr).empty());
}

TEST(ReduceBuckets, OneReplicaIsUnchanged) {
  Pipeline pipeline = makeReplicated();
  pipeline.replicas = 1;
  Schedule schedule = generate("1f1b", pipeline, 25 << 20);
  EXPECT_EQ(schedule.count(ActionKind::ReduceBucket), 0u);
  EXPECT_EQ(schedule.count(ActionKind::ReduceGrad), 2u + 8u);
}

} // namespace
