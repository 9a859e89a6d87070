//===- BackendTest.cpp - The executor's device-memory layer ---------------===//
//
// Runs the tiny program of TinyProgram.h on the simulated devices and on the
// "staged" backend (Backend.h: the same arenas, but every access through
// DeviceMemory copies and every send by reference, as on a GPU) and expects
// bit-identical training: the GPU code paths of the executor, without a GPU.
//
//===----------------------------------------------------------------------===//

#include "TinyProgram.h"

#include "Backend.h"
#include "Session.h"

#include <gtest/gtest.h>

#include <numeric>

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

/// gather copies a strided view of a result into dense memory: whole when
/// the view is dense (size-1 dimensions' strides do not matter), by rows
/// when its innermost dimension is contiguous, else by elements.
TEST(BackendMemory, GatherCopiesEveryLayoutInRowMajorOrder) {
  const uint64_t capacity = 1 << 20;
  pipe_rt_devices *devs = pipe_rt_devices_create(1, &capacity, 60);
  ASSERT_NE(devs, nullptr);
  std::unique_ptr<pipe_rt::DeviceMemory> memory;
  std::string error;
  ASSERT_EQ(pipe_rt::hostBackend()->createMemory(devs, 1, nullptr, {}, 60,
                                                 memory, error),
            0)
      << error;
  std::vector<float> src(64);
  std::iota(src.begin(), src.end(), 0.0f);
  struct Case {
    std::vector<int64_t> shape, strides;
    std::vector<float> expected;
  };
  for (const Case &c :
       std::vector<Case>{{{2, 3}, {3, 1}, {0, 1, 2, 3, 4, 5}},
                         {{2, 1, 3}, {3, 7, 1}, {0, 1, 2, 3, 4, 5}},
                         {{2, 3}, {8, 1}, {0, 1, 2, 8, 9, 10}},
                         {{2, 2, 2}, {16, 4, 1}, {0, 1, 4, 5, 16, 17, 20, 21}},
                         {{2, 3}, {1, 2}, {0, 2, 4, 1, 3, 5}},
                         {{3}, {5}, {0, 5, 10}}}) {
    std::vector<float> dst(c.expected.size(), -1.0f);
    ASSERT_EQ(memory->gather(0, dst.data(), src.data(), c.shape,
                             c.strides.data(), sizeof(float), error),
              0)
        << error;
    EXPECT_EQ(dst, c.expected);
  }
  memory.reset();
  pipe_rt_devices_destroy(devs);
}

} // namespace
