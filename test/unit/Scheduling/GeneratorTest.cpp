//===- GeneratorTest.cpp - Registry and generators on a Mixed-Pipe DAG ----===//

#include "pipe/Scheduling/ScheduleChecker.h"
#include "pipe/Scheduling/ScheduleGenerator.h"
#include "pipe/Scheduling/Simulator.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::pipe;

namespace {

// FTPipe-style: a diamond s0 -> {s1, s2} -> s3 on two devices where device
// 0 hosts the non-adjacent s0 and s3, which share a parameter.
Pipeline makeMixed() {
  Pipeline pipeline;
  pipeline.numDevices = 2;
  for (unsigned s = 0; s < 4; ++s) {
    PipelineStage stage;
    stage.name = "s" + std::to_string(s);
    stage.device = (s == 0 || s == 3) ? 0 : 1;
    stage.forwardTime = stage.backwardInputTime = stage.backwardWeightTime =
        1e-3;
    stage.savedBytes = 10;
    stage.paramBytes = 64;
    stage.paramCount = 32;
    pipeline.stages.push_back(stage);
  }
  pipeline.edges = {{0, 1, 8}, {0, 2, 8}, {1, 3, 8}, {2, 3, 8}};
  pipeline.sharedParams.push_back({"wte", 64, {0, 3}});
  return pipeline;
}

TEST(Generators, RegistryHasEveryKind) {
  SmallVector<std::string> names = getScheduleGeneratorNames();
  for (StringRef kind : {"gpipe", "1f1b", "interleaved-1f1b", "zb-h1",
                         "pipedream-async", "mixed", "l2l"})
    EXPECT_TRUE(llvm::is_contained(names, kind.str())) << kind.str();
  EXPECT_EQ(createScheduleGenerator("no-such-kind"), nullptr);
}

TEST(Generators, RuntimeRegistration) {
  struct Empty : ScheduleGenerator {
    StringRef getName() const override { return "test-empty"; }
    FailureOr<Schedule> generate(const Pipeline &, const ScheduleOptions &,
                                 ScheduleDiagFn diag) const override {
      diag("always fails");
      return failure();
    }
  };
  EXPECT_TRUE(registerScheduleGenerator(
      "test-empty", [] { return std::make_unique<Empty>(); }));
  EXPECT_FALSE(registerScheduleGenerator(
      "gpipe", [] { return std::make_unique<Empty>(); }));
  std::string error;
  EXPECT_TRUE(
      failed(generateSchedule("test-empty", makeMixed(), {},
                              [&](const Twine &m) { error = m.str(); })));
  EXPECT_EQ(error, "always fails");
}

TEST(Generators, EveryKindOnMixedPipe) {
  Pipeline pipeline = makeMixed();
  for (StringRef kind : {"gpipe", "1f1b", "zb-h1", "mixed", "pipedream-async"})
    for (bool forwardOnly : {false, true}) {
      ScheduleOptions options;
      options.microbatches = 4;
      options.forwardOnly = forwardOnly;
      options.steps = kind == "pipedream-async" ? 2 : 1;
      std::string error;
      FailureOr<Schedule> schedule = generateSchedule(
          kind, pipeline, options, [&](const Twine &m) { error = m.str(); });
      ASSERT_TRUE(succeeded(schedule)) << kind.str() << ": " << error;
      for (const ScheduleViolation &v :
           checkSchedule(pipeline, *schedule, nullptr))
        ADD_FAILURE() << kind.str() << (forwardOnly ? " fwd: " : ": ")
                      << v.message;
      MachineModel machine = MachineModel::makeIdeal(2);
      EXPECT_TRUE(succeeded(
          simulate(pipeline, *schedule, machine, {},
                   [&](const Twine &m) { ADD_FAILURE() << m.str(); })));
      if (!forwardOnly)
        EXPECT_EQ(schedule->count(ActionKind::ReduceGrad, 0), options.steps)
            << kind.str();
      else
        EXPECT_EQ(schedule->count(ActionKind::Update), 0u);
    }
}

TEST(Generators, MixedKeepsLessThanGPipe) {
  // The depth-prioritised order drains micro-batches early: far fewer
  // activations in flight than fill-drain, for about the same step time.
  Pipeline pipeline = makeMixed();
  ScheduleOptions options;
  options.microbatches = 8;
  MachineModel machine = MachineModel::makeIdeal(2);
  auto run = [&](StringRef kind) {
    auto schedule =
        generateSchedule(kind, pipeline, options, [](const Twine &) {});
    return *simulate(pipeline, *schedule, machine, {}, [](const Twine &) {});
  };
  SimulationReport mixed = run("mixed"), gpipe = run("gpipe");
  EXPECT_LT(mixed.devices[0].peakActivations,
            gpipe.devices[0].peakActivations / 2);
  EXPECT_LE(mixed.stepTime, 1.1 * gpipe.stepTime);
}

TEST(Generators, InterleavedErrors) {
  ScheduleOptions options;
  options.microbatches = 6;
  std::string error;
  auto diag = [&](const Twine &m) { error = m.str(); };
  Pipeline roundRobin = Pipeline::makeChain(8, 4, 1, 1, 1);
  EXPECT_TRUE(
      failed(generateSchedule("interleaved-1f1b", roundRobin, options, diag)));
  EXPECT_NE(error.find("divisible"), std::string::npos) << error;
  Pipeline contiguous = Pipeline::makeChain(4, 2, 1, 1, 1);
  contiguous.stages[1].device = 0;
  contiguous.stages[2].device = 1;
  options.microbatches = 4;
  EXPECT_TRUE(
      failed(generateSchedule("interleaved-1f1b", contiguous, options, diag)));
  EXPECT_NE(error.find("round-robin"), std::string::npos) << error;
}

} // namespace
