//===- OneFOneB.cpp - One-forward-one-backward (PipeDream-Flush) ----------===//
//
// Each stage admits at most as many micro-batches as there are stages from it
// to the end of the pipeline (its height in the stage DAG), and a device
// prefers a ready backward over a forward. On a chain of p stages this is
// the classic 1F1B: p - s - 1 warm-up forwards on stage s, then alternating
// forward and backward, with at most p - s micro-batches' activations kept.
// Devices hosting several stages are ordered by the same greedy rule.
//
//===----------------------------------------------------------------------===//

#include "pipe/Scheduling/ScheduleGenerator.h"

using namespace mlir;
using namespace mlir::pipe;

namespace {
class OneFOneBGenerator : public ScheduleGenerator {
public:
  StringRef getName() const override { return "1f1b"; }

  FailureOr<Schedule> generate(const Pipeline &pipeline,
                               const ScheduleOptions &options,
                               ScheduleDiagFn diag) const override {
    SmallVector<unsigned> height = pipeline.getHeights();
    ListSchedulingPolicy policy;
    policy.forwardOnly = options.forwardOnly;
    policy.maxInFlight = [&](unsigned s) { return height[s]; };
    policy.priority = [](const ComputeItem &item) -> std::array<int64_t, 4> {
      bool isForward = item.kind == ActionKind::Forward;
      return {isForward ? 1 : 0, (int64_t)item.microbatch, (int64_t)item.stage,
              0};
    };
    SmallVector<SmallVector<ComputeItem>> orders(pipeline.numDevices);
    for (unsigned step = 0; step < options.steps; ++step) {
      auto stepOrders =
          listSchedule(pipeline, options.microbatches, policy, step);
      for (unsigned d = 0; d < orders.size(); ++d)
        orders[d].append(stepOrders[d]);
    }
    return lowerComputeOrders(pipeline, getName(), options.microbatches,
                              options.steps, options.forwardOnly,
                              options.recompute, orders);
  }
};
} // namespace

std::unique_ptr<ScheduleGenerator> mlir::pipe::createOneFOneBGenerator() {
  return std::make_unique<OneFOneBGenerator>();
}
