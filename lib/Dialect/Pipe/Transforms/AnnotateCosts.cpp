//===- AnnotateCosts.cpp - Writes #pipe.cost on every pipe.block ----------===//
//
// Runs the analytic cost model (include/pipe/Analysis/CostModel.h) on every
// block and stores the result, so that partitioners, schedulers and the
// simulator read costs instead of recomputing them. A measured profile
// overrides the times.
//
//===----------------------------------------------------------------------===//

#include "pipe/Analysis/CostModel.h"
#include "pipe/Dialect/Pipe/Transforms/Passes.h"

#include "llvm/ADT/StringSet.h"

namespace mlir::pipe {
#define GEN_PASS_DEF_PIPEANNOTATECOSTS
#include "pipe/Dialect/Pipe/Transforms/Passes.h.inc"
} // namespace mlir::pipe

using namespace mlir;
using namespace mlir::pipe;

namespace {
struct AnnotateCostsPass
    : public pipe::impl::PipeAnnotateCostsBase<AnnotateCostsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    CostOptions options;
    std::optional<RecomputePolicy> policy = parseRecomputePolicy(recompute);
    if (!policy) {
      mlir::emitError(module.getLoc(),
                      "pipe-annotate-costs: unknown recompute policy '")
          << recompute << "' (expected save-all, recompute or save-inputs)";
      return signalPassFailure();
    }
    options.recompute = *policy;
    std::optional<unsigned> floatBytes = parseFloatBytes(dtype);
    if (!floatBytes) {
      mlir::emitError(module.getLoc(), "pipe-annotate-costs: unknown dtype '")
          << dtype << "' (expected f64, f32, tf32, bf16, f16, f8 or native)";
      return signalPassFailure();
    }
    options.floatBytes = *floatBytes;
    options.transcendentalFlops = transcendentalFlops;

    Profile measured;
    if (!profile.empty()) {
      llvm::Expected<Profile> loaded = loadProfile(profile);
      if (!loaded) {
        mlir::emitError(module.getLoc(), "pipe-annotate-costs: ")
            << llvm::toString(loaded.takeError());
        return signalPassFailure();
      }
      measured = std::move(*loaded);
    }

    // Instance names of each block, for profiles keyed by instance; and
    // which inputs need a gradient: those some instance receives from
    // another block rather than straight from the graph's arguments (token
    // ids, labels).
    llvm::StringMap<SmallVector<StringRef>> instancesOf;
    llvm::StringMap<SmallVector<bool>> inputNeedsGrad;
    llvm::StringSet<> knownNames;
    for (auto graph : module.getOps<GraphOp>())
      for (RunOp run : graph.getBody().getOps<RunOp>()) {
        instancesOf[run.getCallee()].push_back(run.getInstance());
        knownNames.insert(run.getInstance());
        SmallVector<bool> &needs = inputNeedsGrad[run.getCallee()];
        needs.resize(run.getInputs().size(), false);
        for (auto [index, input] : llvm::enumerate(run.getInputs()))
          if (!isa<BlockArgument>(input))
            needs[index] = true;
      }
    for (auto block : module.getOps<BlockOp>())
      knownNames.insert(block.getSymName());
    if (measured.isTable)
      return annotateFromTable(module, options, measured, inputNeedsGrad);
    for (auto &entry : measured.blocks)
      if (!knownNames.contains(entry.getKey())) {
        mlir::emitError(module.getLoc(), "pipe-annotate-costs: ")
            << profile << ": field 'blocks." << entry.getKey()
            << "' names no pipe.block and no block instance";
        return signalPassFailure();
      }

    for (auto block : module.getOps<BlockOp>()) {
      FailureOr<BlockCost> cost = estimateBlockCost(
          block, options, inputNeedsGrad.lookup(block.getSymName()));
      if (failed(cost))
        return signalPassFailure();
      MeasuredCosts times = lookupTimes(measured, block, instancesOf);
      block.setCostAttr(toCostAttr(&getContext(), *cost, times));
    }
  }

  /// Measured times where a block's hash and shapes are in the table,
  /// analytic ones elsewhere, with one warning that counts those.
  void annotateFromTable(ModuleOp module, const CostOptions &options,
                         Profile &measured,
                         llvm::StringMap<SmallVector<bool>> &inputNeedsGrad) {
    unsigned numBlocks = 0, numAnalytic = 0;
    for (auto block : module.getOps<BlockOp>()) {
      FailureOr<BlockCost> cost = estimateBlockCost(
          block, options, inputNeedsGrad.lookup(block.getSymName()));
      if (failed(cost))
        return signalPassFailure();
      BlockKey key = getBlockKey(block);
      auto it = measured.table.find(key.hash + " " + key.shapes);
      MeasuredCosts times;
      ++numBlocks;
      if (it != measured.table.end())
        times = it->second;
      else
        ++numAnalytic;
      block.setCostAttr(toCostAttr(&getContext(), *cost, times));
    }
    if (numAnalytic)
      emitWarning(module.getLoc(), "pipe-annotate-costs: ")
          << profile << ": " << numAnalytic << " of " << numBlocks
          << " block(s) have no entry with their hash and shapes; their "
             "times are analytic";
  }

  /// The block's own entry, else the mean over its instances' entries.
  static MeasuredCosts
  lookupTimes(Profile &measured, BlockOp block,
              llvm::StringMap<SmallVector<StringRef>> &instancesOf) {
    auto it = measured.blocks.find(block.getSymName());
    if (it != measured.blocks.end())
      return it->second;
    MeasuredCosts mean;
    double forward = 0, backward = 0;
    unsigned numForward = 0, numBackward = 0;
    for (StringRef instance : instancesOf.lookup(block.getSymName())) {
      auto entry = measured.blocks.find(instance);
      if (entry == measured.blocks.end())
        continue;
      if (entry->second.forwardMs) {
        forward += *entry->second.forwardMs;
        ++numForward;
      }
      if (entry->second.backwardMs) {
        backward += *entry->second.backwardMs;
        ++numBackward;
      }
    }
    if (numForward)
      mean.forwardMs = forward / numForward;
    if (numBackward)
      mean.backwardMs = backward / numBackward;
    return mean;
  }
};
} // namespace
