//===- PrintSummary.cpp - Summary of a pipe module, as text or JSON -------===//
//
// The text is for people; the JSON (docs/summary-json.md) for programs such
// as the Python API, so that none of them parses printed IR.
//
//===----------------------------------------------------------------------===//

#include "pipe/Dialect/Pipe/IR/StageGraph.h"
#include "pipe/Dialect/Pipe/Transforms/Passes.h"

#include "pipe/Support/OutputFile.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/Support/JSON.h"

namespace mlir::pipe {
#define GEN_PASS_DEF_PIPEPRINTSUMMARY
#include "pipe/Dialect/Pipe/Transforms/Passes.h.inc"
} // namespace mlir::pipe

using namespace mlir;
using namespace mlir::pipe;

namespace {
/// Version of the JSON summary's schema (docs/summary-json.md): bumped when
/// a field changes meaning or goes away, not when one is added.
constexpr int64_t kSummaryJsonVersion = 1;

/// The number of actions of each kind on `device`, in order of first use.
llvm::MapVector<StringRef, unsigned> countActions(DeviceOp device) {
  llvm::MapVector<StringRef, unsigned> counts;
  for (Operation &op : device.getBody().front())
    ++counts[op.getName().stripDialect()];
  return counts;
}

/// The stages of `placement` in topological order; failure for a placement
/// whose stage graph cannot be built (the verifier says why).
FailureOr<SmallVector<StringRef>> stageOrder(SymbolTable &symbols,
                                             PlacementOp placement) {
  auto graph = symbols.lookup<GraphOp>(placement.getGraph());
  FailureOr<StageGraph> stages = StageGraph::build(placement, graph);
  if (failed(stages))
    return failure();
  SmallVector<StringRef> order;
  for (unsigned index : stages->topologicalOrder())
    order.push_back(stages->getStage(index).getSymName());
  return order;
}

struct PrintSummaryPass
    : public pipe::impl::PipePrintSummaryBase<PrintSummaryPass> {
  using Base::Base;

  void runOnOperation() override {
    if (format != "text" && format != "json") {
      getOperation().emitError("pipe-print-summary: format '")
          << format << "' is neither 'text' nor 'json'";
      return signalPassFailure();
    }
    if (llvm::Error error = checkReportPath(outputFile, getOperation())) {
      mlir::emitError(getOperation().getLoc(), "pipe-print-summary: ")
          << llvm::toString(std::move(error));
      return signalPassFailure();
    }
    if (llvm::Error error =
            writeOutputFile(outputFile, [&](llvm::raw_ostream &os) {
              if (format == "json")
                printJson(os);
              else
                print(os);
            })) {
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
    FailureOr<SmallVector<StringRef>> order = stageOrder(symbols, placement);
    if (failed(order))
      return;
    os << "  stage order:";
    for (StringRef stage : *order)
      os << " @" << stage;
    os << "\n";
  }

  void printSchedule(llvm::raw_ostream &os, ScheduleOp schedule) {
    os << "schedule @" << schedule.getSymName() << ": kind "
       << schedule.getKind() << ", " << schedule.getMicrobatches()
       << " micro-batches, " << schedule.getSteps() << " step(s)"
       << (schedule.getForwardOnly() ? ", forward only" : "") << "\n";
    for (DeviceOp device : schedule.getBody().getOps<DeviceOp>()) {
      llvm::MapVector<StringRef, unsigned> counts = countActions(device);
      os << "  device " << device.getDevice() << ": "
         << device.getBody().front().getOperations().size() << " actions (";
      llvm::interleaveComma(counts, os, [&](auto &entry) {
        os << entry.first << " " << entry.second;
      });
      os << ")\n";
    }
  }

  void printJson(llvm::raw_ostream &os) {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    llvm::json::OStream json(os, 2);
    json.object([&] {
      json.attribute("version", kSummaryJsonVersion);
      uint64_t numParams = 0, paramElements = 0;
      for (auto param : module.getOps<ParamOp>()) {
        ++numParams;
        paramElements += param.getTensorType().getNumElements();
      }
      json.attributeObject("parameters", [&] {
        json.attribute("count", numParams);
        json.attribute("elements", paramElements);
      });
      json.attributeArray("blocks", [&] {
        for (auto block : module.getOps<BlockOp>())
          json.object([&] {
            json.attribute("name", block.getSymName());
            json.attributeBegin("cost");
            printCostJson(json, block.getCostAttr());
            json.attributeEnd();
          });
      });
      json.attributeArray("graphs", [&] {
        for (auto graph : module.getOps<GraphOp>())
          printGraphJson(json, graph);
      });
      json.attributeArray("placements", [&] {
        for (auto placement : module.getOps<PlacementOp>())
          printPlacementJson(json, symbols, placement);
      });
      json.attributeArray("schedules", [&] {
        for (auto schedule : module.getOps<ScheduleOp>())
          printScheduleJson(json, schedule);
      });
    });
    os << "\n";
  }

  /// A block's `#pipe.cost` as an object of its parameters, or null.
  static void printCostJson(llvm::json::OStream &json, CostAttr cost) {
    if (!cost) {
      json.value(nullptr);
      return;
    }
    json.object([&] {
      json.attribute("forward_flops", cost.getForwardFlops());
      json.attribute("backward_input_flops", cost.getBackwardInputFlops());
      json.attribute("backward_weight_flops", cost.getBackwardWeightFlops());
      json.attribute("param_bytes", cost.getParamBytes());
      json.attribute("saved_bytes", cost.getSavedBytes());
      json.attribute("output_bytes", cost.getOutputBytes());
      json.attribute("bytes_accessed", cost.getBytesAccessed());
      json.attribute("backward_flops", cost.getBackwardFlops());
      json.attribute("forward_time_ns", cost.getForwardTimeNs());
      json.attribute("backward_time_ns", cost.getBackwardTimeNs());
      json.attribute("backward_input_time_ns", cost.getBackwardInputTimeNs());
      json.attribute("backward_weight_time_ns", cost.getBackwardWeightTimeNs());
      json.attribute("update_time_ns", cost.getUpdateTimeNs());
      json.attribute("forward_working_bytes", cost.getForwardWorkingBytes());
      json.attribute("recompute_working_bytes",
                     cost.getRecomputeWorkingBytes());
      json.attribute("backward_working_bytes", cost.getBackwardWorkingBytes());
      json.attribute("backward_input_working_bytes",
                     cost.getBackwardInputWorkingBytes());
      json.attribute("backward_weight_working_bytes",
                     cost.getBackwardWeightWorkingBytes());
    });
  }

  static void printGraphJson(llvm::json::OStream &json, GraphOp graph) {
    json.object([&] {
      json.attribute("name", graph.getSymName());
      json.attributeArray("inputs", [&] {
        for (Type type : graph.getFunctionType().getInputs())
          json.object([&] {
            std::string text;
            llvm::raw_string_ostream(text) << type;
            json.attribute("type", text);
            auto shaped = dyn_cast<RankedTensorType>(type);
            if (!shaped)
              return;
            json.attributeArray("shape", [&] {
              for (int64_t size : shaped.getShape())
                if (ShapedType::isDynamic(size))
                  json.value(nullptr);
                else
                  json.value(size);
            });
            text.clear();
            llvm::raw_string_ostream(text) << shaped.getElementType();
            json.attribute("element_type", text);
          });
      });
      json.attributeArray("instances", [&] {
        for (auto run : graph.getBody().getOps<RunOp>())
          json.object([&] {
            json.attribute("name", run.getInstance());
            json.attribute("block", run.getCallee());
          });
      });
    });
  }

  static void printPlacementJson(llvm::json::OStream &json,
                                 SymbolTable &symbols, PlacementOp placement) {
    json.object([&] {
      json.attribute("name", placement.getSymName());
      json.attribute("graph", placement.getGraph());
      json.attribute("devices", placement.getDevices());
      json.attributeArray("stages", [&] {
        for (auto stage : placement.getBody().getOps<StageOp>())
          json.object([&] {
            json.attribute("name", stage.getSymName());
            json.attribute("device", stage.getDevice());
            json.attributeArray("blocks", [&] {
              for (StringRef name :
                   stage.getBlocks().getAsValueRange<StringAttr>())
                json.value(name);
            });
          });
      });
      json.attributeBegin("stage_order");
      FailureOr<SmallVector<StringRef>> order = stageOrder(symbols, placement);
      if (failed(order))
        json.value(nullptr);
      else
        json.array([&] {
          for (StringRef stage : *order)
            json.value(stage);
        });
      json.attributeEnd();
    });
  }

  static void printScheduleJson(llvm::json::OStream &json,
                                ScheduleOp schedule) {
    json.object([&] {
      json.attribute("name", schedule.getSymName());
      json.attribute("placement", schedule.getPlacement());
      json.attribute("kind", schedule.getKind());
      json.attribute("microbatches", schedule.getMicrobatches());
      json.attribute("steps", schedule.getSteps());
      json.attribute("forward_only", schedule.getForwardOnly());
      json.attributeArray("devices", [&] {
        for (DeviceOp device : schedule.getBody().getOps<DeviceOp>())
          json.object([&] {
            json.attribute("device", device.getDevice());
            json.attribute("actions",
                           device.getBody().front().getOperations().size());
            json.attributeObject("counts", [&] {
              for (auto &[kind, count] : countActions(device))
                json.attribute(kind, count);
            });
          });
      });
    });
  }
};
} // namespace
