//===- PipelineVariantTest.cpp - Host pipeline choices keep the numbers
//----===//
//
// Two choices of --pipe-host-to-llvm change how the block functions compute,
// not what: training a tiny GPT and a tiny T5 must give the same losses and
// weights with and without each.
// - fuse-elementwise=true (on by default in --pipe-host-to-cuda) only moves
//   where intermediate values live: the fused bodies compute the same f32
//   ops in the same order, so the results agree up to float rounding (in
//   practice bit for bit).
// - vectorize=false leaves the non-GEMM work to scalar loops; the default
//   vector rows (pipe-linalg-to-vector) sum each row reduction as a tree,
//   so the results agree within the 1e-5.
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

Trained train(const TransformerConfig &model, const ScheduleConfig &schedule) {
  char pattern[] = "/tmp/pipe-variant-test-XXXXXX";
  std::string dir = mkdtemp(pattern);
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

/// Trains `model` with the default pipeline and with `variant`, and expects
/// the losses and final params to agree within `tolerance` (relative).
void expectSameTraining(const TransformerConfig &model,
                        const ScheduleConfig &variant, double tolerance) {
  Trained reference = train(model, ScheduleConfig());
  Trained other = train(model, variant);
  ASSERT_FALSE(reference.losses.empty());
  ASSERT_EQ(reference.losses.size(), other.losses.size());
  // Training happened: the loss moved.
  EXPECT_NE(reference.losses.front(), reference.losses.back());
  for (size_t i = 0; i < reference.losses.size(); ++i)
    EXPECT_NEAR(other.losses[i], reference.losses[i],
                tolerance * std::fabs(reference.losses[i]))
        << model.name << " " << variant.describe() << ": loss " << i;
  unsigned worst = 0;
  double error = maxRelativeError(other.params, reference.params, &worst);
  EXPECT_LE(error, tolerance)
      << model.name << " " << variant.describe() << ": param " << worst;
}

ScheduleConfig fused() {
  ScheduleConfig config;
  config.fuseElementwise = true;
  return config;
}

ScheduleConfig scalar() {
  ScheduleConfig config;
  config.vectorize = false;
  return config;
}

TEST(FuseElementwise, GptTrainsTheSame) {
  expectSameTraining(tinyGptConfig(2), fused(), 1e-6);
}

TEST(FuseElementwise, T5TrainsTheSame) {
  expectSameTraining(tinyT5Config(1), fused(), 1e-6);
}

TEST(Vectorize, GptTrainsLikeScalarLoops) {
  expectSameTraining(tinyGptConfig(2), scalar(), 1e-5);
}

TEST(Vectorize, T5TrainsLikeScalarLoops) {
  expectSameTraining(tinyT5Config(1), scalar(), 1e-5);
}

} // namespace
