//===- L2LTransferTest.cpp - bf16 parameter-server transfers on a GPT -----===//
//
// The compiled L2L schedule of a tiny GPT (HostHarness: JIT, SGD with
// momentum) trained 10 steps three ways from the same saved state: fp32
// transfers (the reference), bf16 transfers (`ps_transfer`) on the
// simulated devices, and bf16 on the staged backend. bf16 must train
// bit-identically on both backends and stay close to fp32.
//
//===----------------------------------------------------------------------===//

#include "HostHarness.h"

#include "Session.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

using namespace pipetest;

namespace {

struct Trained {
  std::vector<float> losses;
  std::vector<std::vector<float>> params;
};

TEST(L2LTransfer, Bf16MatchesAcrossBackendsAndStaysCloseToF32) {
  char pattern[] = "/tmp/pipe-l2l-transfer-XXXXXX";
  std::string dir = mkdtemp(pattern);
  ScheduleConfig schedule;
  schedule.kind = "l2l";
  schedule.stagesPerDevice = 0;
  schedule.microbatches = 4;
  HostProgram program(tinyGptConfig(2), schedule, std::string(), dir);
  ASSERT_TRUE(program.ok()) << program.error();
  pipe_rt_session *s = program.getSession();
  std::string start = dir + "/start.safetensors";
  ASSERT_EQ(pipe_rt_session_save(s, start.c_str(), nullptr, nullptr, 0),
            PIPE_RT_OK);

  // One compiled program, three configurations: the options and backend of
  // the session are switched between trainings (runs read them afresh).
  auto train = [&](pipe_rt_ps_transfer transfer, bool staged) {
    Trained t;
    EXPECT_EQ(pipe_rt_session_load(s, start.c_str(), nullptr, nullptr, 0),
              PIPE_RT_OK);
    s->options.ps_transfer = transfer;
    s->backend = staged ? pipe_rt::stagedBackend() : nullptr;
    t.losses = program.train(10);
    EXPECT_EQ(t.losses.size(), 40u) << program.error();
    t.params = program.params();
    return t;
  };
  std::vector<std::vector<float>> initial = program.params();
  Trained f32 = train(PIPE_RT_PS_TRANSFER_F32, false);
  Trained bf16 = train(PIPE_RT_PS_TRANSFER_BF16, false);
  Trained staged = train(PIPE_RT_PS_TRANSFER_BF16, true);
  std::system(("rm -rf '" + dir + "'").c_str());
  ASSERT_EQ(f32.losses.size(), 40u);

  EXPECT_EQ(bf16.losses, staged.losses);
  EXPECT_EQ(bf16.params, staged.params);

  unsigned worst = 0;
  double paramError = maxRelativeError(bf16.params, f32.params, &worst);
  double lossError = 0;
  for (size_t i = 0; i < f32.losses.size(); ++i)
    lossError =
        std::max(lossError, double(std::fabs(bf16.losses[i] - f32.losses[i])) /
                                std::fabs(f32.losses[i]));
  char text[64];
  std::snprintf(text, sizeof(text), "%.3g", paramError);
  RecordProperty("param_rel", text);
  std::snprintf(text, sizeof(text), "%.3g", lossError);
  RecordProperty("loss_rel", text);
  // Measured (docs/runtime.md, "bf16 transfers"): about 2e-3 for the
  // params (norm-wise, worst tensor) and 1e-3 for the losses.
  EXPECT_GT(paramError, 0) << "bf16 transfers changed nothing";
  EXPECT_LT(paramError, 1e-2) << "param " << worst;
  EXPECT_LT(lossError, 1e-2);
  // Training moved the params far more than bf16 transfers perturbed them.
  double moved = maxRelativeError(f32.params, initial);
  std::snprintf(text, sizeof(text), "%.3g", moved);
  RecordProperty("training_moved_rel", text);
  EXPECT_GT(moved, 5 * paramError);
}

} // namespace
