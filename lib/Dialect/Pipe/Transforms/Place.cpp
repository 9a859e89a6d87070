//===- Place.cpp - Groups block instances into stages on devices ----------===//
//
// An alias of --pipe-partition: its driver with the balanced partitioner
// by default, for every graph not yet placed.
//
//===----------------------------------------------------------------------===//

#include "pipe/Dialect/Pipe/Transforms/Partition.h"

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
    llvm::StringSet<> placed;
    for (PlacementOp placement : module.getOps<PlacementOp>())
      placed.insert(placement.getGraph());
    // A module without graphs is a pipeline run out of order, not one with
    // nothing left to place: saying nothing left the error to the next
    // pass, which blamed the placement.
    if (module.getOps<GraphOp>().empty()) {
      mlir::emitError(module.getLoc(),
                      "pipe-place: the module has no pipe.graph; run "
                      "--pipe-form-blocks first");
      return signalPassFailure();
    }
    PartitionCaller caller;
    caller.passName = "pipe-place";
    caller.placementOnly = true;
    for (GraphOp graph : llvm::to_vector(module.getOps<GraphOp>())) {
      if (placed.contains(graph.getSymName()))
        continue;
      PipePartitionOptions options;
      options.algorithm = algorithm;
      options.devices = devices;
      options.stagesPerDevice = stagesPerDevice;
      options.deviceModel = deviceModel;
      options.replicas = replicas;
      options.simulate = false;
      options.placementName = (graph.getSymName() + "_placement").str();
      options.textReport = "";
      if (failed(partitionGraph(module, graph, options, caller)))
        return signalPassFailure();
    }
  }
};
} // namespace
