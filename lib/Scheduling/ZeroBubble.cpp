//===- ZeroBubble.cpp - ZB-H1: 1F1B with the backward split ---------------===//
//
// The backward of each stage is split into its input-gradient part
// (`backward.input`, on the critical path: the previous stage waits for it)
// and its weight-gradient part (`backward.weight`, needed only by the
// update). On a chain of p stages, stage i runs 1F1B's order of forwards
// and input-gradient backwards and delays each weight-gradient backward by
// i micro-batches: W(k) runs right after B(k + i), and the last i run at the
// end, where they fill the drain. Each stage then keeps at most
// (p - i - 1) + 1 + i = p micro-batches between forward and weight
// gradient, as 1F1B keeps on its first stage, and with equal forward,
// input- and weight-backward times the bubble is (p - 1) / (3m + p - 1),
// a third of 1F1B's bubble time.
//
// Other placements (stage DAGs, several stages per device) are ordered by
// the list scheduler: input-gradient backwards first, then forwards (at most
// as many micro-batches in flight as the pipeline is deep), weight-gradient
// backwards filling whatever time is left.
//
//===----------------------------------------------------------------------===//

#include "pipe/Scheduling/ScheduleGenerator.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::pipe;

namespace {
class ZeroBubbleH1Generator : public ScheduleGenerator {
public:
  StringRef getName() const override { return "zb-h1"; }

  FailureOr<Schedule> generate(const Pipeline &pipeline,
                               const ScheduleOptions &options,
                               ScheduleDiagFn diag) const override {
    unsigned m = options.microbatches;
    SmallVector<SmallVector<ComputeItem>> orders(pipeline.numDevices);
    for (unsigned step = 0; step < options.steps; ++step) {
      SmallVector<SmallVector<ComputeItem>> stepOrders =
          isChain(pipeline) && !options.forwardOnly
              ? chainOrders(pipeline, m, step)
              : listOrders(pipeline, options, step);
      for (unsigned d = 0; d < orders.size(); ++d)
        orders[d].append(stepOrders[d]);
    }
    return lowerComputeOrders(pipeline, getName(), m, options.steps,
                              options.forwardOnly, options.recompute, orders);
  }

private:
  /// One stage per device, stages linked in a single chain.
  static bool isChain(const Pipeline &pipeline) {
    if (pipeline.getNumStages() != pipeline.numDevices)
      return false;
    for (unsigned d = 0; d < pipeline.numDevices; ++d)
      if (pipeline.getStagesOnDevice(d).size() != 1)
        return false;
    for (unsigned s = 0; s < pipeline.getNumStages(); ++s)
      if (pipeline.getConsumers(s).size() > 1 ||
          pipeline.getProducers(s).size() > 1)
        return false;
    return pipeline.edges.size() + 1 == pipeline.getNumStages();
  }

  static SmallVector<SmallVector<ComputeItem>>
  chainOrders(const Pipeline &pipeline, unsigned m, unsigned step) {
    unsigned p = pipeline.getNumStages();
    SmallVector<unsigned> depth = pipeline.getDepths();
    SmallVector<SmallVector<ComputeItem>> orders(pipeline.numDevices);
    for (unsigned s = 0; s < p; ++s) {
      unsigned i = depth[s];
      SmallVector<ComputeItem> &order = orders[pipeline.stages[s].device];
      auto add = [&](ActionKind kind, unsigned mb) {
        order.push_back({kind, s, mb, step, -1});
      };
      unsigned warmup = std::min(m, p - i - 1);
      unsigned backwards = 0, weights = 0;
      auto backward = [&](unsigned mb) {
        add(ActionKind::BackwardInput, mb);
        if (++backwards > i)
          add(ActionKind::BackwardWeight, weights++);
      };
      for (unsigned k = 0; k < warmup; ++k)
        add(ActionKind::Forward, k);
      for (unsigned k = 0; k + warmup < m; ++k) {
        add(ActionKind::Forward, warmup + k);
        backward(k);
      }
      for (unsigned k = m - warmup; k < m; ++k)
        backward(k);
      while (weights < m)
        add(ActionKind::BackwardWeight, weights++);
    }
    return orders;
  }

  static SmallVector<SmallVector<ComputeItem>>
  listOrders(const Pipeline &pipeline, const ScheduleOptions &options,
             unsigned step) {
    SmallVector<unsigned> height = pipeline.getHeights();
    unsigned depth = *llvm::max_element(height);
    ListSchedulingPolicy policy;
    policy.splitBackward = true;
    policy.forwardOnly = options.forwardOnly;
    policy.maxInFlight = [depth](unsigned) { return depth; };
    policy.priority = [](const ComputeItem &item) -> std::array<int64_t, 4> {
      int64_t rank = item.kind == ActionKind::BackwardInput ? 0
                     : item.kind == ActionKind::Forward     ? 1
                                                            : 2;
      return {rank, (int64_t)item.microbatch, (int64_t)item.stage, 0};
    };
    return listSchedule(pipeline, options.microbatches, policy, step);
  }
};
} // namespace

std::unique_ptr<ScheduleGenerator> mlir::pipe::createZeroBubbleH1Generator() {
  return std::make_unique<ZeroBubbleH1Generator>();
}
