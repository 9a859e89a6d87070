//===- PrintSummary.cpp - Human-readable summary of a pipe module ---------===//

#include "pipe/Dialect/Pipe/IR/StageGraph.h"
#include "pipe/Dialect/Pipe/Transforms/Passes.h"

#include "pipe/Support/OutputFile.h"

#include "llvm/ADT/MapVector.h"

namespace mlir::pipe {
#define GEN_PASS_DEF_PIPEPRINTSUMMARY
#include "pipe/Dialect/Pipe/Transforms/Passes.h.inc"
} // namespace mlir::pipe

using namespace mlir;
using namespace mlir::pipe;

namespace {
struct PrintSummaryPass
    : public pipe::impl::PipePrintSummaryBase<PrintSummaryPass> {
  using Base::Base;

  void runOnOperation() override {
    if (llvm::Error error = writeOutputFile(
            outputFile, [&](llvm::raw_ostream &os) { print(os); })) {
      getOperation().emitError("pipe-print-summary: ")
          << llvm::toString(std::move(error));
      return signalPassFailure();
    }
  }

  void print(llvm::raw_ostream &os) {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);

    unsigned numParams = 0, numBlocks = 0;
    uint64_t paramElements = 0;
    for (auto param : module.getOps<ParamOp>()) {
      ++numParams;
      paramElements += param.getTensorType().getNumElements();
    }
    for (auto block : module.getOps<BlockOp>()) {
      (void)block;
      ++numBlocks;
    }
    os << "parameters: " << numParams << " (" << paramElements
       << " elements)\nblocks: " << numBlocks << "\n";
    for (auto graph : module.getOps<GraphOp>())
      os << "graph @" << graph.getSymName() << ": "
         << llvm::range_size(graph.getBody().getOps<RunOp>())
         << " block instances\n";

    for (auto placement : module.getOps<PlacementOp>())
      printPlacement(os, symbols, placement);
    for (auto schedule : module.getOps<ScheduleOp>())
      printSchedule(os, schedule);
  }

  void printPlacement(llvm::raw_ostream &os, SymbolTable &symbols,
                      PlacementOp placement) {
    os << "placement @" << placement.getSymName() << " of graph @"
       << placement.getGraph() << ": " << placement.getDevices()
       << " devices\n";
    for (uint64_t device = 0; device < placement.getDevices(); ++device) {
      os << "  device " << device << ":";
      for (auto stage : placement.getBody().getOps<StageOp>()) {
        if (stage.getDevice() != device)
          continue;
        os << " @" << stage.getSymName() << " [";
        llvm::interleaveComma(stage.getBlocks().getAsValueRange<StringAttr>(),
                              os);
        os << "]";
      }
      os << "\n";
    }
    auto graph = symbols.lookup<GraphOp>(placement.getGraph());
    FailureOr<StageGraph> stages = StageGraph::build(placement, graph);
    if (failed(stages))
      return;
    os << "  stage order:";
    for (unsigned index : stages->topologicalOrder())
      os << " @" << stages->getStage(index).getSymName();
    os << "\n";
  }

  void printSchedule(llvm::raw_ostream &os, ScheduleOp schedule) {
    os << "schedule @" << schedule.getSymName() << ": kind "
       << schedule.getKind() << ", " << schedule.getMicrobatches()
       << " micro-batches, " << schedule.getSteps() << " step(s)"
       << (schedule.getForwardOnly() ? ", forward only" : "") << "\n";
    for (DeviceOp device : schedule.getBody().getOps<DeviceOp>()) {
      llvm::MapVector<StringRef, unsigned> counts;
      unsigned total = 0;
      for (Operation &op : device.getBody().front()) {
        ++counts[op.getName().stripDialect()];
        ++total;
      }
      os << "  device " << device.getDevice() << ": " << total << " actions (";
      llvm::interleaveComma(counts, os, [&](auto &entry) {
        os << entry.first << " " << entry.second;
      });
      os << ")\n";
    }
  }
};
} // namespace
