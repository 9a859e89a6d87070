//===- AsyncVariantTest.cpp - A schedule kind registered only here trains -===//
//
// Proves that what a schedule means travels in the IR, not in its name: a
// kind registered at run time by this test alone, under a name nothing else
// knows ("test-async-variant"), declares itself asynchronous with weight
// versions and produces PipeDream's action lists. It goes through placement,
// pipe-schedule, pipe-verify-schedule, lowering and the runtime unchanged:
// the schedule op says `weight_versions`, the manifest says `versions`, and
// the runtime keeps the versions the backward passes use.
//
//===----------------------------------------------------------------------===//

#include "HostHarness.h"

#include "pipe/Scheduling/ScheduleGenerator.h"

#include "gtest/gtest.h"

#include <cstdlib>
#include <unistd.h>

using namespace pipetest;
using namespace mlir;
using namespace mlir::pipe;

namespace {

constexpr llvm::StringLiteral kVariant = "test-async-variant";

/// PipeDream's action lists under another name; its traits are its own.
class AsyncVariantGenerator : public ScheduleGenerator {
public:
  StringRef getName() const override { return kVariant; }
  ScheduleTraits getTraits() const override {
    ScheduleTraits traits;
    traits.asynchronous = true;
    traits.keepsWeightVersions = true;
    return traits;
  }
  FailureOr<Schedule> generate(const Pipeline &pipeline,
                               const ScheduleOptions &options,
                               ScheduleDiagFn diag) const override {
    FailureOr<Schedule> schedule =
        createPipeDreamAsyncGenerator()->generate(pipeline, options, diag);
    if (succeeded(schedule))
      schedule->kind = kVariant.str();
    return schedule;
  }
};

std::vector<float> trainLosses(const std::string &kind, unsigned runs) {
  char pattern[] = "/tmp/pipe-async-variant-XXXXXX";
  std::string dir = mkdtemp(pattern);
  ScheduleConfig schedule;
  schedule.kind = kind;
  schedule.devices = 2;
  schedule.microbatches = 2;
  schedule.steps = 2;
  std::vector<float> losses;
  {
    HostProgram program(tinyGptConfig(2), schedule, std::string(), dir);
    EXPECT_TRUE(program.ok()) << kind << ": " << program.error();
    if (program.ok()) {
      losses = program.train(runs);
      EXPECT_FALSE(losses.empty()) << kind << ": " << program.error();
    }
  }
  std::system(("rm -rf '" + dir + "'").c_str());
  return losses;
}

TEST(AsyncVariant, TrainsWithWeightVersionsLikePipeDream) {
  registerScheduleGenerator(
      kVariant, [] { return std::make_unique<AsyncVariantGenerator>(); });
  std::vector<float> variant = trainLosses(kVariant.str(), 4);
  ASSERT_FALSE(variant.empty());
  EXPECT_LT(variant.back(), variant.front());
  // The same actions and the same kept versions as the built-in kind: the
  // runtime cannot tell them apart, step for step.
  std::vector<float> pipedream = trainLosses("pipedream-async", 4);
  ASSERT_EQ(variant.size(), pipedream.size());
  for (size_t i = 0; i < variant.size(); ++i)
    EXPECT_FLOAT_EQ(variant[i], pipedream[i]) << "loss " << i;
}

} // namespace
