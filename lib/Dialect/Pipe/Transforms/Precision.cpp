//===- Precision.cpp - bf16/f16 GEMM operands with f32 accumulation -------===//
//
// The mixed-precision policy of docs/autodiff.md: GEMM-like linalg ops read
// their two matrix operands in a 16-bit type and accumulate in f32, while
// everything else (softmax, norms, single-tensor reductions, the loss) and
// the parameters themselves stay f32. The truncation is an elementwise
// `arith.truncf` generic in front of the GEMM, and the GEMM's body extends
// the 16-bit block arguments back to f32, so the multiply-add, the
// accumulator and the result are f32 (what tensor cores do).
//
//===----------------------------------------------------------------------===//

#include "pipe/Dialect/Pipe/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/BitVector.h"

namespace mlir::pipe {
#define GEN_PASS_DEF_PIPEPRECISION
#include "pipe/Dialect/Pipe/Transforms/Passes.h.inc"
} // namespace mlir::pipe

using namespace mlir;

namespace {

/// Discardable attribute on converted GEMMs: the operand type.
constexpr llvm::StringLiteral kPrecisionAttr = "pipe.precision";

/// Loops that appear in the results of `map`.
llvm::BitVector loopsOf(AffineMap map) {
  llvm::BitVector loops(map.getNumDims());
  for (AffineExpr expr : map.getResults())
    expr.walk([&](AffineExpr sub) {
      if (auto dim = dyn_cast<AffineDimExpr>(sub))
        loops.set(dim.getPosition());
    });
  return loops;
}

bool isStaticF32Tensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.hasStaticShape() && tensor.getElementType().isF32();
}

/// The two input operands of a GEMM-like generic: one f32 init, at least one
/// reduction loop, `yield acc + a * b` (in either order, `a`/`b` possibly
/// through `arith.extf`) with `a` and `b` block arguments of two different
/// static f32 input tensors, each indexed by a loop the other does not use.
/// The last condition tells a matrix product from `sum(y * w)` (the loss) or
/// `sum(x * x)` (a variance).
std::optional<std::pair<OpOperand *, OpOperand *>>
matchGemm(linalg::GenericOp op) {
  if (op.getNumDpsInits() != 1 || op.getNumReductionLoops() == 0)
    return std::nullopt;
  OpOperand *init = op.getDpsInitOperand(0);
  if (!isStaticF32Tensor(init->get().getType()))
    return std::nullopt;
  Block &body = op.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto add = yield.getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add)
    return std::nullopt;
  BlockArgument acc = op.getMatchingBlockArgument(init);
  Value product;
  if (add.getLhs() == acc)
    product = add.getRhs();
  else if (add.getRhs() == acc)
    product = add.getLhs();
  else
    return std::nullopt;
  auto mul = product.getDefiningOp<arith::MulFOp>();
  if (!mul)
    return std::nullopt;
  auto source = [&](Value v) -> OpOperand * {
    if (auto ext = v.getDefiningOp<arith::ExtFOp>())
      v = ext.getIn();
    auto arg = dyn_cast<BlockArgument>(v);
    if (!arg || arg.getOwner() != &body)
      return nullptr;
    OpOperand *operand = op.getMatchingOpOperand(arg);
    if (!op.isDpsInput(operand) || !isStaticF32Tensor(operand->get().getType()))
      return nullptr;
    return operand;
  };
  OpOperand *lhs = source(mul.getLhs());
  OpOperand *rhs = source(mul.getRhs());
  if (!lhs || !rhs || lhs == rhs)
    return std::nullopt;
  llvm::BitVector lhsLoops = loopsOf(op.getMatchingIndexingMap(lhs));
  llvm::BitVector rhsLoops = loopsOf(op.getMatchingIndexingMap(rhs));
  llvm::BitVector lhsOnly = lhsLoops, rhsOnly = rhsLoops;
  lhsOnly.reset(rhsLoops);
  rhsOnly.reset(lhsLoops);
  if (lhsOnly.none() || rhsOnly.none())
    return std::nullopt;
  return std::make_pair(lhs, rhs);
}

/// Named contractions with both an M and an N dimension (matmul,
/// batch_matmul, transposed variants) are generalized so that one rewrite
/// handles everything.
bool isNamedGemm(linalg::LinalgOp op) {
  if (isa<linalg::GenericOp>(op) || !linalg::isaContractionOpInterface(op))
    return false;
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  return succeeded(dims) && !dims->m.empty() && !dims->n.empty();
}

/// Feeds `operand` through an elementwise truncation to `low` and extends
/// its block argument back to f32 inside `op`.
void truncateOperand(RewriterBase &rewriter, linalg::GenericOp op,
                     OpOperand *operand, FloatType low) {
  Location loc = op.getLoc();
  auto type = cast<RankedTensorType>(operand->get().getType());
  auto lowType = type.clone(low);
  rewriter.setInsertionPoint(op);
  Value empty = tensor::EmptyOp::create(rewriter, loc, lowType.getShape(), low);
  unsigned rank = type.getRank();
  AffineMap id = rewriter.getMultiDimIdentityMap(rank);
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  auto trunc = linalg::GenericOp::create(
      rewriter, loc, TypeRange{lowType}, ValueRange{operand->get()},
      ValueRange{empty}, ArrayRef<AffineMap>{id, id}, iters,
      [&](OpBuilder &b, Location l, ValueRange args) {
        Value t = arith::TruncFOp::create(b, l, low, args[0]);
        linalg::YieldOp::create(b, l, t);
      });
  BlockArgument arg = op.getMatchingBlockArgument(operand);
  rewriter.modifyOpInPlace(op, [&] {
    operand->set(trunc.getResult(0));
    arg.setType(low);
  });
  rewriter.setInsertionPointToStart(arg.getOwner());
  Value ext = arith::ExtFOp::create(rewriter, loc, rewriter.getF32Type(), arg);
  rewriter.replaceAllUsesExcept(arg, ext, ext.getDefiningOp());
}

struct PrecisionPass : public pipe::impl::PipePrecisionBase<PrecisionPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    FloatType low;
    if (gemm == "f32")
      return;
    if (gemm == "bf16")
      low = BFloat16Type::get(ctx);
    else if (gemm == "f16")
      low = Float16Type::get(ctx);
    else {
      mlir::emitError(module.getLoc(), "pipe-precision: unknown gemm type '")
          << gemm << "' (expected bf16, f16 or f32)";
      return signalPassFailure();
    }

    IRRewriter rewriter(ctx);
    SmallVector<linalg::LinalgOp> named;
    module.walk([&](linalg::LinalgOp op) {
      if (isNamedGemm(op))
        named.push_back(op);
    });
    for (linalg::LinalgOp op : named) {
      rewriter.setInsertionPoint(op);
      if (failed(linalg::generalizeNamedOp(rewriter, op))) {
        op->emitOpError("pipe-precision could not generalize this op");
        return signalPassFailure();
      }
    }

    SmallVector<linalg::GenericOp> generics;
    module.walk([&](linalg::GenericOp op) { generics.push_back(op); });
    for (linalg::GenericOp op : generics) {
      auto match = matchGemm(op);
      if (!match)
        continue;
      truncateOperand(rewriter, op, match->first, low);
      truncateOperand(rewriter, op, match->second, low);
      op->setAttr(kPrecisionAttr, StringAttr::get(ctx, gemm));
    }
  }
};

} // namespace
