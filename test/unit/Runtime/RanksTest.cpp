//===- RanksTest.cpp - Agreements of the ranks of a distributed run -------===//
//
// The ranks' agreements (pipe/Runtime/Transport.h) over a loopback
// transport: each rank is a thread, messages meet in a shared hub. No MPI
// needed; test/Distributed runs the real thing.
//
//===----------------------------------------------------------------------===//

#include "Ranks.h"
#include "Cores.h"

#include "pipe/Runtime/Status.h"
#include "pipe/Runtime/Transport.h"

#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <vector>

using namespace pipe_rt;

namespace {

/// Where the messages of every rank meet: by (channel, from, to, tag), the
/// sends not yet received, in order, and the receives not yet matched.
struct Hub {
  struct Recv {
    void *data;
    uint64_t bytes;
    uint64_t request;
  };
  using Key = std::tuple<int, int, int, int>;
  std::mutex mu;
  std::map<Key, std::deque<std::vector<unsigned char>>> sends;
  std::map<Key, std::deque<Recv>> recvs;
  std::map<uint64_t, int> done; // request -> status once complete
  uint64_t next = 1;
};

class LoopbackTransport final : public Transport {
public:
  LoopbackTransport(Hub &hub, int rank, int size, int hostPlace = -1)
      : hub(hub), me(rank), ranks(size),
        hostPlace(hostPlace < 0 ? rank : hostPlace) {
    watchdogSeconds = 0.5;
  }
  const char *name() const override { return "loopback"; }
  int rank() const override { return me; }
  int size() const override { return ranks; }
  int localRank() const override { return hostPlace; }
  int maxTag() const override { return 32767; }

  int isend(Channel channel, int peer, int tag, const void *data,
            uint64_t bytes, uint64_t &request, std::string &error) override {
    std::lock_guard<std::mutex> lock(hub.mu);
    request = hub.next++;
    Hub::Key key{int(channel), me, peer, tag};
    auto &waiting = hub.recvs[key];
    if (!waiting.empty()) {
      Hub::Recv r = waiting.front();
      waiting.pop_front();
      hub.done[r.request] = r.bytes == bytes ? PIPE_RT_OK
                                             : PIPE_RT_SIZE_MISMATCH;
      std::memcpy(r.data, data, std::min(bytes, r.bytes));
    } else {
      auto *p = static_cast<const unsigned char *>(data);
      hub.sends[key].emplace_back(p, p + bytes);
    }
    hub.done[request] = PIPE_RT_OK; // eager: the data was copied
    return PIPE_RT_OK;
  }
  int irecv(Channel channel, int peer, int tag, void *data, uint64_t bytes,
            uint64_t &request, std::string &error) override {
    std::lock_guard<std::mutex> lock(hub.mu);
    request = hub.next++;
    Hub::Key key{int(channel), peer, me, tag};
    auto &sent = hub.sends[key];
    if (!sent.empty()) {
      std::vector<unsigned char> m = std::move(sent.front());
      sent.pop_front();
      std::memcpy(data, m.data(), std::min<uint64_t>(m.size(), bytes));
      hub.done[request] =
          m.size() == bytes ? PIPE_RT_OK : PIPE_RT_SIZE_MISMATCH;
    } else {
      hub.recvs[key].push_back({data, bytes, request});
    }
    return PIPE_RT_OK;
  }
  int test(uint64_t request, bool &done, std::string &error) override {
    std::lock_guard<std::mutex> lock(hub.mu);
    auto it = hub.done.find(request);
    done = it != hub.done.end();
    if (!done)
      return PIPE_RT_OK;
    int st = it->second;
    hub.done.erase(it);
    if (st != PIPE_RT_OK)
      error = "size mismatch";
    return st;
  }
  [[noreturn]] void abortJob(int exitCode) override { std::abort(); }

private:
  Hub &hub;
  int me, ranks, hostPlace;
};

/// Runs `body(transport)` on `size` ranks, one thread each.
void onRanks(int size, const std::function<void(Transport &)> &body) {
  Hub hub;
  std::vector<std::unique_ptr<LoopbackTransport>> transports;
  for (int r = 0; r < size; ++r)
    transports.push_back(std::make_unique<LoopbackTransport>(hub, r, size));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r)
    threads.emplace_back([&, r] { body(*transports[r]); });
  for (std::thread &t : threads)
    t.join();
}

