//===- TransfersTest.cpp - The transfers room: tokens, in flight, channels ===//

#include "Transfers.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace pipe_rt;

namespace {

TEST(Transfers, TokensArePerDeviceAndTakenOnce) {
  uint64_t caps[2] = {1024, 1024};
  pipe_rt_devices *devs = pipe_rt_devices_create(2, caps, 10);
  {
    Transfers t(2, inProcessCommunicator(devs), false);
    auto a = std::make_shared<PendingToken>();
    a->what = "a";
    int64_t id = t.addToken(1, a);
    EXPECT_EQ(t.takeToken(0, id), nullptr);
    EXPECT_EQ(t.takeToken(1, id), a);
    EXPECT_EQ(t.takeToken(1, id), nullptr);
    EXPECT_NE(t.addToken(1, a), id);
  }
  pipe_rt_devices_destroy(devs);
}

TEST(Transfers, InFlightBuffersGoToTheReceiverOnce) {
  uint64_t caps[2] = {1024, 1024};
  pipe_rt_devices *devs = pipe_rt_devices_create(2, caps, 10);
  {
    Transfers t(2, inProcessCommunicator(devs), true);
    EXPECT_TRUE(t.byReference());
    auto b = std::make_shared<Buffer>();
    uint64_t id = t.putInFlight(0, {b, nullptr});
    int src = -1;
    std::vector<BufferPtr> got;
    EXPECT_FALSE(t.takeInFlight(id, 3, src, got)); // a size mismatch
    ASSERT_TRUE(t.takeInFlight(id, 2, src, got));
    EXPECT_EQ(src, 0);
    EXPECT_EQ(got[0], b);
    EXPECT_EQ(got[1], nullptr);
    EXPECT_FALSE(t.takeInFlight(id, 2, src, got));
  }
  pipe_rt_devices_destroy(devs);
}

/// Device 0 sends four floats to device 1 over the in-process channels.
struct Exchange {
  Transfers *t;
  float sent[4] = {1, 2, 3, 4}, received[4] = {};
  int status[2] = {-1, -1};
  std::string error[2];
};

int exchange(int d, void *p) {
  auto &x = *static_cast<Exchange *>(p);
  pipe_rt_channel_key key{0, 0, 1, 0, 0};
  pipe_rt_token token = 0;
  Communicator &c = x.t->channels();
  int st = d == 0 ? c.send(0, key, x.sent, sizeof(x.sent), token, x.error[0])
                  : c.recv(1, key, x.received, sizeof(x.received), token,
                           x.error[1]);
  if (st == PIPE_RT_OK)
    st = c.wait(d, token, x.error[d]);
  x.status[d] = st;
  return st;
}

TEST(Transfers, TheInProcessCommunicatorMatchesSendAndRecv) {
  uint64_t caps[2] = {1024, 1024};
  pipe_rt_devices *devs = pipe_rt_devices_create(2, caps, 10);
  {
    Transfers t(2, inProcessCommunicator(devs), false);
    Exchange x{&t};
    EXPECT_EQ(pipe_rt_run_devices(devs, exchange, &x), PIPE_RT_OK);
    EXPECT_EQ(x.status[0], PIPE_RT_OK) << x.error[0];
    EXPECT_EQ(x.status[1], PIPE_RT_OK) << x.error[1];
    EXPECT_EQ(std::memcmp(x.sent, x.received, sizeof(x.sent)), 0);
  }
  pipe_rt_devices_destroy(devs);
}

TEST(Transfers, DrainRunsTheQueuedCopies) {
  uint64_t caps[1] = {1024};
  pipe_rt_devices *devs = pipe_rt_devices_create(1, caps, 10);
  int ran = 0;
  {
    Transfers t(1, inProcessCommunicator(devs), false);
    for (int i = 0; i < 3; ++i) {
      t.h2d(0).submit([&](std::string &) { return ++ran, int(PIPE_RT_OK); });
      t.d2h(0).submit([&](std::string &) { return ++ran, int(PIPE_RT_OK); });
    }
    t.drain();
    EXPECT_EQ(ran, 6);
  }
  pipe_rt_devices_destroy(devs);
}

} // namespace
