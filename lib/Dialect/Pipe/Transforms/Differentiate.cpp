//===- Differentiate.cpp - Backward blocks for every forward block --------===//
//
// The pass driver around lib/Autodiff: picks the blocks the graphs run,
// resolves each block's recompute policy, differentiates it, updates the
// graph's runs when save-all adds saved-activation results, and marks the
// graph's scalar result as the loss (cotangent 1.0).
//
//===----------------------------------------------------------------------===//

#include "pipe/Autodiff/Autodiff.h"
#include "pipe/Dialect/Pipe/Transforms/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::pipe {
#define GEN_PASS_DEF_PIPEDIFFERENTIATE
#include "pipe/Dialect/Pipe/Transforms/Passes.h.inc"
} // namespace mlir::pipe

using namespace mlir;
using namespace mlir::pipe;
using namespace mlir::pipe::autodiff;

namespace {

/// Rebuilds `run` so that its results match its callee's (extended) results.
void updateRun(RunOp run, BlockOp callee) {
  ArrayRef<Type> types = callee.getResultTypes();
  if (llvm::equal(run.getResultTypes(), types))
    return;
  OpBuilder b(run);
  auto newRun =
      RunOp::create(b, run.getLoc(), types, run.getInstanceAttr(),
                    run.getCalleeAttr(), run.getInputs(), run.getParamsAttr());
  newRun->setDiscardableAttrs(run->getDiscardableAttrDictionary());
  for (auto [oldResult, newResult] :
       llvm::zip(run.getResults(), newRun.getResults()))
    oldResult.replaceAllUsesWith(newResult);
  run.erase();
}

struct DifferentiatePass
    : public pipe::impl::PipeDifferentiateBase<DifferentiatePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<RecomputePolicy> defaultPolicy =
        parseRecomputePolicy(recompute);
    if (!defaultPolicy) {
      mlir::emitError(module.getLoc(),
                      "pipe-differentiate: unknown recompute policy '")
          << recompute << "'; expected save-all, save-inputs or recompute";
      return signalPassFailure();
    }

    SymbolTable symbols(module);
    llvm::SetVector<BlockOp> blocks;
    SmallVector<GraphOp> graphs;
    for (GraphOp graph : module.getOps<GraphOp>()) {
      graphs.push_back(graph);
      for (RunOp run : graph.getBody().getOps<RunOp>()) {
        auto block = symbols.lookup<BlockOp>(run.getCallee());
        if (!block) {
          run.emitOpError("'")
              << run.getCallee() << "' does not reference a pipe.block";
          return signalPassFailure();
        }
        blocks.insert(block);
      }
    }

    if (mlir::failed(markFrozenParams(graphs, symbols)))
      return signalPassFailure();

    bool failed = false;
    for (BlockOp block : blocks) {
      // Already differentiated (the pass is idempotent).
      if (block->hasAttr(kSavedResultsAttr))
        continue;
      RecomputePolicy policy = *defaultPolicy;
      if (Attribute attr = block->getAttr(kRecomputeAttr)) {
        auto text = dyn_cast<StringAttr>(attr);
        std::optional<RecomputePolicy> parsed =
            text ? parseRecomputePolicy(text.getValue()) : std::nullopt;
        if (!parsed) {
          block.emitOpError("has ")
              << kRecomputeAttr << " = " << attr
              << "; expected \"save-all\", \"save-inputs\" or \"recompute\"";
          failed = true;
          continue;
        }
        policy = *parsed;
      }
      if (mlir::failed(differentiateBlock(block, policy)))
        failed = true;
    }
    if (failed)
      return signalPassFailure();

    for (GraphOp graph : graphs) {
      for (RunOp run :
           llvm::make_early_inc_range(graph.getBody().getOps<RunOp>()))
        updateRun(run, symbols.lookup<BlockOp>(run.getCallee()));
      if (mlir::failed(markLoss(graph)))
        return signalPassFailure();
    }
  }

  /// Records on each block the parameter positions that every run of it
  /// binds to a frozen pipe.param: those get no gradient, so a block whose
  /// parameters are all frozen has no weight-gradient part. A position that
  /// one run binds to a trainable param keeps its gradient for every run
  /// (they share the block); the runtime skips the weight part of runs
  /// whose params are all frozen.
  LogicalResult markFrozenParams(ArrayRef<GraphOp> graphs,
                                 SymbolTable &symbols) {
    llvm::MapVector<BlockOp, SmallVector<bool>> frozenSlots;
    for (GraphOp graph : graphs)
      for (RunOp run : graph.getBody().getOps<RunOp>()) {
        auto block = symbols.lookup<BlockOp>(run.getCallee());
        if (block->hasAttr(kSavedResultsAttr))
          continue; // differentiated before: its calling convention stays
        ArrayAttr refs = run.getParamsAttr();
        auto [it, inserted] = frozenSlots.try_emplace(
            block, SmallVector<bool>(block.getNumParams(), true));
        for (unsigned p = 0; p < it->second.size(); ++p) {
          auto ref = p < refs.size() ? dyn_cast<FlatSymbolRefAttr>(refs[p])
                                     : FlatSymbolRefAttr();
          auto param =
              ref ? symbols.lookup<ParamOp>(ref.getValue()) : ParamOp();
          if (!param)
            return run.emitOpError("binds no pipe.param at parameter #") << p;
          it->second[p] = it->second[p] && param.getFrozen();
        }
      }
    for (auto &[block, slots] : frozenSlots) {
      SmallVector<int64_t> frozen;
      for (auto [p, isFrozen] : llvm::enumerate(slots))
        if (isFrozen)
          frozen.push_back(int64_t(p));
      if (!frozen.empty())
        block->setAttr(kFrozenParamsAttr,
                       DenseI64ArrayAttr::get(block.getContext(), frozen));
    }
    return success();
  }

  /// The graph's first result is the loss; its cotangent is 1.0. Any
  /// others are task metrics (kMetricAttr), which get no cotangent.
  LogicalResult markLoss(GraphOp graph) {
    ArrayRef<Type> results = graph.getResultTypes();
    auto type = !results.empty() ? dyn_cast<RankedTensorType>(results.front())
                                 : RankedTensorType();
    if (!type || !isa<FloatType>(type.getElementType()) ||
        !type.hasStaticShape() || type.getNumElements() != 1)
      return graph.emitOpError(
          "must return a scalar float loss (a one-element tensor) first "
          "to be differentiated; an inference function returning logits or "
          "activations gets one from --pipe-attach-loss (pipe-train --loss)");
    for (unsigned i = 1; i < results.size(); ++i) {
      auto metric = dyn_cast<RankedTensorType>(results[i]);
      if (!graph.getResultAttrOfType<StringAttr>(i, kMetricAttr) || !metric ||
          metric.getShape() != ArrayRef<int64_t>{2} ||
          !metric.getElementType().isInteger(64))
        return graph.emitOpError("result ")
               << i << " (" << results[i]
               << ") is not a task metric: after the loss, a graph returns "
                  "only tensor<2xi64> counts marked "
               << kMetricAttr << " (--pipe-attach-loss metrics=)";
    }
    graph.setResultAttr(0, kLossSeedAttr,
                        FloatAttr::get(type.getElementType(), 1.0));
    return success();
  }
};

} // namespace
