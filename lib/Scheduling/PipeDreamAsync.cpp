//===- PipeDreamAsync.cpp - Asynchronous 1F1B (PipeDream) -----------------===//
//
// PipeDream never flushes: the micro-batches of `steps` consecutive
// optimizer steps stream through one 1F1B pipeline, and each stage updates
// its weights as soon as it has the gradients of its last micro-batch of a
// step, while later micro-batches are already in flight. A micro-batch's
// forward therefore uses whatever weight version its stage has at that
// moment (recorded as `version` = the number of updates done before it).
// With weight stashing its backward uses the same version (the stage keeps
// a copy); with stale weights it uses the latest one.
//
//===----------------------------------------------------------------------===//

#include "pipe/Scheduling/ScheduleGenerator.h"

using namespace mlir;
using namespace mlir::pipe;

namespace {
class PipeDreamAsyncGenerator : public ScheduleGenerator {
public:
  StringRef getName() const override { return "pipedream-async"; }

  FailureOr<Schedule> generate(const Pipeline &pipeline,
                               const ScheduleOptions &options,
                               ScheduleDiagFn diag) const override {
    unsigned m = options.microbatches;
    unsigned steps = options.steps;
    SmallVector<unsigned> height = pipeline.getHeights();
    ListSchedulingPolicy policy;
    policy.forwardOnly = options.forwardOnly;
    policy.maxInFlight = [&](unsigned s) { return height[s]; };
    policy.priority = [](const ComputeItem &item) -> std::array<int64_t, 4> {
      bool isForward = item.kind == ActionKind::Forward;
      return {isForward ? 1 : 0, (int64_t)item.microbatch, (int64_t)item.stage,
              0};
    };
    // One long 1F1B over all steps' micro-batches, then split back.
    auto streamed = listSchedule(pipeline, m * steps, policy);
    // Stages tied by shared parameters update together, once all of them
    // have their step's gradients (the reduction needs every part).
    unsigned numStages = pipeline.getNumStages();
    SmallVector<unsigned> group(numStages);
    for (unsigned s = 0; s < numStages; ++s)
      group[s] = s;
    auto find = [&](unsigned s) {
      while (group[s] != s)
        s = group[s] = group[group[s]];
      return s;
    };
    for (const SharedParam &param : pipeline.sharedParams)
      for (unsigned s : param.stages)
        group[find(s)] = find(param.stages.front());
    SmallVector<SmallVector<ComputeItem>> orders(pipeline.numDevices);
    for (unsigned d = 0; d < pipeline.numDevices; ++d) {
      SmallVector<unsigned> updates(numStages, 0);
      // Backwards left per (group, step) on this device.
      std::map<std::pair<unsigned, unsigned>, unsigned> backwardsLeft;
      for (unsigned s : pipeline.getStagesOnDevice(d))
        for (unsigned step = 0; step < steps; ++step)
          backwardsLeft[{find(s), step}] += m;
      std::map<std::pair<unsigned, unsigned>, int> forwardVersion;
      for (ComputeItem item : streamed[d]) {
        unsigned global = item.microbatch;
        item.step = global / m;
        item.microbatch = global % m;
        if (item.kind == ActionKind::Forward) {
          item.version = updates[item.stage];
          forwardVersion[{item.stage, global}] = item.version;
        } else {
          item.version = options.stashWeights
                             ? forwardVersion[{item.stage, global}]
                             : (int)updates[item.stage];
        }
        orders[d].push_back(item);
        if (item.kind == ActionKind::Backward &&
            --backwardsLeft[{find(item.stage), item.step}] == 0) {
          for (unsigned s : pipeline.getStagesOnDevice(d))
            if (find(s) == find(item.stage)) {
              orders[d].push_back({ActionKind::Update, s, 0, item.step, -1});
              ++updates[s];
            }
        }
      }
    }
    return lowerComputeOrders(pipeline, getName(), m, steps,
                              options.forwardOnly, options.recompute, orders);
  }
};
} // namespace

std::unique_ptr<ScheduleGenerator> mlir::pipe::createPipeDreamAsyncGenerator() {
  return std::make_unique<PipeDreamAsyncGenerator>();
}
