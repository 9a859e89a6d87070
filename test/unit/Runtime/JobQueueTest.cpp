//===- JobQueueTest.cpp - The one-thread FIFO of asynchronous jobs --------===//

#include "JobQueue.h"

#include <gtest/gtest.h>

#include <vector>

using namespace pipe_rt;

namespace {

TEST(JobQueue, RunsJobsInOrderAndKeepsTheirResults) {
  JobQueue q;
  std::vector<int> order;
  auto a = q.submit([&](std::string &) {
    order.push_back(1);
    return int(PIPE_RT_OK);
  });
  auto b = q.submit([&](std::string &error) {
    order.push_back(2);
    error = "no memory";
    return int(PIPE_RT_OUT_OF_MEMORY);
  });
  EXPECT_EQ(q.wait(b), PIPE_RT_OUT_OF_MEMORY);
  EXPECT_EQ(q.wait(a), PIPE_RT_OK);
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  EXPECT_EQ(b->error, "no memory");
  // The work (and what it captured) is dropped once it ran.
  EXPECT_FALSE(a->work);
}

TEST(JobQueue, WaitForReturnsTheFirstError) {
  JobQueue q1, q2;
  auto ok = q1.submit([](std::string &) { return int(PIPE_RT_OK); });
  auto bad = q2.submit([](std::string &) { return int(PIPE_RT_TIMEOUT); });
  auto worse =
      q1.submit([](std::string &) { return int(PIPE_RT_INVALID_ARGUMENT); });
  EXPECT_EQ(waitFor({{&q1, ok}}), PIPE_RT_OK);
  EXPECT_EQ(waitFor({{&q1, ok}, {&q2, bad}, {&q1, worse}}), PIPE_RT_TIMEOUT);
}

TEST(JobQueue, DestructorRunsTheRemainingJobs) {
  int ran = 0;
  {
    JobQueue q;
    for (int i = 0; i < 10; ++i)
      q.submit([&](std::string &) {
        ++ran;
        return int(PIPE_RT_OK);
      });
  }
  EXPECT_EQ(ran, 10);
}

} // namespace
