//===- PartitionIR.cpp - Partitioning problems from and to IR ------------===//
//
// The IR adapter only: block graphs from a pipe.graph, placements back.
// What needs no IR (clusters from the device model, the simulated step
// time) is in lib/Partitioning.
//
//===----------------------------------------------------------------------===//

#include "pipe/Dialect/Pipe/Transforms/PartitionIR.h"

#include "pipe/Dialect/Pipe/Transforms/ScheduleIR.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::pipe;
using namespace mlir::pipe::partitioning;

FailureOr<BlockGraph>
mlir::pipe::partitioning::buildBlockGraph(GraphOp graph,
                                          SmallVectorImpl<RunOp> &runs,
                                          bool allowUncosted) {
  BlockGraph result;
  llvm::DenseMap<StringAttr, unsigned> paramIndex;
  llvm::DenseMap<Operation *, unsigned> nodeOfRun;
  for (RunOp run : graph.getBody().getOps<RunOp>()) {
    auto block =
        SymbolTable::lookupNearestSymbolFrom<BlockOp>(run, run.getCalleeAttr());
    if (!block)
      return run.emitOpError("calls @")
             << run.getCallee() << ", which is not a pipe.block";
    CostAttr cost = block.getCostAttr();
    if (!cost && !allowUncosted)
      return run.emitOpError("runs block @")
             << block.getSymName()
             << ", which has no #pipe.cost; run --pipe-annotate-costs first";
    BlockNode node;
    node.name = run.getInstance().str();
    if (cost) {
      node.forwardFlops = cost.getForwardFlops();
      node.backwardInputFlops = cost.getBackwardInputFlops();
      node.backwardWeightFlops = cost.getBackwardWeightFlops();
      node.backwardFlops = cost.getBackwardFlops();
      node.bytesAccessed = cost.getBytesAccessed();
      node.forwardSeconds = cost.getForwardTimeNs() * 1e-9;
      node.backwardSeconds = cost.getBackwardTimeNs() * 1e-9;
      node.backwardInputSeconds = cost.getBackwardInputTimeNs() * 1e-9;
      node.backwardWeightSeconds = cost.getBackwardWeightTimeNs() * 1e-9;
      node.savedBytes = cost.getSavedBytes();
    } else {
      // As the scheduler's pipeline counts such a block (ScheduleIR.h).
      node.forwardSeconds = kDefaultBlockTime;
      node.backwardSeconds = 2 * kDefaultBlockTime;
    }
    for (auto ref : run.getParams().getAsRange<FlatSymbolRefAttr>()) {
      auto [it, inserted] =
          paramIndex.try_emplace(ref.getAttr(), result.getNumParams());
      if (inserted) {
        auto param =
            SymbolTable::lookupNearestSymbolFrom<ParamOp>(run, ref.getAttr());
        if (!param)
          return run.emitOpError("binds @")
                 << ref.getValue() << ", which is not a pipe.param";
        result.addParam(ref.getValue(), getTypeBytes(param.getTensorType()),
                        !param.getFrozen());
      }
      node.params.push_back(it->second);
    }
    nodeOfRun[run] = result.addNode(std::move(node));
    runs.push_back(run);
  }
  for (RunOp run : runs) {
    unsigned producer = nodeOfRun[run];
    for (Value output : run.getOutputs()) {
      unsigned value = ~0u;
      for (Operation *user : output.getUsers()) {
        auto consumer = dyn_cast<RunOp>(user);
        if (!consumer)
          continue;
        if (value == ~0u)
          value = result.addValue(producer, getTypeBytes(output.getType()));
        result.addUse(value, nodeOfRun[consumer]);
      }
    }
  }
  if (llvm::Error err = result.finalize())
    return graph.emitOpError() << llvm::toString(std::move(err));
  return result;
}

PlacementOp mlir::pipe::partitioning::writePlacement(
    OpBuilder &builder, Location loc, StringRef name, GraphOp graph,
    ArrayRef<RunOp> runs, const Partition &partition, unsigned numDevices,
    unsigned microbatches, unsigned replicas) {
  auto placement = PlacementOp::create(
      builder, loc, builder.getStringAttr(name),
      FlatSymbolRefAttr::get(graph.getSymNameAttr()),
      builder.getI64IntegerAttr(numDevices),
      microbatches ? builder.getI64IntegerAttr(microbatches) : IntegerAttr(),
      builder.getI64IntegerAttr(replicas));
  Block *body = new Block();
  placement.getBody().push_back(body);
  OpBuilder inner = OpBuilder::atBlockEnd(body);
  std::vector<SmallVector<Attribute>> blocks(partition.getNumStages());
  for (auto [node, run] : llvm::enumerate(runs))
    blocks[partition.stageOf[node]].push_back(RunOp(run).getInstanceAttr());
  for (unsigned s = 0; s < partition.getNumStages(); ++s)
    StageOp::create(inner, loc, inner.getStringAttr("s" + std::to_string(s)),
                    inner.getI64IntegerAttr(partition.deviceOf[s]),
                    inner.getArrayAttr(blocks[s]));
  return placement;
}
