//===- FuseElementwise.cpp - Fuse elementwise ops in block functions -----===//
//
// The CUDA back end makes one kernel per top-level linalg op of a block
// function, so a transformer layer's bias adds, activations, residual adds,
// the elementwise halves of its norms and softmaxes, and all of their
// backward ops each cost a launch and a round trip of their result through
// global memory. Upstream's elementwise fusion merges an all-parallel
// producer into the generic that reads it; this pass runs it on the block
// functions (on tensors, before bufferization) with a control function that
//
// - keeps GEMMs GEMMs: an op `pipe-linalg-to-gemm` turns into a cuBLAS call
//   is never a consumer or a producer of a fusion, and is not even handed to
//   the rewrite driver (the fusion's cleanup patterns fold constants and
//   fills into generics, which would change a contraction's body);
// - never duplicates expensive work. Upstream computes the producer again
//   inside every consumer it fuses into (and keeps the producer for its
//   other readers). A producer whose result has one use is fused as it is,
//   unless its consumer reads its elements repeatedly (a broadcast), which
//   recomputes the producer per read: then only cheap bodies fuse. A
//   producer with several uses fuses only if its body is cheap AND every use
//   can take it, so that the producer's kernel disappears and the price is a
//   few recomputed arithmetic ops per element; a producer that is also
//   returned (a saved activation) or read by a GEMM or a reshape stays.
//   GPU kernels here are memory-bound, so a handful of recomputed flops per
//   element costs much less than a launch plus a write and a read of the
//   tensor; an exp or a long chain is not recomputed.
//
// A producer fused into a reduction (layer-norm/softmax statistics) lands in
// front of the reduction's `combine(out, x)`, which `pipe-linalg-to-gpu`
// still recognises as a block reduction (the dead extra output upstream adds
// for a producer that has other readers is erased by the cleanup patterns).
//
//===----------------------------------------------------------------------===//

#include "pipe/Dialect/Pipe/Transforms/GemmMatch.h"
#include "pipe/Dialect/Pipe/Transforms/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::pipe {
#define GEN_PASS_DEF_PIPEFUSEELEMENTWISE
#include "pipe/Dialect/Pipe/Transforms/Passes.h.inc"
} // namespace mlir::pipe

using namespace mlir;
using namespace mlir::pipe;

namespace {

/// Rounds of the rewrite driver per function. The driver revisits what it
/// changes; another round only picks up fusions a previous one enabled
/// elsewhere, and every fusion removes a use, so this is never reached in
/// practice.
constexpr unsigned kMaxRounds = 8;

/// Number of loop points of `op`, or nullopt for dynamic sizes.
std::optional<int64_t> loopPoints(linalg::LinalgOp op) {
  int64_t points = 1;
  for (int64_t size : op.getStaticLoopRanges()) {
    if (ShapedType::isDynamic(size))
      return std::nullopt;
    points *= size;
  }
  return points;
}

/// Fusion that keeps the producer's value as a second output of the fused
/// op instead of computing it again: for a producer that the control
/// function does not let upstream's pattern duplicate (it is also returned,
/// e.g. a saved activation, or read by a GEMM), fused into an elementwise
/// consumer that reads each of its elements once. The fused kernel writes
/// both tensors, the producer's kernel and one read of its result go away,
/// and nothing is computed twice. Upstream's pattern keeps the producer for
/// its other readers; this one hands them the fused op's extra result,
/// which is only possible when they all come after the consumer.
struct FuseKeepingProducerResult : public OpRewritePattern<linalg::GenericOp> {
  FuseKeepingProducerResult(MLIRContext *ctx,
                            std::function<bool(OpOperand *)> eligible)
      : OpRewritePattern<linalg::GenericOp>(ctx, /*benefit=*/0),
        eligible(std::move(eligible)) {}

