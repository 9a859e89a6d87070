//===- LinalgToVector.cpp - Vector rows for linalg ops on buffers ---------===//
//
// What pipe-linalg-to-gemm leaves (elementwise chains, row reductions of
// softmax, layer norm and cross-entropy, broadcasts) would otherwise become
// scalar loop nests, and LLVM's loop vectoriser cannot reorder a float
// reduction. Each such op is tiled so that one tile is a run of its
// innermost loop dimension (the contiguous one in every operand), the tile
// is vectorised by upstream's linalg vectoriser, and the vector ops are
// lowered to 1-D loads, stores, arithmetic and horizontal reductions.
//
//===----------------------------------------------------------------------===//

#include "pipe/Conversion/Passes.h"

#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::pipe {
#define GEN_PASS_DEF_PIPELINALGTOVECTOR
#include "pipe/Conversion/Passes.h.inc"
} // namespace mlir::pipe

using namespace mlir;

namespace {

/// Rows shorter than this stay scalar loops; no run is shorter.
constexpr int64_t kShortestRow = 8;
/// The longest run `max-length` may ask for.
constexpr int64_t kLongestRun = 4096;

/// The length of the vector along the innermost loop dimension of `op`, or
/// std::nullopt when the op stays with the loop lowering: dynamic shapes,
/// a strided or i1 operand, an operand that indexes the innermost dimension
/// anywhere but in its last (contiguous) position, a row too short to gain
/// from vectors, or a row that no vector length up to `maxLength` divides.
std::optional<int64_t> rowVectorLength(linalg::LinalgOp op, int64_t maxLength) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (ranges.empty() || llvm::any_of(ranges, ShapedType::isDynamic))
    return std::nullopt;
  unsigned inner = ranges.size() - 1;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (!type)
      continue;
    // A vector of i1 in memory is packed bits, a memref of i1 holds a byte
    // per element: the two would disagree.
    if (!type.getLayout().isIdentity() ||
        type.getElementTypeBitWidth() % 8 != 0)
      return std::nullopt;
    AffineMap map = op.getMatchingIndexingMap(&operand);
    if (!map.isProjectedPermutation(/*allowZeroInResults=*/true))
      return std::nullopt;
    for (auto [position, result] : llvm::enumerate(map.getResults())) {
      auto dim = dyn_cast<AffineDimExpr>(result);
      if (dim && dim.getPosition() == inner &&
          position + 1 != map.getNumResults())
        return std::nullopt;
    }
  }
  int64_t rowLength = ranges[inner];
  if (rowLength < kShortestRow)
    return std::nullopt;
  // The largest length that divides the row, so that every tile is whole
  // (no masks); a row of odd length is left to the loops.
  for (int64_t length = std::min(rowLength, maxLength); length >= kShortestRow;
       --length)
    if (rowLength % length == 0)
      return length;
  return std::nullopt;
}

