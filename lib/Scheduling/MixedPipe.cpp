//===- MixedPipe.cpp - Depth-prioritised 1F1B for Mixed-Pipe placements ---===//
//
// FTPipe places non-adjacent stages of a stage DAG on one device. A device
// then has to choose between the work of several stages; this kind lets the
// deepest stage (closest to the loss) go first, for backwards and forwards
// alike, so that micro-batches drain out of the pipeline and free their
// activations early, and bounds each stage's micro-batches in flight by its
// height as 1F1B does.
//
//===----------------------------------------------------------------------===//

#include "pipe/Scheduling/ScheduleGenerator.h"

using namespace mlir;
using namespace mlir::pipe;

namespace {
class MixedPipeGenerator : public ScheduleGenerator {
public:
  StringRef getName() const override { return "mixed"; }

  FailureOr<Schedule> generate(const Pipeline &pipeline,
                               const ScheduleOptions &options,
                               ScheduleDiagFn diag) const override {
    SmallVector<unsigned> height = pipeline.getHeights();
    SmallVector<unsigned> depth = pipeline.getDepths();
    ListSchedulingPolicy policy;
    policy.forwardOnly = options.forwardOnly;
    policy.maxInFlight = [&](unsigned s) { return height[s]; };
    policy.priority = [&](const ComputeItem &item) -> std::array<int64_t, 4> {
      bool isForward = item.kind == ActionKind::Forward;
      return {isForward ? 1 : 0, -(int64_t)depth[item.stage],
              (int64_t)item.microbatch, (int64_t)item.stage};
    };
    return scheduleStepsWithPolicy(pipeline, getName(), options, policy);
  }
};
} // namespace

std::unique_ptr<ScheduleGenerator> mlir::pipe::createMixedPipeGenerator() {
  return std::make_unique<MixedPipeGenerator>();
}
