//===- CheckerTest.cpp - The schedule checker catches broken schedules ----===//

#include "pipe/Scheduling/ScheduleChecker.h"
#include "pipe/Scheduling/ScheduleGenerator.h"

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

} // namespace
