//===- LowerToHost.cpp - Scheduled pipe IR to host code and a manifest ----===//
//
// The compiler half of the compiler/runtime split. Blocks become functions
// the runtime calls; each device's action list becomes a function of calls
// into the runtime; everything the runtime must know about the graph, the
// stages and the schedules is written into one manifest string through the
// shared writer of include/pipe/Runtime/ManifestSchema.h. This file holds
// the pass, which checks the module and drives the parts of LowerToHost.h.
//
//===----------------------------------------------------------------------===//

#include "LowerToHost.h"

#include "pipe/Autodiff/Autodiff.h"
#include "pipe/Conversion/Passes.h"
#include "pipe/Scheduling/Pipeline.h"

// The dialects the pass declares it creates ops of.
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

#include <limits>

namespace mlir::pipe {
#define GEN_PASS_DEF_PIPELOWERTOHOST
#include "pipe/Conversion/Passes.h.inc"
} // namespace mlir::pipe

using namespace mlir;
using namespace mlir::pipe;
using namespace mlir::pipe::autodiff;
using namespace mlir::pipe::host_lowering;

namespace {

struct LowerToHostPass
    : public pipe::impl::PipeLowerToHostBase<LowerToHostPass> {
  using Base::Base;

  /// Every action becomes a call in one straight-line function per device,
  /// and the lowering's time on those grows faster than linearly (30k
  /// actions took 20 s of CPU before LLVM even started): 100000
  /// micro-batches would compile for many minutes before anything says so.
  LogicalResult checkCompileSize(ArrayRef<ScheduleOp> schedules) {
    if (maxActions == 0)
      return success();
    uint64_t actions = 0;
    for (ScheduleOp schedule : schedules)
      ScheduleOp(schedule).walk([&](Operation *op) {
        actions += isa_and_nonnull<DeviceOp>(op->getParentOp());
      });
    if (actions <= maxActions)
      return success();
    return ScheduleOp(schedules.front())
               .emitOpError("and the other schedules have ")
           << actions << " actions in all, more than the "
           << uint64_t(maxActions)
           << " this lowering accepts (max-actions; each action becomes host "
              "code): use fewer micro-batches or stages";
  }

  /// The capacity of each of `devices` devices in the manifest (0 =
  /// unlimited): device-memory-bytes, else the device model's memory_bytes,
  /// so that the run is held to the memory the plan was checked against.
  FailureOr<SmallVector<uint64_t>> deviceCapacities(ScheduleOp schedule,
                                                    unsigned devices) {
    SmallVector<uint64_t> capacities(devices, deviceMemoryBytes);
    if (deviceMemoryBytes || deviceModel.empty())
      return capacities;
    std::string error;
    FailureOr<MachineModel> machine = MachineModel::lookup(
        deviceModel, devices, [&](const Twine &m) { error = m.str(); });
    if (failed(machine))
      return schedule.emitOpError("device-model: ") << error;
    for (unsigned d = 0; d < devices; ++d) {
      uint64_t bytes = machine->getDevice(d).memoryBytes;
      capacities[d] = bytes == std::numeric_limits<uint64_t>::max() ? 0 : bytes;
    }
    return capacities;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<ScheduleOp> scheduleOps =
        llvm::to_vector(module.getOps<ScheduleOp>());
    if (scheduleOps.empty()) {
      // Point at the graph that lacks a schedule: an implicit module has no
      // line in the file.
      auto graphs = module.getOps<GraphOp>();
      Operation *where =
          graphs.empty() ? module.getOperation() : *graphs.begin();
      where->emitError("--pipe-lower-to-host needs a pipe.schedule; run "
                       "--pipe-schedule first");
      return signalPassFailure();
    }
    if (failed(checkCompileSize(scheduleOps)))
      return signalPassFailure();
    ManifestBuilder manifest(module, symbols);
    GraphOp graph;
    PlacementOp firstPlacement;
    std::optional<StageGraph> stages;
    SmallVector<std::pair<ScheduleOp, StageGraph>> scheduled;
    for (ScheduleOp schedule : scheduleOps) {
      auto placement = symbols.lookup<PlacementOp>(schedule.getPlacement());
      if (!placement) {
        schedule.emitOpError("references unknown placement ")
            << schedule.getPlacementAttr();
        return signalPassFailure();
      }
      auto placed = symbols.lookup<GraphOp>(placement.getGraph());
      if (!placed) {
        placement.emitOpError("references unknown graph ")
            << placement.getGraphAttr();
        return signalPassFailure();
      }
      FailureOr<StageGraph> built = StageGraph::build(placement, placed);
      if (failed(built))
        return signalPassFailure();
      if (!graph) {
        graph = placed;
        firstPlacement = placement;
        if (failed(manifest.addGraph(graph, *built)))
          return signalPassFailure();
      } else if (placed != graph) {
        schedule.emitOpError("places graph @")
            << placed.getSymName() << ", but an earlier schedule places @"
            << graph.getSymName() << "; one program runs one graph";
        return signalPassFailure();
      } else if (placement != firstPlacement &&
                 !samePlacement(placement, firstPlacement)) {
        schedule.emitOpError("uses placement @")
            << placement.getSymName() << ", which differs from @"
            << firstPlacement.getSymName()
            << "; the schedules of one program share their stages";
        return signalPassFailure();
      }
      if (!schedule.getForwardOnly() && failed(checkDifferentiated(graph)))
        return signalPassFailure();
      scheduled.push_back({schedule, std::move(*built)});
    }
    for (auto &[schedule, stageGraph] : scheduled) {
      auto placement = symbols.lookup<PlacementOp>(schedule.getPlacement());
      FailureOr<SmallVector<uint64_t>> capacities =
          deviceCapacities(schedule, placement.getDevices());
      if (failed(capacities) ||
          failed(manifest.addSchedule(schedule, placement, stageGraph,
                                      *capacities)))
        return signalPassFailure();
    }
    if (!weights.empty() && failed(writeWeights(module, manifest, weights)))
      return signalPassFailure();
    ProgramEmitter emitter(module, manifest);
    for (auto [id, entry] : llvm::enumerate(scheduled))
      for (DeviceOp device : entry.first.getBody().getOps<DeviceOp>())
        if (failed(emitter.emit(entry.first, id, device)))
          return signalPassFailure();

    // Only the functions the runtime calls survive.
    llvm::DenseSet<Operation *> called;
    for (BlockOp block : manifest.getFunctions())
      called.insert(block);
    for (BlockOp block : llvm::to_vector(module.getOps<BlockOp>())) {
      if (called.contains(block))
        convertBlock(block);
      else
        block.erase();
    }
    for (Operation &op : llvm::make_early_inc_range(module.getOps()))
      if (isa<ParamOp, GraphOp, PlacementOp, ScheduleOp>(op))
        op.erase();

    emitProgramGlobals(module, manifest);
  }

  static bool samePlacement(PlacementOp a, PlacementOp b) {
    auto stagesA = llvm::to_vector(a.getBody().getOps<StageOp>());
    auto stagesB = llvm::to_vector(b.getBody().getOps<StageOp>());
    if (stagesA.size() != stagesB.size() || a.getDevices() != b.getDevices())
      return false;
    for (auto [x, y] : llvm::zip(stagesA, stagesB))
      if (x.getSymName() != y.getSymName() || x.getDevice() != y.getDevice() ||
          x.getBlocks() != y.getBlocks())
        return false;
    return true;
  }

  LogicalResult checkDifferentiated(GraphOp graph) {
    if (!graph.getNumResults() || !graph.getResultAttr(0, kLossSeedAttr))
      return graph.emitOpError("is scheduled for training but has no loss "
                               "marked with ")
             << kLossSeedAttr << "; run --pipe-differentiate first";
    return success();
  }
};

} // namespace
