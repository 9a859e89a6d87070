//===- ClosedFormTest.cpp - Simulated schedules vs their closed forms -----===//
//
// With equal stage times and free communication, every pipelined schedule
// has a known bubble fraction (docs/scheduling.md); the simulator must land
// within 1% of it, and the checker must accept every generated schedule.
//
//===----------------------------------------------------------------------===//

#include "pipe/Scheduling/ScheduleChecker.h"
#include "pipe/Scheduling/ScheduleGenerator.h"
#include "pipe/Scheduling/Simulator.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::pipe;

namespace {

struct Result {
  SimulationReport report;
  Schedule schedule;
};

Result run(StringRef kind, const Pipeline &pipeline, unsigned m,
           ScheduleOptions options = {}) {
  options.microbatches = m;
  std::string error;
  auto diag = [&](const Twine &message) { error = message.str(); };
  FailureOr<Schedule> schedule =
      generateSchedule(kind, pipeline, options, diag);
  EXPECT_TRUE(succeeded(schedule)) << error;
  if (failed(schedule))
    return {};
  MachineModel machine = MachineModel::makeIdeal(pipeline.numDevices);
  SmallVector<ScheduleViolation> violations =
      checkSchedule(pipeline, *schedule, &machine);
  for (const ScheduleViolation &v : violations)
    ADD_FAILURE() << kind.str() << ": " << v.message;
  FailureOr<SimulationReport> report =
      simulate(pipeline, *schedule, machine, {}, diag);
  EXPECT_TRUE(succeeded(report)) << error;
  if (failed(report))
    return {};
  return {*report, *schedule};
}

void expectNear(double actual, double expected, const std::string &what) {
  EXPECT_NEAR(actual, expected, 0.01 * expected) << what;
}

class ClosedForm
    : public ::testing::TestWithParam<std::pair<unsigned, unsigned>> {};

TEST_P(ClosedForm, GPipeAnd1F1BBubble) {
  auto [p, m] = GetParam();
  Pipeline pipeline = Pipeline::makeChain(p, p, 1.0, 1.0, 1.0, /*saved=*/1);
  double expected = double(p - 1) / (m + p - 1);
  for (StringRef kind : {"gpipe", "1f1b", "mixed"}) {
    Result r = run(kind, pipeline, m);
    for (unsigned d = 0; d < p; ++d)
      expectNear(r.report.devices[d].bubbleFraction, expected,
                 kind.str() + " device " + std::to_string(d));
    expectNear(r.report.stepTime, 3.0 * (m + p - 1), kind.str() + " step");
  }
}

TEST_P(ClosedForm, StashedActivations) {
  auto [p, m] = GetParam();
  Pipeline pipeline = Pipeline::makeChain(p, p, 1.0, 1.0, 1.0, /*saved=*/1);
  Result gpipe = run("gpipe", pipeline, m);
  Result oneF = run("1f1b", pipeline, m);
  for (unsigned d = 0; d < p; ++d) {
    EXPECT_EQ(gpipe.report.devices[d].peakActivations, (int64_t)m);
    EXPECT_LE(oneF.report.devices[d].peakActivations, (int64_t)p);
    EXPECT_EQ(oneF.report.devices[d].peakActivations,
              (int64_t)std::min(m, p - d));
  }
}

TEST_P(ClosedForm, InterleavedBubbleAndMemory) {
  auto [p, m] = GetParam();
  if (p == 1)
    return;
  for (unsigned v : {2u, 4u}) {
    // Each chunk is 1/v of a stage; bytes count chunk-micro-batches.
    Pipeline pipeline =
        Pipeline::makeChain(v * p, p, 1.0 / v, 1.0 / v, 1.0 / v, /*saved=*/1);
    Result r = run("interleaved-1f1b", pipeline, m);
    double expected = double(p - 1) / (v * m + p - 1);
    for (unsigned d = 0; d < p; ++d)
      expectNear(r.report.devices[d].bubbleFraction, expected,
                 "interleaved v=" + std::to_string(v) + " device " +
                     std::to_string(d));
    // Rank 0 keeps v p + p - 1 chunk-micro-batches (p + (p-1)/v
    // micro-batches' worth), capped by all v m of them.
    EXPECT_EQ(r.report.devices[0].peakActivations,
              (int64_t)std::min(v * p + p - 1, v * m))
        << "v=" << v;
  }
}

TEST_P(ClosedForm, ZeroBubbleH1) {
  auto [p, m] = GetParam();
  Pipeline pipeline = Pipeline::makeChain(p, p, 1.0, 1.0, 1.0, /*saved=*/1);
  Result r = run("zb-h1", pipeline, m);
  double expected = double(p - 1) / (3 * m + p - 1);
  expectNear(r.report.getMaxBubbleFraction(), expected, "zb-h1");
  for (unsigned d = 0; d < p; ++d)
    EXPECT_LE(r.report.devices[d].peakActivations, (int64_t)p);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ClosedForm,
    ::testing::Values(std::make_pair(2u, 8u), std::make_pair(2u, 16u),
                      std::make_pair(2u, 32u), std::make_pair(4u, 8u),
                      std::make_pair(4u, 16u), std::make_pair(4u, 32u),
                      std::make_pair(8u, 8u), std::make_pair(8u, 16u),
                      std::make_pair(8u, 32u)),
    [](const auto &info) {
      return "p" + std::to_string(info.param.first) + "_m" +
             std::to_string(info.param.second);
    });

TEST(ClosedForm, AsyncSteadyStateHasNoBubble) {
  // Over many steps the fill and drain are paid once: the per-step bubble
  // tends to zero, unlike 1F1B's (p-1)/(m+p-1) every step.
  unsigned p = 4, m = 8, steps = 8;
  Pipeline pipeline = Pipeline::makeChain(p, p, 1.0, 1.0, 1.0, 1);
  ScheduleOptions options;
  options.steps = steps;
  Result async = run("pipedream-async", pipeline, m, options);
  Result sync = run("1f1b", pipeline, m, options);
  double expected = double(p - 1) / (steps * m + p - 1);
  expectNear(async.report.getMaxBubbleFraction(), expected, "async");
  EXPECT_LT(async.report.stepTime, sync.report.stepTime);
  EXPECT_EQ(async.schedule.steps, steps);
}

} // namespace
