//===- GPipe.cpp - Fill-drain (GPipe) schedule ----------------------------===//
//
// Every device runs all forwards of its stages, then all backwards in
// reverse. Stages are taken by depth in the stage DAG, so that a device
// hosting several stages (Mixed-Pipe) finishes its shallow stages' work
// before its deeper stages need their inputs; every device follows the same
// global order, which keeps the lists free of deadlocks.
//
//===----------------------------------------------------------------------===//

#include "pipe/Scheduling/ScheduleGenerator.h"

using namespace mlir;
using namespace mlir::pipe;

namespace {
class GPipeGenerator : public ScheduleGenerator {
public:
  StringRef getName() const override { return "gpipe"; }

  FailureOr<Schedule> generate(const Pipeline &pipeline,
                               const ScheduleOptions &options,
                               ScheduleDiagFn diag) const override {
    SmallVector<unsigned> depth = pipeline.getDepths();
    unsigned m = options.microbatches;
    SmallVector<SmallVector<ComputeItem>> orders(pipeline.numDevices);
    for (unsigned d = 0; d < pipeline.numDevices; ++d) {
      SmallVector<unsigned> stages = pipeline.getStagesOnDevice(d);
      llvm::stable_sort(
          stages, [&](unsigned a, unsigned b) { return depth[a] < depth[b]; });
      for (unsigned step = 0; step < options.steps; ++step) {
        for (unsigned s : stages)
          for (unsigned mb = 0; mb < m; ++mb)
            orders[d].push_back({ActionKind::Forward, s, mb, step, -1});
        if (options.forwardOnly)
          continue;
        for (unsigned s : llvm::reverse(stages))
          for (unsigned mb = m; mb-- > 0;)
            orders[d].push_back({ActionKind::Backward, s, mb, step, -1});
      }
    }
    return lowerComputeOrders(pipeline, getName(), m, options.steps,
                              options.forwardOnly, options.recompute, orders);
  }
};
} // namespace

std::unique_ptr<ScheduleGenerator> mlir::pipe::createGPipeGenerator() {
  return std::make_unique<GPipeGenerator>();
}
