//===- Schedule.cpp - Writes per-device action lists for placements -------===//

#include "pipe/Dialect/Pipe/IR/PlanLimits.h"
#include "pipe/Dialect/Pipe/Transforms/Passes.h"
#include "pipe/Dialect/Pipe/Transforms/ScheduleIR.h"
#include "pipe/Scheduling/ScheduleGenerator.h"

#include "llvm/ADT/StringSwitch.h"

namespace mlir::pipe {
#define GEN_PASS_DEF_PIPESCHEDULE
#include "pipe/Dialect/Pipe/Transforms/Passes.h.inc"
} // namespace mlir::pipe

using namespace mlir;
using namespace mlir::pipe;

namespace {
struct SchedulePass : public pipe::impl::PipeScheduleBase<SchedulePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (weights != "stash" && weights != "stale" && weights != "predict") {
      mlir::emitError(module.getLoc(),
                      "weights must be 'stash', 'stale' or 'predict', got '")
          << weights << "'";
      return signalPassFailure();
    }
    std::optional<HostUpdateMode> hostUpdateMode =
        llvm::StringSwitch<std::optional<HostUpdateMode>>(hostUpdate)
            .Case("plain", HostUpdateMode::Plain)
            .Case("overlap", HostUpdateMode::Overlap)
            .Case("delayed", HostUpdateMode::Delayed)
            .Default(std::nullopt);
    if (!hostUpdateMode) {
      mlir::emitError(
          module.getLoc(),
          "host-update must be 'plain', 'overlap' or 'delayed', got '")
          << hostUpdate << "'";
      return signalPassFailure();
    }
    std::optional<ScheduleTraits> traits = getScheduleTraits(kind);
    if (microbatches > kMaxMicrobatches || steps > kMaxScheduleSteps) {
      mlir::emitError(module.getLoc(), "pipe-schedule: ")
          << (microbatches > kMaxMicrobatches
                  ? "microbatches=" + std::to_string(microbatches) +
                        " is more than " + std::to_string(kMaxMicrobatches)
                  : "steps=" + std::to_string(steps) + " is more than " +
                        std::to_string(kMaxScheduleSteps));
      return signalPassFailure();
    }
    ScheduleOptions options;
    options.hostUpdate = *hostUpdateMode;
    options.steps = steps;
    options.forwardOnly = forwardOnly;
    options.stashWeights = weights == "stash";
    options.predictWeights = weights == "predict";
    options.constantMemory = constantMemory;
    options.recompute = recompute;
    options.reduceBucketBytes = reduceBucketBytes;
    options.peerOrder = peerOrder;

    SymbolTable symbols(module);
    bool found = false;
    for (PlacementOp placement :
         llvm::to_vector(module.getOps<PlacementOp>())) {
      if (!this->placement.empty() && placement.getSymName() != this->placement)
        continue;
      found = true;
      auto graph = symbols.lookup<GraphOp>(placement.getGraph());
      if (!graph) {
        placement.emitOpError("graph @")
            << placement.getGraph() << " does not resolve";
        return signalPassFailure();
      }
      // The placement records the count it was partitioned for; a
      // schedule with another count would invalidate its memory figures.
      std::optional<uint64_t> recorded = placement.getMicrobatches();
      if (recorded && microbatches != 0 && microbatches != *recorded) {
        placement.emitError("pipe-schedule: microbatches=")
            << unsigned(microbatches) << " disagrees with placement @"
            << placement.getSymName() << ", which was partitioned for "
            << *recorded << " micro-batches; omit the option to use "
            << *recorded;
        return signalPassFailure();
      }
      options.microbatches =
          microbatches != 0 ? unsigned(microbatches) : recorded.value_or(8);
      FailureOr<PlacedPipeline> placed =
          buildPlacedPipeline(placement, graph, deviceModel, placement);
      if (failed(placed))
        return signalPassFailure();
      FailureOr<Schedule> schedule = generateSchedule(
          kind, placed->pipeline, options, [&](const Twine &message) {
            placement.emitError("cannot schedule placement @")
                << placement.getSymName() << " as '" << kind
                << "': " << message;
          });
      if (failed(schedule))
        return signalPassFailure();

      std::string name = (placement.getSymName() + "_" + kind).str();
      std::replace(name.begin(), name.end(), '-', '_');
      std::string unique = name;
      for (unsigned i = 1; symbols.lookup(unique); ++i)
        unique = name + "_" + std::to_string(i);
      OpBuilder builder(module.getContext());
      builder.setInsertionPointToEnd(module.getBody());
      ScheduleOp op =
          writeSchedule(builder, placement.getLoc(), unique, placement,
                        placed->stages, placed->pipeline, *schedule);
      // generateSchedule succeeded, so the kind is registered.
      setScheduleTraits(op, *traits);
      symbols.insert(op);
    }
    if (!found) {
      if (this->placement.empty())
        mlir::emitError(module.getLoc(),
                        "pipe-schedule found no pipe.placement; run "
                        "--pipe-place first");
      else
        mlir::emitError(module.getLoc(), "pipe-schedule found no placement @")
            << this->placement;
      return signalPassFailure();
    }
  }
};
} // namespace
