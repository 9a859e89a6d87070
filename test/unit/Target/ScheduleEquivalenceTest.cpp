//===- ScheduleEquivalenceTest.cpp - Every schedule trains like no pipeline
//===//
//
// Issue acceptance for the host back end: after 10 training steps, every
// synchronous schedule on 1, 2 and 4 simulated devices and both L2L variants
// leave each parameter within 1e-5 (norm-wise, fp32) of the unpipelined
// single-device run on the same data; through the JIT and through a shared
// library artifact.
//
//===----------------------------------------------------------------------===//

#include "HostHarness.h"

#include "gtest/gtest.h"

#include <cstdlib>
#include <unistd.h>

using namespace pipetest;
using mlir::pipe::modelgen::TransformerConfig;

namespace {

constexpr unsigned kSteps = 10;

/// GPT-2 style, lm head tied to the token embedding; six layers so that
/// four devices with two stages each still get a block instance per stage.
TransformerConfig tinyGpt() { return tinyGptConfig(6); }

TransformerConfig tinyT5() { return tinyT5Config(3); }

struct Case {
  std::string name;
  TransformerConfig (*model)();
  ScheduleConfig schedule;
  bool artifact = false;
};

/// Names the case in test listings instead of dumping its bytes.
void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

class ScratchDir {
public:
  ScratchDir() {
    char pattern[] = "/tmp/pipe-host-test-XXXXXX";
    path = mkdtemp(pattern);
  }
  ~ScratchDir() { std::system(("rm -rf '" + path + "'").c_str()); }
  std::string path;
};

/// Trains `config` for kSteps optimizer steps; returns the params.
std::vector<std::vector<float>> trainFor(const TransformerConfig &model,
                                         const ScheduleConfig &schedule,
                                         bool artifact,
                                         std::vector<float> *losses = nullptr) {
  ScratchDir dir;
  HostProgram program(model, schedule,
                      artifact ? dir.path + "/program.so" : std::string(),
                      dir.path);
  EXPECT_TRUE(program.ok()) << schedule.describe() << ": " << program.error();
  if (!program.ok())
    return {};
  std::vector<float> trained = program.train(kSteps / schedule.steps);
  EXPECT_FALSE(trained.empty())
      << schedule.describe() << ": " << program.error();
  if (losses)
    *losses = trained;
  return program.params();
}

class ScheduleEquivalence : public testing::TestWithParam<Case> {};

TEST_P(ScheduleEquivalence, MatchesUnpipelinedRun) {
  const Case &c = GetParam();
  TransformerConfig model = c.model();
  ScheduleConfig reference;
  reference.microbatches = c.schedule.microbatches;
  std::vector<float> referenceLosses, losses;
  auto expected = trainFor(model, reference, false, &referenceLosses);
  auto actual = trainFor(model, c.schedule, c.artifact, &losses);
  ASSERT_FALSE(expected.empty());
  ASSERT_FALSE(actual.empty());
  // Training happened: the loss moved.
  EXPECT_NE(referenceLosses.front(), referenceLosses.back());
  unsigned worst = 0;
  double error = maxRelativeError(actual, expected, &worst);
  EXPECT_LE(error, 1e-5) << c.schedule.describe() << ": param " << worst;
}

std::vector<Case> cases() {
  std::vector<Case> all;
  struct Model {
    const char *name;
    TransformerConfig (*make)();
  } models[] = {{"gpt", tinyGpt}, {"t5", tinyT5}};
  for (const Model &model : models) {
    for (const char *kind : {"gpipe", "1f1b", "interleaved-1f1b", "zb-h1"})
      for (unsigned devices : {1u, 2u, 4u}) {
        Case c;
        c.model = model.make;
        c.schedule.kind = kind;
        c.schedule.devices = devices;
        c.schedule.microbatches = 4;
        c.schedule.stagesPerDevice =
            std::string(kind) == "interleaved-1f1b" ? 2 : 1;
        all.push_back(c);
      }
    for (bool constantMemory : {false, true}) {
      Case c;
      c.model = model.make;
      c.schedule.kind = "l2l";
      c.schedule.stagesPerDevice = 0;
      c.schedule.microbatches = 4;
      c.schedule.constantMemory = constantMemory;
      all.push_back(c);
    }
    // The compiled-artifact route, on a pipelined and an L2L schedule.
    Case c;
    c.model = model.make;
    c.schedule.kind = "1f1b";
    c.schedule.devices = 2;
    c.schedule.microbatches = 4;
    c.artifact = true;
    all.push_back(c);
    c.schedule.kind = "l2l";
    c.schedule.devices = 1;
    c.schedule.stagesPerDevice = 0;
    all.push_back(c);
  }
  for (Case &c : all) {
    std::string name = (c.model == tinyGpt ? "gpt_" : "t5_") + c.schedule.kind +
                       "_" + std::to_string(c.schedule.devices) + "dev" +
                       (c.schedule.constantMemory ? "_constmem" : "") +
                       (c.artifact ? "_artifact" : "");
    for (char &ch : name)
      if (!isalnum(static_cast<unsigned char>(ch)))
        ch = '_';
    c.name = name;
  }
  return all;
}

INSTANTIATE_TEST_SUITE_P(HostBackEnd, ScheduleEquivalence,
                         testing::ValuesIn(cases()),
                         [](const testing::TestParamInfo<Case> &info) {
                           return info.param.name;
                         });

} // namespace