TEST(Ranks, SumsAgreeBitForBitInRankOrder) {
  // 0.1 + 0.2 + 0.3 in rank order; every rank gets exactly that double.
  double expected = (0.1 + 0.2) + 0.3;
  std::vector<double> got(3);
  onRanks(3, [&](Transport &t) {
    double values[2] = {0.1 * (t.rank() + 1), double(t.rank())};
    std::string error;
    ASSERT_EQ(agreeSum(t, values, 2, "a test", error), PIPE_RT_OK) << error;
    EXPECT_EQ(values[1], 3.0);
    got[t.rank()] = values[0];
  });
  for (double g : got)
    EXPECT_EQ(g, expected);
}

TEST(Ranks, MaxAndBroadcastReachEveryRank) {
  onRanks(4, [&](Transport &t) {
    int64_t flag = t.rank() == 2 ? 7 : 0;
    std::string error;
    ASSERT_EQ(agreeMax(t, &flag, 1, "a test", error), PIPE_RT_OK) << error;
    EXPECT_EQ(flag, 7);
    // Root 1's bytes everywhere, twice in a row (the tags advance).
    for (int round = 0; round < 2; ++round) {
      char text[8] = {};
      if (t.rank() == 1)
        std::snprintf(text, sizeof(text), "root %d", round);
      ASSERT_EQ(agreeOn(t, 1, text, sizeof(text), "a test", error),
                PIPE_RT_OK)
          << error;
      EXPECT_STREQ(text, round ? "root 1" : "root 0");
    }
  });
}

TEST(Ranks, AMissingRankIsNamedWhenTheWatchdogFires) {
  std::vector<std::string> errors(3);
  std::vector<int> status(3, PIPE_RT_OK);
  onRanks(3, [&](Transport &t) {
    if (t.rank() == 2)
      return; // never joins
    double value = 1;
    status[t.rank()] = agreeSum(t, &value, 1, "the test", errors[t.rank()]);
  });
  EXPECT_EQ(status[0], PIPE_RT_TIMEOUT);
  EXPECT_NE(errors[0].find("rank 2 did not join the test within 0.5 s: is "
                           "rank 2 stuck?"),
            std::string::npos)
      << errors[0];
  // Rank 1 waits for rank 0's answer, which never comes.
  EXPECT_EQ(status[1], PIPE_RT_TIMEOUT);
  EXPECT_NE(errors[1].find("rank 0 did not join the test"), std::string::npos)
      << errors[1];
}

TEST(Ranks, EachRankOpensOnlyItsDevicesAtItsPlaceOnTheHost) {
  Hub hub;
  RankMap alone;
  EXPECT_TRUE(placesOnHost(alone, 4, 4).empty());

  // Rank 1 of 2, two devices each, on one host: devices 2 and 3, after
  // rank 0's two.
  RankMap pipeline;
  pipeline.transport = std::make_shared<LoopbackTransport>(hub, 1, 2);
  pipeline.devicesPerRank = 2;
  pipeline.ranksPerReplica = 2;
  EXPECT_EQ(placesOnHost(pipeline, 4, 4), (std::vector<int>{-1, -1, 2, 3}));

  // 2 pipeline x 2 data-parallel ranks on two hosts, two ranks each: rank
  // 3 runs replica 1's device 1 and is second on its host.
  RankMap data;
  data.transport = std::make_shared<LoopbackTransport>(hub, 3, 4, 1);
  data.replicas = 2;
  data.ranksPerReplica = 2;
  EXPECT_EQ(placesOnHost(data, 2, 2), (std::vector<int>{-1, 1}));
}

TEST(Ranks, HostOptimizerDefaultCountsOnlyThisRanksDevices) {
  // A parameter-server schedule overlapping host updates with compute,
  // 1 device x 4 replicas: in one process its 4 device threads each keep a
  // core; as one of 2 ranks (2 replicas each) only this rank's 2 do.
  Hub hub;
  pipe_rt_session session;
  ScheduleInfo sched;
  sched.steps = 2;
  sched.replicas = 4;
  sched.psStage = {true};
  session.manifest.schedules.push_back(sched);
  unsigned cores = processCores();
  auto leftOver = [&](unsigned busy) {
    return cores > busy ? cores - busy : 1;
  };
  EXPECT_EQ(defaultOptimizerThreads(session), leftOver(4));
  session.ranks.transport = std::make_shared<LoopbackTransport>(hub, 1, 2);
  session.ranks.replicas = 2;
  session.ranks.replicasPerRank = 2;
  EXPECT_EQ(defaultOptimizerThreads(session), leftOver(2));
}

} // namespace
