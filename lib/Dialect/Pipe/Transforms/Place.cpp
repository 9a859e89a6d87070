//===- Place.cpp - Groups block instances into stages on devices ----------===//

#include "pipe/Dialect/Pipe/Transforms/Passes.h"
#include "pipe/Dialect/Pipe/Transforms/ScheduleIR.h"
#include "pipe/Scheduling/Placement.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::pipe {
#define GEN_PASS_DEF_PIPEPLACE
#include "pipe/Dialect/Pipe/Transforms/Passes.h.inc"
} // namespace mlir::pipe

using namespace mlir;
using namespace mlir::pipe;

namespace {
struct PlacePass : public pipe::impl::PipePlaceBase<PlacePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::unique_ptr<PlacementAlgorithm> placer =
        createPlacementAlgorithm(algorithm);
    if (!placer) {
      module.emitError("unknown placement algorithm '")
          << algorithm
          << "'; known: " << llvm::join(getPlacementAlgorithmNames(), ", ");
      return signalPassFailure();
    }
    llvm::StringSet<> placed;
    for (PlacementOp placement : module.getOps<PlacementOp>())
      placed.insert(placement.getGraph());
    SymbolTable symbols(module);
    for (GraphOp graph : llvm::to_vector(module.getOps<GraphOp>())) {
      if (placed.contains(graph.getSymName()))
        continue;
      std::string error;
      FailureOr<MachineModel> machine = MachineModel::lookup(
          deviceModel, devices, [&](const Twine &m) { error = m.str(); });
      if (failed(machine)) {
        graph.emitError(error);
        return signalPassFailure();
      }
      PlacementProblem problem;
      problem.numDevices = devices;
      problem.stagesPerDevice = stagesPerDevice;
      SmallVector<RunOp> runs =
          llvm::to_vector(graph.getBody().getOps<RunOp>());
      for (RunOp run : runs) {
        auto block = symbols.lookup<BlockOp>(run.getCallee());
        CostAttr cost = block ? block.getCostAttr() : CostAttr();
        double flops = machine->getDevice(0).flops;
        double time = 3 * kDefaultBlockTime;
        if (cost) {
          double forward = cost.getForwardTimeNs()
                               ? cost.getForwardTimeNs() * 1e-9
                               : cost.getForwardFlops() / flops;
          double backward = cost.getBackwardTimeNs()
                                ? cost.getBackwardTimeNs() * 1e-9
                                : (cost.getBackwardInputFlops() +
                                   cost.getBackwardWeightFlops()) /
                                      flops;
          time = forward + backward;
        }
        problem.blockCosts.push_back(time);
      }
      FailureOr<PlacementResult> result = placer->place(
          problem, [&](const Twine &message) { graph.emitError(message); });
      if (failed(result))
        return signalPassFailure();

      OpBuilder builder(module.getContext());
      builder.setInsertionPointAfter(graph);
      std::string name = (graph.getSymName() + "_placement").str();
      OperationState state(graph.getLoc(), PlacementOp::getOperationName());
      state.addAttribute("sym_name", builder.getStringAttr(name));
      state.addAttribute("graph",
                         FlatSymbolRefAttr::get(graph.getSymNameAttr()));
      state.addAttribute("devices", builder.getI64IntegerAttr(devices));
      state.addRegion()->push_back(new Block());
      Operation *placement = builder.create(state);
      builder.setInsertionPointToEnd(&placement->getRegion(0).front());
      for (unsigned s = 0; s < result->deviceOfStage.size(); ++s) {
        SmallVector<Attribute> blocks;
        for (unsigned b = 0; b < runs.size(); ++b)
          if (result->stageOfBlock[b] == s)
            blocks.push_back(runs[b].getInstanceAttr());
        OperationState stage(graph.getLoc(), StageOp::getOperationName());
        stage.addAttribute("sym_name",
                           builder.getStringAttr("s" + std::to_string(s)));
        stage.addAttribute("device",
                           builder.getI64IntegerAttr(result->deviceOfStage[s]));
        stage.addAttribute("blocks", builder.getArrayAttr(blocks));
        builder.create(stage);
      }
      symbols.insert(placement);
    }
  }
};
} // namespace