  LogicalResult matchAndRewrite(linalg::GenericOp consumer,
                                PatternRewriter &rewriter) const override {
    for (OpOperand *use : consumer.getDpsInputOperands()) {
      if (!eligible(use))
        continue;
      auto producer = use->get().getDefiningOp<linalg::GenericOp>();
      FailureOr<linalg::ElementwiseOpFusionResult> fused =
          linalg::fuseElementwiseOps(rewriter, use);
      if (failed(fused))
        return failure();
      for (auto [original, replacement] : fused->replacements)
        rewriter.replaceUsesWithIf(original, replacement, [&](OpOperand &u) {
          return u.getOwner() != consumer.getOperation();
        });
      rewriter.eraseOp(consumer);
      if (producer->use_empty())
        rewriter.eraseOp(producer);
      return success();
    }
    return failure();
  }

  std::function<bool(OpOperand *)> eligible;
};

struct FuseElementwisePass
    : public pipe::impl::PipeFuseElementwiseBase<FuseElementwisePass> {
  using Base::Base;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    linalg::populateElementwiseOpsFusionPatterns(
        patterns, [this](OpOperand *use) { return shouldFuse(use); });
    // Fusing a producer that reads `linalg.index` maps its indices through
    // `affine.apply`s of single loop dimensions; fold them away, as nothing
    // lowers affine ops inside the CUDA kernels.
    affine::AffineApplyOp::getCanonicalizationPatterns(patterns, ctx);
    patterns.add<FuseKeepingProducerResult>(
        ctx, [this](OpOperand *use) { return keepsProducerResult(use); });
    // The block functions reshape between ops (a GEMM's [b*s, n] result is
    // [b, s, n] for the next op): move expand_shapes above elementwise
    // producers and collapse_shapes below elementwise consumers, so that
    // bias + activation and bias + residual meet; GEMMs keep their shapes.
    linalg::populateFoldReshapeOpsByExpansionPatterns(
        patterns, [](OpOperand *use) { return movesReshape(use); });
    tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, ctx);
    FrozenRewritePatternSet frozen(std::move(patterns));

    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      if (fn.isExternal() || !fn->hasAttr(kPackedEntryAttr))
        continue;
      if (failed(fuseIn(fn, frozen)))
        return signalPassFailure();
    }
  }

  LogicalResult fuseIn(func::FuncOp fn, const FrozenRewritePatternSet &frozen) {
    for (unsigned round = 0; round < kMaxRounds; ++round) {
      // Everything but the GEMM candidates (and their bodies): strict mode
      // keeps the driver off ops it was not given.
      SmallVector<Operation *> ops;
      fn.getBody().walk<WalkOrder::PreOrder>([&](Operation *op) {
        if (isGemmCandidate(op))
          return WalkResult::skip();
        ops.push_back(op);
        return WalkResult::advance();
      });
      GreedyRewriteConfig config;
      config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps)
          .setScope(&fn.getBody());
      bool changed = false;
      if (failed(applyOpPatternsGreedily(ops, frozen, config, &changed)))
        return fn.emitOpError("pipe-fuse-elementwise: the fusion did not "
                              "converge in this block function");
      if (!changed)
        break;
    }
    expandAffineInBodies(fn);
    return success();
  }

  /// Fused and expanded bodies map `linalg.index` through `affine.apply`;
  /// nothing lowers affine ops inside the CUDA kernels (lower-affine runs
  /// on the host code only), so they become arith here.
  static void expandAffineInBodies(func::FuncOp fn) {
    SmallVector<affine::AffineApplyOp> applies;
    fn.walk([&](affine::AffineApplyOp apply) {
      if (isa<linalg::GenericOp>(apply->getParentOp()))
        applies.push_back(apply);
    });
    for (affine::AffineApplyOp apply : applies) {
      OpBuilder b(apply);
      std::optional<SmallVector<Value, 8>> values = affine::expandAffineMap(
          b, apply.getLoc(), apply.getAffineMap(), apply.getMapOperands());
      if (!values)
        continue; // left for the later lowering to report
      apply.replaceAllUsesWith((*values)[0]);
      apply.erase();
    }
  }

  /// Whether `producer`'s body may be computed more than once per element.
  bool isCheap(linalg::GenericOp producer) const {
    unsigned ops = 0;
    for (Operation &op : producer.getBlock()->without_terminator()) {
      if (op.getNumRegions() != 0)
        return false;
      if (!isa<linalg::IndexOp>(op))
        ++ops;
    }
    return ops <= recomputeLimit;
  }

  /// The structural conditions on one use: upstream's, both ends generics
  /// that are not GEMM candidates.
  static bool canFuseInto(OpOperand *use) {
    if (!linalg::areElementwiseOpsFusable(use))
      return false;
    Operation *producer = use->get().getDefiningOp();
    return !isGemmCandidate(producer) && !isGemmCandidate(use->getOwner());
  }

  /// True when `consumer` reads some element of `use`'s producer more than
  /// once (its loops have more points than the producer's): the fused body
  /// then computes that element once per read.
  static bool readsRepeatedly(OpOperand *use) {
    auto consumer = cast<linalg::LinalgOp>(use->getOwner());
    auto producer = use->get().getDefiningOp<linalg::LinalgOp>();
    std::optional<int64_t> consumerPoints = loopPoints(consumer);
    std::optional<int64_t> producerPoints = loopPoints(producer);
    return !consumerPoints || !producerPoints ||
           *consumerPoints > *producerPoints;
  }

  /// Control of the reshape-by-expansion patterns: an expand_shape moves
  /// above the generic that produces its operand (which then runs on the
  /// expanded shape) when that generic is not a GEMM candidate and an
  /// elementwise generic reads the expanded value, i.e. when it lets the
  /// two fuse. Nothing else moves: not through GEMMs (they keep their
  /// shapes), named ops or pads, and no collapse_shape into its consumer
  /// (that spread reshapes into the backward chains without enabling
  /// fusions).
  static bool movesReshape(OpOperand *use) {
    auto expand = dyn_cast<tensor::ExpandShapeOp>(use->getOwner());
    auto producer = use->get().getDefiningOp<linalg::GenericOp>();
    if (!expand || !producer || isGemmCandidate(producer))
      return false;
    return llvm::any_of(expand->getUsers(), [](Operation *user) {
      auto generic = dyn_cast<linalg::GenericOp>(user);
      return generic && generic.getNumReductionLoops() == 0 &&
             !isGemmCandidate(generic);
    });
  }

  /// The control function: see the file comment.
  bool shouldFuse(OpOperand *use) const {
    if (!canFuseInto(use))
      return false;
    auto producer = use->get().getDefiningOp<linalg::GenericOp>();
    bool cheap = isCheap(producer);
    if (readsRepeatedly(use) && !cheap)
      return false;
    unsigned uses = 0;
    bool everyUseFuses = true;
    for (Value result : producer->getResults())
      for (OpOperand &other : result.getUses()) {
        ++uses;
        everyUseFuses &= canFuseInto(&other);
      }
    if (uses == 1)
      return true;
    return cheap && everyUseFuses;
  }

  /// Whether FuseKeepingProducerResult should fuse `use`: the control
  /// function said no because of the producer's other uses, the consumer is
  /// elementwise and reads each producer element once, and every other use
  /// comes after the consumer (they will read the fused op's result).
  bool keepsProducerResult(OpOperand *use) const {
    if (!canFuseInto(use) || shouldFuse(use))
      return false;
    auto consumer = cast<linalg::GenericOp>(use->getOwner());
    if (consumer.getNumReductionLoops() != 0 || readsRepeatedly(use) ||
        !consumer.getMatchingIndexingMap(use).isPermutation())
      return false;
    Operation *producer = use->get().getDefiningOp();
    for (Value result : producer->getResults())
      for (Operation *user : result.getUsers())
        if (user != consumer.getOperation() &&
            (user->getBlock() != consumer->getBlock() ||
             !consumer->isBeforeInBlock(user)))
          return false;
    return true;
  }
};

} // namespace
