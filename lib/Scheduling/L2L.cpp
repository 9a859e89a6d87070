//===- L2L.cpp - Layer-to-layer execution from a host parameter server ----===//
//
// One device runs the whole model one stage (layer) at a time over all
// micro-batches, with the parameters living on the host:
//
//   forward, for each stage in order: issue the load of the next stage
//   (double buffering: it streams in while this one computes), wait for this
//   stage's load, run it on every micro-batch, release it;
//   backward, for each stage in reverse: prefetch the next stage's
//   parameters, recompute the stage's forward from its kept boundary input
//   and run its backward on every micro-batch (the weight gradient
//   accumulates across them), push the gradient to the host and run the
//   host optimizer on it, both overlapped with the next stage's work,
//   release; the previous stage's push is waited for once this stage's
//   gradient is pushed, so at most two stages' gradients are on the device.
//
// With HostUpdateMode::Overlap, a step other than the last does not wait for
// its host updates: the next step's loads are issued at once and the
// runtime runs each after the update of its stage's parameters (a load
// waits for the last update of its params), and the device waits for a
// stage's update token with its load. Layer 0's update is issued last, so
// the host optimizer runs the queued update of the lowest stage first.
//
// With HostUpdateMode::Delayed, step k > 0 of the schedule computes on the
// weights before step k-1's update: its loads (forward and backward) name
// weight version k-1, which the runtime keeps while step k-1's update
// writes version k next to it. So no load waits for the previous step's
// update, which the host runs while the device computes; the device waits
// for it only before pushing the same stage's next gradient (the host
// accumulates pushes until an update consumes them).
//
// With data parallelism (a placement of R replicas), each replica runs this
// action list on its own device and its share of the micro-batches, loading
// from the one host copy; after each stage's push, ps.reduce sums the R
// replicas' pushed gradients on the host (in replica order) and the
// ps.update applies the sum once.
//
// The last stage stays resident from its forward into its backward. With
// `constantMemory`, every micro-batch's boundary input is offloaded to the
// host after its forward and prefetched back, one stage ahead, for the
// backward, so device memory does not grow with depth.
//
//===----------------------------------------------------------------------===//

#include "pipe/Scheduling/ScheduleGenerator.h"

using namespace mlir;
using namespace mlir::pipe;

namespace {
class L2LGenerator : public ScheduleGenerator {
public:
  StringRef getName() const override { return "l2l"; }
  ScheduleTraits getTraits() const override {
    ScheduleTraits traits;
    traits.parameterServer = true;
    return traits;
  }

