//===- RendezvousTest.cpp - Meetings of the devices of a run --------------===//

#include "Rendezvous.h"

#include "pipe/Runtime/Status.h"

#include <gtest/gtest.h>

#include <thread>

using namespace pipe_rt;

namespace {

/// Device `d` deposits `value` into meeting (param, 0) of {0, 1} and reads
/// the sum.
int meetSum(Rendezvous &r, int d, double value, double watchdog, double &sum,
            std::string &error, int param = 0) {
  return r.meet(
      {param, 0, 0}, d, {0, 1}, watchdog,
      [&](Rendezvous::Meeting &m) { m.sums[d] = value; },
      [&](Rendezvous::Meeting &m) {
        sum = 0;
        for (auto &[dev, s] : m.sums)
          sum += s;
        return int(PIPE_RT_OK);
      },
      error);
}

TEST(Rendezvous, EveryParticipantCollectsTheSameTotal) {
  Rendezvous r;
  double s0 = 0, s1 = 0;
  std::string e0, e1;
  int st0 = 0;
  std::thread t([&] { st0 = meetSum(r, 0, 1.5, 10, s0, e0); });
  EXPECT_EQ(meetSum(r, 1, 2.0, 10, s1, e1), PIPE_RT_OK);
  t.join();
  EXPECT_EQ(st0, PIPE_RT_OK);
  EXPECT_EQ(s0, 3.5);
  EXPECT_EQ(s1, 3.5);
  EXPECT_TRUE(e0.empty() && e1.empty());
}

TEST(Rendezvous, NamesTheDevicesThatDidNotJoin) {
  Rendezvous r;
  double sum = 0;
  std::string error;
  EXPECT_EQ(meetSum(r, 0, 1, 0.05, sum, error), PIPE_RT_TIMEOUT);
  EXPECT_EQ(error, ": device(s) 1 did not join within 0.05 s");
  // The timeout failed the run: the next meeting aborts at once.
  EXPECT_EQ(meetSum(r, 1, 1, 10, sum, error, /*param=*/1), PIPE_RT_ABORTED);
  EXPECT_EQ(error, ": aborted by an error on another device");
}

TEST(Rendezvous, AbortReleasesAWaitingDevice) {
  Rendezvous r;
  double sum = 0;
  std::string error;
  int st = 0;
  std::thread t([&] { st = meetSum(r, 0, 1, 60, sum, error); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  r.abort();
  t.join();
  EXPECT_EQ(st, PIPE_RT_ABORTED);
}

} // namespace
