//===- CheckerTest.cpp - The schedule checker catches broken schedules ----===//

#include "pipe/Scheduling/ScheduleChecker.h"
#include "pipe/Scheduling/ScheduleGenerator.h"
#include "pipe/Scheduling/Simulator.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::pipe;

namespace {

Schedule make(StringRef kind, const Pipeline &pipeline, unsigned m) {
  ScheduleOptions options;
  options.microbatches = m;
  FailureOr<Schedule> schedule =
      generateSchedule(kind, pipeline, options, [](const Twine &message) {
        ADD_FAILURE() << message.str();
      });
  return succeeded(schedule) ? *schedule : Schedule();
}

int find(const Schedule &schedule, unsigned device, ActionKind kind, int stage,
         int mb) {
  const auto &actions = schedule.devices[device];
  for (unsigned i = 0; i < actions.size(); ++i)
    if (actions[i].kind == kind && actions[i].stage == stage &&
        actions[i].microbatch == mb)
      return i;
  return -1;
}

std::string messages(ArrayRef<ScheduleViolation> violations) {
  std::string all;
  for (const ScheduleViolation &v : violations)
    all += v.message + "\n";
  return all;
}

TEST(Checker, AcceptsGeneratedSchedules) {
  Pipeline pipeline = Pipeline::makeChain(3, 3, 1, 1, 1, 1);
  for (const std::string &kind :
       {"gpipe", "1f1b", "zb-h1", "mixed", "pipedream-async"}) {
    Schedule schedule = make(kind, pipeline, 6);
    EXPECT_EQ(messages(checkSchedule(pipeline, schedule, nullptr)), "") << kind;
  }
}

TEST(Checker, RepeatedTransfer) {
  // The IR's verifier refuses a repeated transfer; the C++ API meets it
  // too: each message is sent once and received once.
  Pipeline pipeline = Pipeline::makeChain(2, 2, 1, 1, 1);
  Schedule schedule = make("1f1b", pipeline, 2);
  int index = find(schedule, 0, ActionKind::Send, 0, 1);
  ASSERT_GE(index, 0);
  ScheduleAction again = schedule.devices[0][index];
  again.token = 1000;
  ScheduleAction wait;
  wait.kind = ActionKind::Wait;
  wait.waits.push_back(again.token);
  schedule.devices[0].insert(schedule.devices[0].begin() + index + 1,
                             {again, wait});
  std::string text = messages(checkSchedule(pipeline, schedule, nullptr));
  EXPECT_NE(text.find("device 0: pipe.send activation @s0 -> @s1 mb 1 "
                      "repeats a transfer; the first is action " +
                      std::to_string(index) + " of device 0"),
            std::string::npos)
      << text;
}

TEST(Checker, PeerOrderCountsEveryMessage) {
  // Device 1 receives one message fewer than device 0 sends it: NCCL would
  // leave the last send unmatched.
  Pipeline pipeline = Pipeline::makeChain(2, 2, 1, 1, 1);
  Schedule schedule = make("gpipe", pipeline, 2);
  auto &list = schedule.devices[1];
  int last = -1;
  for (int i = 0, e = list.size(); i < e; ++i)
    if (list[i].kind == ActionKind::Recv)
      last = i;
  ASSERT_GE(last, 0);
  int token = list[last].token;
  list.erase(list.begin() + last);
  for (ScheduleAction &a : list)
    llvm::erase(a.waits, token);
  ScheduleCheckOptions options;
  options.checkPeerOrder = true;
  std::string text =
      messages(checkSchedule(pipeline, schedule, nullptr, options));
  EXPECT_NE(text.find("from device 0 to device 1, but device 1 receives only "),
            std::string::npos)
      << text;
}

TEST(Checker, MissingAction) {
  Pipeline pipeline = Pipeline::makeChain(2, 2, 1, 1, 1);
  Schedule schedule = make("1f1b", pipeline, 2);
  int index = find(schedule, 1, ActionKind::Backward, 1, 1);
  ASSERT_GE(index, 0);
  schedule.devices[1].erase(schedule.devices[1].begin() + index);
  std::string text = messages(checkSchedule(pipeline, schedule, nullptr));
  EXPECT_NE(text.find("device 1 never runs the backward of @s1 for "
                      "micro-batch 1"),
            std::string::npos)
      << text;
}

TEST(Checker, WrongOrder) {
  Pipeline pipeline = Pipeline::makeChain(1, 1, 1, 1, 1);
  Schedule schedule = make("gpipe", pipeline, 1);
  auto &actions = schedule.devices[0];
  int f = find(schedule, 0, ActionKind::Forward, 0, 0);
  int b = find(schedule, 0, ActionKind::Backward, 0, 0);
  std::swap(actions[f], actions[b]);
  std::string text = messages(checkSchedule(pipeline, schedule, nullptr));
  EXPECT_NE(text.find("pipe.backward @s0 mb 0 runs before the forward"),
            std::string::npos)
      << text;
}

TEST(Checker, Deadlock) {
  // Device 0 receives the gradient before it sends the activations.
  Pipeline pipeline = Pipeline::makeChain(2, 2, 1, 1, 1);
  Schedule schedule = make("gpipe", pipeline, 1);
  auto &actions = schedule.devices[0];
  auto isRecv = [](const ScheduleAction &a) {
    return a.kind == ActionKind::Recv;
  };
  auto recv = llvm::find_if(actions, isRecv);
  ASSERT_NE(recv, actions.end());
  ScheduleAction moved = *recv;
  ScheduleAction wait = *(recv + 1);
  actions.erase(recv, recv + 2);
  actions.insert(actions.begin(), {moved, wait});
  std::string text = messages(checkSchedule(pipeline, schedule, nullptr));
  EXPECT_NE(text.find("deadlocks"), std::string::npos) << text;
}

TEST(Checker, MemoryOverCapacity) {
  Pipeline pipeline = Pipeline::makeChain(2, 2, 1, 1, 1, /*saved=*/100);
  Schedule gpipe = make("gpipe", pipeline, 8);
  Schedule oneF = make("1f1b", pipeline, 8);
  MachineModel machine = MachineModel::makeIdeal(2);
  for (auto &device : machine.devices)
    device.memoryBytes = 500;
  // GPipe keeps 8 micro-batches (800 bytes), 1F1B at most 2.
  EXPECT_NE(messages(checkSchedule(pipeline, gpipe, &machine))
                .find("needs 600 bytes of device memory"),
            std::string::npos);
  EXPECT_EQ(messages(checkSchedule(pipeline, oneF, &machine)), "");
}

/// Peak device memory the simulator's memory model gives `schedule`.
SmallVector<int64_t> peaks(const Pipeline &pipeline, const Schedule &schedule) {
  MachineModel machine =
      MachineModel::makeIdeal(std::max<unsigned>(pipeline.numDevices, 1));
  FailureOr<SimulationReport> report =
      simulate(pipeline, schedule, machine, SimulationOptions(),
               [](const Twine &message) { ADD_FAILURE() << message.str(); });
  SmallVector<int64_t> out;
  if (succeeded(report))
    for (const DeviceSimReport &device : report->devices)
      out.push_back(device.peakMemory);
  return out;
}

TEST(MemoryModel, GradientsLiveFromTheFirstBackwardToTheUpdate) {
  // One stage on one device, GPipe over 2 micro-batches: parameters (1000)
  // always; both micro-batches' saved activations (2 x 100) before the
  // first backward; the gradients (1000, the parameters' size) from then
  // to the update. Optimizer state is host memory and not counted.
  Pipeline pipeline = Pipeline::makeChain(1, 1, 1, 1, 1, /*saved=*/100,
                                          /*edge=*/0, /*param=*/1000);
  EXPECT_EQ(peaks(pipeline, make("gpipe", pipeline, 2)),
            SmallVector<int64_t>({1000 + 2 * 100 + 1000}));
}

TEST(MemoryModel, WeightStashKeepsOneCopyPerVersionInFlight) {
  // PipeDream-async keeps weight versions: an update that finds forwards
  // of the current version still waiting for their backward copies the
  // stage's parameters first. Counted only for a schedule that keeps
  // versions: the same actions without the flag hold less.
  Pipeline pipeline = Pipeline::makeChain(2, 2, 1, 1, 1, /*saved=*/10,
                                          /*edge=*/1, /*param=*/1000);
  ScheduleOptions options;
  options.microbatches = 4;
  options.steps = 4;
  FailureOr<Schedule> stash = generateSchedule(
      "pipedream-async", pipeline, options,
      [](const Twine &message) { ADD_FAILURE() << message.str(); });
  ASSERT_TRUE(succeeded(stash));
  ASSERT_TRUE(stash->keepsWeightVersions);
  Schedule plain = *stash;
  plain.keepsWeightVersions = false;
  SmallVector<int64_t> with = peaks(pipeline, *stash),
                       without = peaks(pipeline, plain);
  ASSERT_EQ(with.size(), 2u);
  ASSERT_EQ(without.size(), 2u);
  // Device 0 has the deepest pipeline: forwards of the current version are
  // in flight at every update.
  EXPECT_GE(with[0] - without[0], 1000);
  EXPECT_GE(with[1], without[1]);
}

} // namespace
