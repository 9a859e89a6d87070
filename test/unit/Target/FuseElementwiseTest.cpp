//===- FuseElementwiseTest.cpp - Fusion changes no training numbers -------===//
//
// pipe-fuse-elementwise (on by default in --pipe-host-to-cuda) only moves
// where intermediate values live: the fused bodies compute the same f32 ops
// in the same order. With `--pipe-host-to-llvm=fuse-elementwise=true` the
// host back end runs the fused block functions, so training a tiny GPT and a
// tiny T5 with and without fusion must give the same losses and weights up
// to float rounding (in practice bit for bit).
//
//===----------------------------------------------------------------------===//

#include "HostHarness.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdlib>
#include <unistd.h>

using namespace pipetest;
using mlir::pipe::modelgen::TransformerConfig;

namespace {

constexpr unsigned kRuns = 3;

struct Trained {
  std::vector<float> losses;
  std::vector<std::vector<float>> params;
};

Trained train(const TransformerConfig &model, bool fuse) {
  char pattern[] = "/tmp/pipe-fuse-test-XXXXXX";
  std::string dir = mkdtemp(pattern);
  ScheduleConfig schedule;
  schedule.fuseElementwise = fuse;
  Trained result;
  {
    HostProgram program(model, schedule, /*libraryPath=*/"", dir);
    EXPECT_TRUE(program.ok()) << program.error();
    if (program.ok()) {
      result.losses = program.train(kRuns);
      EXPECT_FALSE(result.losses.empty()) << program.error();
      result.params = program.params();
    }
  }
  std::system(("rm -rf '" + dir + "'").c_str());
  return result;
}

void expectSameTraining(const TransformerConfig &model) {
  Trained plain = train(model, false);
  Trained fused = train(model, true);
  ASSERT_FALSE(plain.losses.empty());
  ASSERT_EQ(plain.losses.size(), fused.losses.size());
  // Training happened: the loss moved.
  EXPECT_NE(plain.losses.front(), plain.losses.back());
  for (size_t i = 0; i < plain.losses.size(); ++i)
    EXPECT_NEAR(fused.losses[i], plain.losses[i],
                1e-6 * std::fabs(plain.losses[i]))
        << model.name << " loss " << i;
  unsigned worst = 0;
  double error = maxRelativeError(fused.params, plain.params, &worst);
  EXPECT_LE(error, 1e-6) << model.name << ": param " << worst;
}

TEST(FuseElementwise, GptTrainsTheSame) {
  expectSameTraining(tinyGptConfig(2));
}

TEST(FuseElementwise, T5TrainsTheSame) { expectSameTraining(tinyT5Config(1)); }

} // namespace