  FailureOr<Schedule> generate(const Pipeline &pipeline,
                               const ScheduleOptions &options,
                               ScheduleDiagFn diag) const override {
    for (const PipelineStage &stage : pipeline.stages)
      if (stage.device != 0) {
        diag("l2l runs every stage on device 0, but stage '" + stage.name +
             "' is on device " + llvm::Twine(stage.device) +
             "; place the model on one device");
        return failure();
      }
    SmallVector<unsigned> order = pipeline.getTopologicalOrder();
    unsigned n = order.size();
    unsigned m = options.microbatches;
    bool cm = options.constantMemory && !options.forwardOnly;
    ScheduleBuilder builder(pipeline, getName(), m, options.steps,
                            options.forwardOnly);
    const unsigned dev = 0;
    bool delayed =
        options.hostUpdate == HostUpdateMode::Delayed && !options.forwardOnly;
    auto load = [&](unsigned s, unsigned step) {
      ScheduleAction action;
      action.kind = ActionKind::Load;
      action.stage = s;
      action.step = step;
      if (delayed)
        action.version = step == 0 ? 0 : step - 1;
      return builder.append(dev, std::move(action));
    };
    auto compute = [&](ActionKind kind, unsigned s, unsigned mb,
                       unsigned step) {
      builder.append(dev, kind, s, mb, step);
    };

    // The previous step's ps.update token of each stage, waited with the
    // stage's next load (overlap) or before its next push (delayed).
    SmallVector<int> pendingUpdate(pipeline.getNumStages(), -1);
    for (unsigned step = 0; step < options.steps; ++step) {
      SmallVector<int> loadToken(pipeline.getNumStages(), -1);
      // Offloads of the previous stage; waited after this stage's forwards
      // so that at most two stages' boundaries are in flight to the host
      // (device memory stays flat even when the copy engine is slower than
      // compute).
      SmallVector<int> offloads, previousOffloads;
      loadToken[order[0]] = load(order[0], step);
      for (unsigned j = 0; j < n; ++j) {
        unsigned s = order[j];
        if (j + 1 < n)
          loadToken[order[j + 1]] = load(order[j + 1], step);
        if (pendingUpdate[s] >= 0 && !delayed) {
          builder.wait(dev, {loadToken[s], pendingUpdate[s]});
          pendingUpdate[s] = -1;
        } else {
          builder.wait(dev, {loadToken[s]});
        }
        bool last = j + 1 == n;
        for (unsigned mb = 0; mb < m; ++mb) {
          compute(ActionKind::Forward, s, mb, step);
          if (cm && !last)
            offloads.push_back(
                builder.append(dev, ActionKind::Offload, s, mb, step));
        }
        if (!last || options.forwardOnly)
          builder.append(dev, ActionKind::Release, s, -1, step);
        builder.wait(dev, previousOffloads);
        previousOffloads = std::move(offloads);
        offloads.clear();
      }
      if (options.forwardOnly)
        continue;
      // Offloads must land before their activations are prefetched back.
      builder.wait(dev, previousOffloads);

      SmallVector<SmallVector<int>> prefetchToken(pipeline.getNumStages());
      auto prefetchAll = [&](unsigned s) {
        for (unsigned mb = 0; mb < m; ++mb)
          prefetchToken[s].push_back(
              builder.append(dev, ActionKind::Prefetch, s, mb, step));
      };
      SmallVector<int> hostWork;
      // This step's ps.update token of each stage.
      SmallVector<int> update(pipeline.getNumStages(), -1);
      int previousPush = -1;
      for (unsigned j = n; j-- > 0;) {
        unsigned s = order[j];
        bool last = j + 1 == n;
        if (j > 0) {
          loadToken[order[j - 1]] = load(order[j - 1], step);
          if (cm)
            prefetchAll(order[j - 1]);
        }
        if (!last)
          builder.wait(dev, {loadToken[s]});
        if (!prefetchToken[s].empty())
          builder.wait(dev, prefetchToken[s]);
        for (unsigned mb = 0; mb < m; ++mb) {
          compute(ActionKind::Recompute, s, mb, step);
          compute(ActionKind::Backward, s, mb, step);
        }
        // The host sums a param's pushes until its update consumes them:
        // the previous step's update of every stage sharing a param with
        // this one (tied weights) must be done before this push.
        SmallVector<int> before;
        for (unsigned t : pipeline.getStagesSharingParamsWith(s))
          if (pendingUpdate[t] >= 0) {
            before.push_back(pendingUpdate[t]);
            pendingUpdate[t] = -1;
          }
        builder.wait(dev, before);
        int push = builder.append(dev, ActionKind::Push, s, -1, step);
        if (pipeline.replicas > 1)
          builder.append(dev, ActionKind::HostReduce, s, -1, step);
        update[s] = builder.append(dev, ActionKind::HostUpdate, s, -1, step);
        hostWork.push_back(update[s]);
        builder.append(dev, ActionKind::Release, s, -1, step);
        // A push that lags (copy engine slower than the backward) would
        // otherwise keep one more gradient buffer per stage on the device.
        if (previousPush >= 0)
          builder.wait(dev, {previousPush});
        previousPush = push;
      }
      if (options.hostUpdate != HostUpdateMode::Plain &&
          step + 1 < options.steps) {
        builder.wait(dev, {previousPush});
        pendingUpdate = std::move(update);
        continue;
      }
      // The next step loads parameters the host optimizer wrote.
      hostWork.push_back(previousPush);
      builder.wait(dev, hostWork);
      llvm::fill(pendingUpdate, -1);
    }
    return builder.take();
  }
};
} // namespace

std::unique_ptr<ScheduleGenerator> mlir::pipe::createL2LGenerator() {
  return std::make_unique<L2LGenerator>();
}
