//===- BackendTest.cpp - The executor's device-memory layer ---------------===//
//
// Runs the tiny program of TinyProgram.h on the simulated devices and on the
// "staged" backend (Backend.h: the same arenas, but every access through
// DeviceMemory copies and every send by reference, as on a GPU) and expects
// bit-identical training: the GPU code paths of the executor, without a GPU.
//
//===----------------------------------------------------------------------===//

#include "TinyProgram.h"

#include "Session.h"

#include <gtest/gtest.h>

namespace {

int enableStaged(pipe_rt_session *s, std::string &) {
  s->backend = pipe_rt::stagedBackend();
  return 0;
}

class Backend : public testing::TestWithParam<tiny::Sched> {};

TEST_P(Backend, StagedEqualsHost) {
  std::string w = tiny::writeWeights(testing::TempDir());
  tiny::Program host = tiny::makeProgram<false>(GetParam());
  tiny::Program staged = tiny::makeProgram<false>(GetParam());
  std::vector<float> lh, ph, ls, ps;
  ASSERT_EQ(tiny::train(host, w, 3, lh, ph), "");
  tiny::Options o;
  o.enable = enableStaged;
  ASSERT_EQ(tiny::train(staged, w, 3, ls, ps, o), "");
  ASSERT_FALSE(lh.empty());
  EXPECT_EQ(lh, ls);
  EXPECT_EQ(ph, ps);
  // Training moved the params.
  EXPECT_NE(ph[0], 0.5f);
}

INSTANTIATE_TEST_SUITE_P(Schedules, Backend,
                         testing::Values(tiny::Sched::OneDevice,
                                         tiny::Sched::TwoDevices,
                                         tiny::Sched::Tied,
                                         tiny::Sched::PipeDream,
                                         tiny::Sched::L2L));

} // namespace
