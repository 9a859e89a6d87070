//===- CoresTest.cpp - Core policy, intra-op helpers, split GEMMs ---------===//

#include "Cores.h"

#include "pipe/Runtime/Program.h"

#include "gtest/gtest.h"

#include <atomic>
#include <cstdlib>
#include <random>
#include <vector>

using namespace pipe_rt;

namespace {

TEST(Cores, ParallelChunksRunsEveryChunkOnce) {
  for (unsigned helpers : {0u, 1u, 3u}) {
    setIntraOpHelpers(helpers);
    for (int round = 0; round < 50; ++round) {
      std::vector<std::atomic<int>> runs(257);
      parallelChunks(int64_t(runs.size()),
                     [&](int64_t i) { runs[size_t(i)].fetch_add(1); });
      for (size_t i = 0; i < runs.size(); ++i)
        ASSERT_EQ(runs[i].load(), 1)
            << "chunk " << i << ", " << helpers << " helpers, round " << round;
    }
  }
  setIntraOpHelpers(0);
}

TEST(Cores, RanksOfOneHostShareItsCores) {
  unsigned all = processCores();
  EXPECT_GE(all, 1u);
  setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "1000000", 1);
  EXPECT_EQ(processCores(), 1u);
  unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  EXPECT_EQ(processCores(), all);
}

TEST(Cores, HelpersAreTheCoresLeftOverAfterTheDevices) {
  unsetenv("PIPE_INTRA_OP_THREADS");
  unsigned cores = processCores();
  EXPECT_EQ(defaultIntraOpHelpers(cores), 0u);
  EXPECT_EQ(defaultIntraOpHelpers(cores + 3), 0u);
  EXPECT_EQ(defaultIntraOpHelpers(1), cores - 1);
  setenv("PIPE_INTRA_OP_THREADS", "3", 1);
  EXPECT_EQ(defaultIntraOpHelpers(8), 3u);
  // Not a count in [0, kMaxIntraOpHelpers]: the policy decides.
  for (const char *bad : {"many", "-1", "3x", "100000"}) {
    setenv("PIPE_INTRA_OP_THREADS", bad, 1);
    EXPECT_EQ(defaultIntraOpHelpers(1), cores - 1) << bad;
  }
  unsetenv("PIPE_INTRA_OP_THREADS");
}

/// A GEMM large enough to be cut into row chunks gives the same bits with
/// and without helpers, and the product within float rounding.
TEST(Cores, SplitGemmIsTheSameWithAnyNumberOfHelpers) {
  const int64_t batch = 2, m = 256, n = 96, k = 128;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-1, 1);
  std::vector<float> a(batch * m * k), b(batch * k * n);
  for (float &x : a)
    x = uniform(rng);
  for (float &x : b)
    x = uniform(rng);
  const int64_t dims[4] = {batch, m, n, k};
  const int64_t as[3] = {m * k, k, 1}, bs[3] = {k * n, n, 1},
                cs[3] = {m * n, n, 1};
  std::vector<std::vector<float>> results;
  for (unsigned helpers : {0u, 1u, 3u}) {
    setIntraOpHelpers(helpers);
    std::vector<float> c(batch * m * n, 0.5f);
    pipe_rt_gemm_f32(a.data(), b.data(), c.data(), dims, as, bs, cs);
    results.push_back(c);
  }
  setIntraOpHelpers(0);
  EXPECT_EQ(results[0], results[1]);
  EXPECT_EQ(results[0], results[2]);
  for (int64_t i = 0; i < batch; ++i)
    for (int64_t r = 0; r < m; r += 37)
      for (int64_t col = 0; col < n; col += 11) {
        double want = 0.5;
        for (int64_t p = 0; p < k; ++p)
          want += double(a[i * m * k + r * k + p]) * b[i * k * n + p * n + col];
        EXPECT_NEAR(results[0][i * m * n + r * n + col], want, 1e-4)
            << i << " " << r << " " << col;
      }
}

} // namespace
