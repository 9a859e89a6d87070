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
    return scheduleStepsWithPolicy(pipeline, getName(), options,
                                   makeOneFOneBPolicy(pipeline, options));
  }
};
} // namespace

std::unique_ptr<ScheduleGenerator> mlir::pipe::createOneFOneBGenerator() {
  return std::make_unique<OneFOneBGenerator>();
}