struct LinalgToVectorPass
    : public pipe::impl::PipeLinalgToVectorBase<LinalgToVectorPass> {
  using Base::Base;

  void runOnOperation() override {
    // Longer vectors only make LLVM's code generation slower.
    if (maxLength < kShortestRow || maxLength > kLongestRun) {
      getOperation().emitError("pipe-linalg-to-vector: max-length=")
          << int64_t(maxLength) << " is outside [" << kShortestRow << ", "
          << kLongestRun << "]";
      return signalPassFailure();
    }
    SmallVector<std::pair<linalg::LinalgOp, int64_t>> candidates;
    getOperation().walk([&](linalg::LinalgOp op) {
      // A fill stays a loop that LLVM turns into memset.
      if (isa<linalg::FillOp>(op) || !op.hasPureBufferSemantics() ||
          failed(linalg::vectorizeOpPrecondition(op)))
        return;
      if (std::optional<int64_t> length = rowVectorLength(op, maxLength))
        candidates.emplace_back(op, *length);
    });
    IRRewriter rewriter(&getContext());
    for (auto [op, length] : candidates)
      if (failed(vectorizeRows(rewriter, op, length)))
        return signalPassFailure();
    lowerVectorOps();
  }

  /// Tiles `op` into runs of `length` along its innermost loop (every outer
  /// loop by 1) and vectorises the tile.
  LogicalResult vectorizeRows(RewriterBase &rewriter, linalg::LinalgOp op,
                              int64_t length) {
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    SmallVector<OpFoldResult> tileSizes(ranges.size() - 1,
                                        rewriter.getIndexAttr(1));
    // 0: the whole row is one tile.
    tileSizes.push_back(
        rewriter.getIndexAttr(length == ranges.back() ? 0 : length));
    scf::SCFTilingOptions options;
    options.setTileSizes(tileSizes);
    rewriter.setInsertionPoint(op);
    FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
        rewriter, cast<TilingInterface>(op.getOperation()), options);
    if (failed(tiled))
      return op->emitError("pipe-linalg-to-vector: tiling failed");
    rewriter.eraseOp(op);
    for (Operation *tile : tiled->tiledOps) {
      rewriter.setInsertionPoint(tile);
      FailureOr<linalg::VectorizationResult> vectorized =
          linalg::vectorize(rewriter, tile);
      if (failed(vectorized))
        return tile->emitError("pipe-linalg-to-vector: vectorisation failed");
      rewriter.eraseOp(tile);
    }
    return success();
  }

  /// Lowers the vectoriser's n-D transfers and multi-reductions to what
  /// convert-vector-to-llvm turns into plain vector instructions.
  void lowerVectorOps() {
    MLIRContext *context = &getContext();
    // First drop the unit dimensions of the tiles: a reduction over the
    // outer loops of a run (a bias gradient) becomes a plain vector add and
    // a row reduction a 1-D one...
    {
      RewritePatternSet patterns(context);
      vector::populateVectorTransferDropUnitDimsPatterns(patterns);
      vector::populateCastAwayVectorLeadingOneDimPatterns(patterns);
      vector::MultiDimReductionOp::getCanonicalizationPatterns(patterns,
                                                               context);
      memref::SubViewOp::getCanonicalizationPatterns(patterns, context);
      vector::TransferReadOp::getCanonicalizationPatterns(patterns, context);
      vector::TransferWriteOp::getCanonicalizationPatterns(patterns, context);
      vector::ShapeCastOp::getCanonicalizationPatterns(patterns, context);
      vector::BroadcastOp::getCanonicalizationPatterns(patterns, context);
      (void)applyPatternsGreedily(getOperation(), std::move(patterns));
    }
    // ...then lower what remains to 1-D loads, stores and reductions.
    {
      RewritePatternSet patterns(context);
      vector::populateVectorMultiReductionLoweringPatterns(
          patterns, vector::VectorMultiReductionLowering::InnerReduction);
      vector::populateVectorTransferPermutationMapLoweringPatterns(patterns);
      vector::populateFlattenVectorTransferPatterns(patterns);
      populateVectorToSCFConversionPatterns(
          patterns, VectorTransferToSCFOptions().enableFullUnroll());
      vector::populateVectorBroadcastLoweringPatterns(patterns);
      vector::populateVectorShapeCastLoweringPatterns(patterns);
      vector::populateVectorTransposeLoweringPatterns(
          patterns, vector::VectorTransposeLowering::EltWise);
      vector::populateVectorStepLoweringPatterns(patterns);
      vector::populateVectorTransferLoweringPatterns(patterns,
                                                     /*maxTransferRank=*/1);
      (void)applyPatternsGreedily(getOperation(), std::move(patterns));
    }
    // A horizontal sum in source order would be a chain of dependent scalar
    // adds; reassociation lets LLVM add the row as a tree of vectors. The
    // sum of a row then differs from the loop's in the last bits only.
    getOperation().walk([](vector::ReductionOp reduction) {
      reduction.setFastmath(arith::FastMathFlags::reassoc);
    });
  }
};

} // namespace
