//===- ParameterServerTest.cpp - The parameter server room ----------------===//

#include "ParameterServer.h"

#include "Session.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace pipe_rt;

namespace {

/// A host gradient copy the test owns.
BufferPtr pushed(std::vector<float> &g) {
  auto b = std::make_shared<Buffer>();
  b->data = g.data();
  b->bytes = g.size() * 4;
  b->owned = false;
  return b;
}

/// A session of one f32 param "w" = {1, 2} trained by SGD with lr 0.5.
struct OneParam : testing::Test {
  void SetUp() override {
    pipe_rt_session_options_init(&session.options);
    session.options.optimizer = PIPE_RT_OPTIM_SGD;
    session.options.sgd.lr = 0.5f;
    session.optimizer = pipe_rt_host_optimizer_create(1);
    ASSERT_TRUE(session.optimizer);
    session.manifest.params.resize(1);
    session.manifest.params[0].name = "w";
    session.params.resize(1);
    session.psSpare.resize(1);
    float w[2] = {1, 2};
    session.params[0].value.resize(8);
    std::memcpy(session.params[0].value.data(), w, 8);
    ps.assign({true}, /*replicaCount=*/1);
  }
  std::vector<float> weights() {
    std::vector<float> w(2);
    std::memcpy(w.data(), session.params[0].value.data(), 8);
    return w;
  }
  pipe_rt_session session;
  ParameterServer ps;
};

TEST_F(OneParam, AnUpdateSumsEveryPushAndCommitsOutOfPlace) {
  std::vector<float> g1 = {1, 2}, g2 = {3, 0.5f};
  ps.addPush(0, /*replica=*/0, pushed(g1), false, 2);
  ps.addPush(0, /*replica=*/0, pushed(g2), false, 2);
  std::string error;
  ASSERT_EQ(ps.update(session, 0, /*step=*/0, /*outOfPlace=*/false, error),
            PIPE_RT_OK)
      << error;
  // Out of place: the committed weights are unchanged until the commit.
  EXPECT_EQ(weights(), (std::vector<float>{1, 2}));
  ps.commit(session, 0);
  EXPECT_EQ(weights(), (std::vector<float>{1 - 0.5f * 4, 2 - 0.5f * 2.5f}));
  EXPECT_EQ(session.params[0].step, 1);
}

TEST_F(OneParam, NoPushNoUpdate) {
  std::string error;
  ASSERT_EQ(ps.update(session, 0, /*step=*/0, /*outOfPlace=*/false, error),
            PIPE_RT_OK);
  // Skipped, as torch skips None: nothing written to the spare copy.
  EXPECT_TRUE(session.psSpare[0].value.empty());
  EXPECT_EQ(weights(), (std::vector<float>{1, 2}));
}

TEST(ParameterServer, UpdatesWaitForPushesAndLoadsForUpdates) {
  ParameterServer ps;
  ps.assign({true, false, true}, 1);
  EXPECT_TRUE(ps.holds(0));
  EXPECT_FALSE(ps.holds(1));
  JobQueue q;
  auto push = q.submit([](std::string &) { return int(PIPE_RT_OK); });
  ps.pushing({0, 2}, 0, &q, push);
  ps.pushing({2}, 0, &q, push);
  EXPECT_EQ(ps.takePushes({2}, 0).size(), 2u);
  EXPECT_TRUE(ps.takePushes({2}, 0).empty());
  EXPECT_EQ(ps.takePushes({0, 2}, 0).size(), 1u);
  std::vector<JobQueue::Pending> updates;
  std::string error;
  ASSERT_EQ(ps.updatesFor({0}, 0, -1, updates, error), PIPE_RT_OK);
  EXPECT_TRUE(updates.empty());
  ps.updating({0}, push);
  ps.issuedUpdate({0}, 0);
  ASSERT_EQ(ps.updatesFor({0, 2}, 0, -1, updates, error), PIPE_RT_OK);
  ASSERT_EQ(updates.size(), 1u);
  EXPECT_EQ(updates[0].second, push);
  q.wait(push);
}

TEST(ParameterServer, AVersionedLoadWaitsForTheUpdateThatWritesIt) {
  ParameterServer ps;
  ps.assign({true}, 1);
  JobQueue q;
  auto first = q.submit([](std::string &) { return int(PIPE_RT_OK); });
  auto second = q.submit([](std::string &) { return int(PIPE_RT_OK); });
  ps.updating({0}, first);
  ps.issuedUpdate({0}, 0);
  ps.updating({0}, second);
  ps.issuedUpdate({0}, 0);
  std::vector<JobQueue::Pending> updates;
  std::string error;
  // Version 0 is the run's starting weights: nothing to wait for.
  ASSERT_EQ(ps.updatesFor({0}, 0, 0, updates, error), PIPE_RT_OK);
  EXPECT_TRUE(updates.empty());
  EXPECT_TRUE(ps.versionedLoads(0));
  ASSERT_EQ(ps.updatesFor({0}, 0, 1, updates, error), PIPE_RT_OK);
  ASSERT_EQ(updates.size(), 1u);
  EXPECT_EQ(updates[0].second, first);
  // Version 3 needs a third update, which is not issued.
  EXPECT_EQ(ps.updatesFor({0}, 0, 3, updates, error), PIPE_RT_INVALID_ARGUMENT);
  EXPECT_NE(error.find("2 are issued"), std::string::npos) << error;
  q.wait(second);
}

TEST(ParameterServer, AnUpdateWaitsForTheLoadsIssuedBeforeIt) {
  ParameterServer ps;
  ps.assign({true, true}, 1);
  JobQueue q;
  auto load = q.submit([](std::string &) { return int(PIPE_RT_OK); });
  ps.loading({0, 1}, 0, &q, load);
  EXPECT_EQ(ps.takeLoads({0}, 0).size(), 1u);
  EXPECT_TRUE(ps.takeLoads({0}, 0).empty());
  EXPECT_EQ(ps.takeLoads({1}, 0).size(), 1u);
  q.wait(load);
}

TEST_F(OneParam, ReplicasPushesAreSummedInReplicaOrder) {
  ps.assign({true}, /*replicaCount=*/3);
  // Pushed out of order; summed as ((r0 + r1) + r2) all the same.
  std::vector<float> g0 = {1e8f, 1}, g1 = {-1e8f, 2}, g2 = {1, 3};
  ps.addPush(0, 2, pushed(g2), false, 2);
  ps.addPush(0, 0, pushed(g0), false, 2);
  std::string error;
  // Replica 1 pushed nothing yet: an update now is refused, not partial.
  ps.addPush(0, 1, pushed(g1), false, 2);
  ASSERT_EQ(ps.update(session, 0, 0, false, error), PIPE_RT_INVALID_ARGUMENT);
  EXPECT_NE(error.find("never reduced"), std::string::npos) << error;
  ps.reduce(0);
  ASSERT_EQ(ps.update(session, 0, 0, false, error), PIPE_RT_OK) << error;
  ps.commit(session, 0);
  // (1e8 + -1e8) + 1 = 1 in f32, where 1e8 + (-1e8 + 1) would give 0.
  EXPECT_EQ(weights(), (std::vector<float>{1 - 0.5f * 1, 2 - 0.5f * 6}));
}

TEST(ParameterServer, AReplicasLoadWaitsForItsOwnLastUpdate) {
  // Replica 0 is a step ahead: replica 1's load must wait for the update
  // it issued, not for replica 0's next one (which waits for replica 1).
  ParameterServer ps;
  ps.assign({true}, 2);
  JobQueue q;
  auto first = q.submit([](std::string &) { return int(PIPE_RT_OK); });
  auto second = q.submit([](std::string &) { return int(PIPE_RT_OK); });
  ps.updating({0}, first);
  ps.issuedUpdate({0}, 0);
  ps.issuedUpdate({0}, 1);
  ps.updating({0}, second);
  ps.issuedUpdate({0}, 0);
  std::vector<JobQueue::Pending> updates;
  std::string error;
  ASSERT_EQ(ps.updatesFor({0}, 1, -1, updates, error), PIPE_RT_OK);
  ASSERT_EQ(updates.size(), 1u);
  EXPECT_EQ(updates[0].second, first);
  q.wait(second);
}

TEST(JobQueue, AJointJobRunsOnceEveryHolderReleasedIt) {
  JobQueue q;
  int runs = 0;
  auto joint = q.submit(
      [&](std::string &) {
        ++runs;
        return int(PIPE_RT_OK);
      },
      {0, 0}, {}, /*holds=*/2);
  auto later = q.submit([](std::string &) { return int(PIPE_RT_OK); });
  // The queue runs what is ready past the held job.
  EXPECT_EQ(q.wait(later), PIPE_RT_OK);
  EXPECT_FALSE(q.finished(joint));
  q.release(joint);
  EXPECT_FALSE(q.finished(joint));
  q.release(joint);
  EXPECT_EQ(q.wait(joint), PIPE_RT_OK);
  EXPECT_EQ(runs, 1);
}

TEST(JobQueue, AnAbandonedJointJobFails) {
  JobQueue q;
  auto joint = q.submit([](std::string &) { return int(PIPE_RT_OK); }, {0, 0},
                        {}, /*holds=*/2);
  q.release(joint);
  q.abandon(joint);
  EXPECT_EQ(q.wait(joint), PIPE_RT_ABORTED);
}

} // namespace
