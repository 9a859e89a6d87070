//===- ProfileTest.cpp - Phase breakdown of recorded actions --------------===//

#include "Profile.h"
#include "TinyProgram.h"

#include <gtest/gtest.h>

namespace {

TEST(Profile, PhaseFromTheExecutorsActionNames) {
  EXPECT_EQ(pipe_rt::phaseOf("forward stage 's0' mb 0 step 0"),
            pipe_rt::Phase::Forward);
  EXPECT_EQ(pipe_rt::phaseOf("recompute stage 's0' mb 0 step 0"),
            pipe_rt::Phase::Recompute);
  EXPECT_EQ(pipe_rt::phaseOf("backward.weight stage 's0' mb 0 step 0"),
            pipe_rt::Phase::Backward);
  EXPECT_EQ(pipe_rt::phaseOf("reduce_grad"), pipe_rt::Phase::Other);
}

// One device: compute [0, 4) forward and [6, 10) backward; an h2d copy
// [3, 7) of which [4, 6) is exposed; a d2h copy [9, 12) exposed for [10,
// 12); the optimizer [8, 14), exposed (no compute) for [10, 14); nothing
// runs in [14, 16).
TEST(Profile, ExposedCopiesAndOptimizer) {
  using pipe_rt::TrackKind;
  std::vector<pipe_rt::TraceEvent> events = {
      {"forward stage 's0' mb 0 step 0", "compute", TrackKind::Compute, 0, 0,
       4},
      {"backward stage 's0' mb 0 step 0", "compute", TrackKind::Compute, 0, 6,
       10},
      {"ps.load stage 's1' step 0", "h2d", TrackKind::H2D, 0, 3, 7},
      {"ps.push stage 's0' step 0", "d2h", TrackKind::D2H, 0, 9, 12},
      {"ps.update stage 's0' step 0", "host", TrackKind::Host, 0, 8, 14},
      {"forward stage 's0' mb 1 step 0", "compute", TrackKind::Compute, 0, 15,
       16},
      // Before the window: ignored.
      {"forward stage 's0' mb 0 step 0", "compute", TrackKind::Compute, 0, -5,
       -1},
  };
  pipe_rt::Profile p = pipe_rt::summarize(events, {}, 1, 0);
  ASSERT_EQ(p.devices.size(), 1u);
  const pipe_rt::DeviceProfile &d = p.devices[0];
  EXPECT_DOUBLE_EQ(p.window, 16);
  EXPECT_DOUBLE_EQ(d.phase[int(pipe_rt::Phase::Forward)], 5);
  EXPECT_DOUBLE_EQ(d.phase[int(pipe_rt::Phase::Backward)], 4);
  EXPECT_DOUBLE_EQ(d.compute, 9);
  EXPECT_DOUBLE_EQ(d.h2d, 4);
  EXPECT_DOUBLE_EQ(d.d2h, 3);
  EXPECT_DOUBLE_EQ(d.copy, 7);
  EXPECT_DOUBLE_EQ(d.copyExposed, 4);
  EXPECT_DOUBLE_EQ(p.optimizer, 6);
  EXPECT_DOUBLE_EQ(p.optimizerExposed, 4);
  EXPECT_DOUBLE_EQ(p.idle, 1); // [14, 15)
  std::string json = pipe_rt::profileJson(p);
  EXPECT_NE(json.find("\"copy_exposed_fraction\":0.5714"), std::string::npos)
      << json;
}

// A real L2L run of the tiny program: every compute phase of the schedule
// shows up under its name, and the busy times are consistent.
TEST(Profile, TinyL2LRun) {
  std::string w = tiny::writeWeights(testing::TempDir());
  tiny::Program program = tiny::makeProgram<false>(tiny::Sched::L2L);
  std::vector<float> losses, params;
  std::string profile;
  ASSERT_EQ(tiny::train(program, w, 2, losses, params, {}, &profile), "");
  for (const char *key :
       {"\"forward_ms\":", "\"recompute_ms\":", "\"backward_ms\":",
        "\"h2d_ms\":", "\"d2h_ms\":", "\"optimizer_ms\":"}) {
    size_t at = profile.find(key);
    ASSERT_NE(at, std::string::npos) << key << " in " << profile;
    EXPECT_GT(std::stod(profile.substr(at + std::strlen(key))), 0.0)
        << key << " in " << profile;
  }
}

} // namespace
