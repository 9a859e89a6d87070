//===- LoopedBFS.cpp - Breadth-first looped schedule (tutorial example) ---===//
//
// The schedule written in docs/tutorial-new-schedule.md. With several
// stages per device (round-robin "loops" over the devices), a device runs
// its shallowest stage for every micro-batch before moving to its next
// stage (breadth-first over micro-batches), and backwards likewise from
// its deepest stage, as soon as no forward is ready. Compared with
// interleaved-1f1b it keeps all micro-batches' activations but needs no
// divisibility of the micro-batch count, and it shows the few lines a
// schedule takes on top of the list scheduler.
//
//===----------------------------------------------------------------------===//

#include "pipe/Scheduling/ScheduleGenerator.h"

using namespace mlir;
using namespace mlir::pipe;

namespace {
class LoopedBFSGenerator : public ScheduleGenerator {
public:
  StringRef getName() const override { return "looped-bfs"; }

  FailureOr<Schedule> generate(const Pipeline &pipeline,
                               const ScheduleOptions &options,
                               ScheduleDiagFn diag) const override {
    SmallVector<unsigned> depth = pipeline.getDepths();
    ListSchedulingPolicy policy;
    policy.forwardOnly = options.forwardOnly;
    // Forwards first, shallow stages first, then micro-batch order;
    // backwards from the deepest stage.
    policy.priority = [&](const ComputeItem &item) -> std::array<int64_t, 4> {
      bool forward = item.kind == ActionKind::Forward;
      int64_t stageRank =
          forward ? depth[item.stage] : -(int64_t)depth[item.stage];
      return {forward ? 0 : 1, stageRank, (int64_t)item.microbatch, 0};
    };
    // List-schedule each step, then add sends, receives, waits,
    // shared-gradient reductions and updates.
    return scheduleStepsWithPolicy(pipeline, getName(), options, policy);
  }
};
} // namespace

std::unique_ptr<ScheduleGenerator> mlir::pipe::createLoopedBFSGenerator() {
  return std::make_unique<LoopedBFSGenerator>();
}
