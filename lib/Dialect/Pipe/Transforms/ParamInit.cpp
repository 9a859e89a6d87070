//===- ParamInit.cpp - Initial values for weights without data ------------===//
//
// The role of a weight is read off its uses: torch-mlir lowers Linear to a
// transpose and a matmul, Conv2d to linalg.conv_2d_nchw_fchw, and eval-mode
// BatchNorm to elementwise generics computing
// (x - running_mean) * rsqrt(running_var + eps) * weight + bias, either in
// one generic or, after its decompositions, in several connected through
// reshapes and broadcasts. The values are drawn from a counter-based hash of
// (seed, name, index), so that they are reproducible anywhere.
//
//===----------------------------------------------------------------------===//

#include "pipe/Dialect/Pipe/Transforms/ParamInit.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/xxhash.h"

#include <cmath>
#include <cstring>

using namespace mlir;
using namespace mlir::pipe;

/// Hops through the dataflow are bounded: models nest reshapes and copies a
/// few levels deep, never dozens.
static constexpr unsigned kMaxDepth = 16;

/// Elementwise linalg ops whose payload reads the elements of their inputs
/// one by one: the analysis looks inside them. Ops with reductions
/// (matmuls, convolutions) are users in their own right.
static bool isElementwise(Operation *op) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp || !isa<linalg::GenericOp, linalg::TransposeOp,
                        linalg::BroadcastOp, linalg::MapOp>(op))
    return false;
  return linalgOp.getNumLoops() == linalgOp.getNumParallelLoops();
}

/// Calls `visit` for every use that computes with the elements of `value`,
/// looking through reshapes, casts and elementwise linalg ops (into their
/// payload, and from a yield on to the op's result). Each value is entered
/// once: residual streams fan out at every layer.
static void forEachElementUse(Value value,
                              function_ref<void(OpOperand &)> visit,
                              llvm::DenseSet<Value> &seen, unsigned depth) {
  if (depth > kMaxDepth || !seen.insert(value).second)
    return;
  for (OpOperand &use : value.getUses()) {
    Operation *user = use.getOwner();
    if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tensor::CastOp>(
            user)) {
      forEachElementUse(user->getResult(0), visit, seen, depth + 1);
      continue;
    }
    if (isa<linalg::YieldOp>(user)) {
      Operation *parent = user->getParentOp();
      if (isElementwise(parent) &&
          use.getOperandNumber() < parent->getNumResults())
        forEachElementUse(parent->getResult(use.getOperandNumber()), visit,
                          seen, depth + 1);
      continue;
    }
    if (isElementwise(user)) {
      auto linalgOp = cast<linalg::LinalgOp>(user);
      if (linalgOp.isDpsInput(&use)) {
        forEachElementUse(linalgOp.getMatchingBlockArgument(&use), visit,
                          seen, depth + 1);
        continue;
      }
    }
    visit(use);
  }
}

static void forEachElementUse(Value value,
                              function_ref<void(OpOperand &)> visit) {
  llvm::DenseSet<Value> seen;
  forEachElementUse(value, visit, seen, /*depth=*/0);
}

/// Whether a payload value is the same for every element: a constant, a
/// value captured from outside the payload, or computed from those (the
/// eps of a normalisation, `truncf` of an f64 constant times alpha).
static bool isInvariant(Value value, unsigned depth = 0) {
  if (depth > kMaxDepth)
    return false;
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    // A splat tensor constant read elementwise.
    auto linalgOp = dyn_cast<linalg::LinalgOp>(arg.getOwner()->getParentOp());
    if (!linalgOp || arg.getArgNumber() >= linalgOp.getNumDpsInputs())
      return false;
    auto constant = linalgOp.getDpsInputs()[arg.getArgNumber()]
                        .getDefiningOp<arith::ConstantOp>();
    auto dense =
        constant ? dyn_cast<DenseElementsAttr>(constant.getValue()) : nullptr;
    return dense && dense.isSplat();
  }
  Operation *def = value.getDefiningOp();
  if (!def->getParentOfType<linalg::LinalgOp>())
    return true;
  return llvm::all_of(def->getOperands(), [&](Value operand) {
    return isInvariant(operand, depth + 1);
  });
}

/// The payload value that `value` (a block argument of an elementwise op
/// reading an earlier elementwise op's result) stands for, or null.
static Value getProducedScalar(BlockArgument arg) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(arg.getOwner()->getParentOp());
  if (!linalgOp || arg.getArgNumber() >= linalgOp.getNumDpsInputs())
    return nullptr;
  Value tensor = linalgOp.getDpsInputs()[arg.getArgNumber()];
  while (Operation *def = tensor.getDefiningOp()) {
    if (!isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tensor::CastOp>(
            def))
      break;
    tensor = def->getOperand(0);
  }
  auto result = dyn_cast<OpResult>(tensor);
  if (!result || !isElementwise(result.getOwner()))
    return nullptr;
  auto producer = cast<linalg::LinalgOp>(result.getOwner());
  return producer.getBlock()->getTerminator()->getOperand(
      result.getResultNumber());
}

/// Whether a payload value is 1/sqrt(x) or sqrt(x) (possibly times other
/// factors), in this payload or an earlier elementwise op's.
static bool isStdFactor(Value value, unsigned depth = 0) {
  if (depth > kMaxDepth)
    return false;
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    Value produced = getProducedScalar(arg);
    return produced && isStdFactor(produced, depth + 1);
  }
  Operation *def = value.getDefiningOp();
  if (isa<math::RsqrtOp, math::SqrtOp>(def))
    return true;
  if (isa<arith::MulFOp, arith::DivFOp, arith::TruncFOp, arith::ExtFOp>(def))
    return llvm::any_of(def->getOperands(), [&](Value operand) {
      return isStdFactor(operand, depth + 1);
    });
  return false;
}

/// rsqrt(var + eps) or sqrt(var + eps): `var` is added to an invariant and
/// the sum's square root taken.
static bool isRunningVariance(Value weight) {
  bool found = false;
  forEachElementUse(weight, [&](OpOperand &use) {
    auto add = dyn_cast<arith::AddFOp>(use.getOwner());
    if (!add || !isInvariant(add->getOperand(1 - use.getOperandNumber())))
      return;
    forEachElementUse(add.getResult(), [&](OpOperand &sum) {
      found |= isa<math::RsqrtOp, math::SqrtOp>(sum.getOwner());
    });
  });
  return found;
}

/// (x - mean) * rsqrt(...) or (x - mean) / sqrt(...): `mean` is subtracted
/// from a varying value and the difference scaled by a standard deviation.
static bool isRunningMean(Value weight) {
  bool found = false;
  forEachElementUse(weight, [&](OpOperand &use) {
    auto sub = dyn_cast<arith::SubFOp>(use.getOwner());
    if (!sub || use.getOperandNumber() != 1 || isInvariant(sub.getLhs()))
      return;
    forEachElementUse(sub.getResult(), [&](OpOperand &diff) {
      Operation *op = diff.getOwner();
      Value other = op->getOperand(1 - diff.getOperandNumber());
      if (isa<arith::MulFOp>(op) ||
          (isa<arith::DivFOp>(op) && diff.getOperandNumber() == 0))
        found |= isStdFactor(other);
    });
  });
  return found;
}

namespace {
/// The fans of a weight found at a contraction.
struct Fans {
  int64_t in = 1, out = 1;
};
} // namespace

/// The fans of the weight at the contraction `op` reading it as `use`,
/// where `dimOf[d]` is the operand dimension that weight dimension d became
/// (-1: dropped).
static std::optional<Fans> getContractionFans(linalg::LinalgOp op,
                                              OpOperand &use,
                                              ArrayRef<int64_t> dimOf,
                                              ArrayRef<int64_t> shape) {
  SmallVector<unsigned> inLoops, outLoops;
  // Convolutions first: a convolution is also a contraction over its input
  // channels alone.
  FailureOr<linalg::ConvolutionDimensions> conv =
      linalg::isaConvolutionOpInterface(op)
          ? linalg::inferConvolutionDims(op)
          : FailureOr<linalg::ConvolutionDimensions>(failure());
  if (succeeded(conv)) {
    // PyTorch's convention: the kernel window counts on both sides.
    llvm::append_range(inLoops, conv->inputChannel);
    llvm::append_range(inLoops, conv->filterLoop);
    llvm::append_range(outLoops, conv->outputChannel);
    llvm::append_range(outLoops, conv->depth);
    llvm::append_range(outLoops, conv->filterLoop);
  } else if (FailureOr<linalg::ContractionDimensions> dims =
                 linalg::inferContractionDims(op);
             succeeded(dims)) {
    llvm::append_range(inLoops, dims->k);
    llvm::append_range(outLoops, dims->m);
    llvm::append_range(outLoops, dims->n);
  } else {
    return std::nullopt;
  }
  AffineMap map = op.getMatchingIndexingMap(&use);
  Fans fans;
  bool contracted = false;
  for (auto [dim, operandDim] : llvm::enumerate(dimOf)) {
    if (operandDim < 0)
      continue;
    auto loop = dyn_cast<AffineDimExpr>(map.getResult(operandDim));
    if (!loop)
      continue;
    if (llvm::is_contained(inLoops, loop.getPosition())) {
      fans.in *= shape[dim];
      contracted = true;
    }
    if (llvm::is_contained(outLoops, loop.getPosition()))
      fans.out *= shape[dim];
  }
  if (!contracted)
    return std::nullopt;
  return fans;
}

/// Follows `value` through reshape-free copies (transposes, broadcasts,
/// generics yielding their input) to the first contraction that reads it.
static std::optional<Fans> findContractionFans(Value value,
                                               SmallVector<int64_t> dimOf,
                                               ArrayRef<int64_t> shape,
                                               unsigned depth = 0) {
  if (depth > kMaxDepth)
    return std::nullopt;
  for (OpOperand &use : value.getUses()) {
    auto op = dyn_cast<linalg::LinalgOp>(use.getOwner());
    if (!op || !op.isDpsInput(&use) || op->getNumResults() != 1)
      continue;
    if (std::optional<Fans> fans = getContractionFans(op, use, dimOf, shape))
      return fans;
    // A copy: one input, yielded as it is, into a permutation of the loops.
    if (!isElementwise(op) || op.getNumDpsInputs() != 1)
      continue;
    Operation *yield = op.getBlock()->getTerminator();
    if (yield->getOperand(0) != op.getMatchingBlockArgument(&use))
      continue;
    AffineMap in = op.getMatchingIndexingMap(&use);
    AffineMap out = op.getIndexingMapMatchingResult(op->getResult(0));
    if (!in.isProjectedPermutation() || !out.isPermutation())
      continue;
    SmallVector<int64_t> next(dimOf.size(), -1);
    for (auto [dim, operandDim] : llvm::enumerate(dimOf))
      if (operandDim >= 0)
        if (std::optional<unsigned> result =
                out.getResultPosition(getAffineDimExpr(
                    in.getDimPosition(operandDim), op->getContext())))
          next[dim] = *result;
    if (std::optional<Fans> fans =
            findContractionFans(op->getResult(0), next, shape, depth + 1))
      return fans;
  }
  return std::nullopt;
}

WeightUse pipe::analyzeWeightUse(Value weight) {
  WeightUse use;
  auto type = cast<RankedTensorType>(weight.getType());
  ArrayRef<int64_t> shape = type.getShape();
  if (isRunningVariance(weight)) {
    use.role = WeightRole::RunningVariance;
    return use;
  }
  if (isRunningMean(weight)) {
    use.role = WeightRole::RunningMean;
    return use;
  }
  SmallVector<int64_t> dimOf =
      llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
  if (std::optional<Fans> fans = findContractionFans(weight, dimOf, shape)) {
    use.fanIn = fans->in;
    use.fanOut = fans->out;
    use.fromContraction = true;
    return use;
  }
  if (type.getRank() <= 1) {
    bool multiplies = false;
    forEachElementUse(weight, [&](OpOperand &operand) {
      multiplies |= isa<arith::MulFOp>(operand.getOwner());
    });
    use.role = multiplies ? WeightRole::Scale : WeightRole::Bias;
    return use;
  }
  // An embedding table or a weight read in ways not recognised: PyTorch's
  // convention, [out, in, kernel...].
  int64_t receptive = 1;
  for (int64_t size : shape.drop_front(2))
    receptive *= size;
  use.fanIn = shape[1] * receptive;
  use.fanOut = shape[0] * receptive;
  return use;
}

std::optional<InitKind> pipe::parseInitKind(StringRef name) {
  return llvm::StringSwitch<std::optional<InitKind>>(name)
      .Case("normal", InitKind::Normal)
      .Case("xavier-uniform", InitKind::XavierUniform)
      .Case("kaiming-uniform", InitKind::KaimingUniform)
      .Case("zeros", InitKind::Zeros)
      .Default(std::nullopt);
}

StringRef pipe::getInitKindNames() {
  return "normal, xavier-uniform, kaiming-uniform, zeros";
}

/// SplitMix64's finaliser: a bijective mix of 64 bits.
static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// A uniform double in [0, 1) for element `index` of the stream `key`.
static double uniform(uint64_t key, uint64_t index) {
  return double(mix(key ^ mix(index)) >> 11) * 0x1.0p-53;
}

/// The standard deviation of GPT-2's and BERT's normal initialisation.
static constexpr double kNormalStd = 0.02;

ElementsAttr pipe::getInitialValue(RankedTensorType type, const WeightUse &use,
                                   InitKind kind, uint64_t seed,
                                   StringRef name) {
  auto element = dyn_cast<FloatType>(type.getElementType());
  if (!element || !(element.isF16() || element.isBF16() || element.isF32() ||
                    element.isF64()))
    return nullptr;
  bool one =
      use.role == WeightRole::Scale || use.role == WeightRole::RunningVariance;
  if (use.role != WeightRole::Matrix || kind == InitKind::Zeros)
    return DenseElementsAttr::get(type,
                                  FloatAttr::get(element, one ? 1.0 : 0.0));

  double fanIn = double(std::max<int64_t>(use.fanIn, 1));
  double fanOut = double(std::max<int64_t>(use.fanOut, 1));
  // Xavier: U(-a, a), a = sqrt(6 / (in + out)); Kaiming (gain sqrt(2), the
  // ReLU's): a = sqrt(6 / in).
  double bound = kind == InitKind::XavierUniform
                     ? std::sqrt(6.0 / (fanIn + fanOut))
                     : std::sqrt(6.0 / fanIn);
  uint64_t key = mix(seed ^ llvm::xxh3_64bits(name));
  auto draw = [&](uint64_t index) {
    if (kind != InitKind::Normal)
      return (2.0 * uniform(key, index) - 1.0) * bound;
    // Box-Muller from two draws per element.
    double u1 = uniform(key, 2 * index), u2 = uniform(key, 2 * index + 1);
    return kNormalStd * std::sqrt(-2.0 * std::log1p(-u1)) *
           std::cos(2.0 * M_PI * u2);
  };

  uint64_t count = uint64_t(type.getNumElements());
  unsigned bytes = element.getWidth() / 8;
  AsmResourceBlob blob = HeapAsmResourceBlob::allocate(count * bytes, bytes);
  MutableArrayRef<char> data = blob.getMutableData();
  for (uint64_t index = 0; index < count; ++index) {
    double value = draw(index);
    char *out = data.data() + index * bytes;
    if (element.isF32()) {
      float narrow = float(value);
      std::memcpy(out, &narrow, sizeof(narrow));
    } else if (element.isF64()) {
      std::memcpy(out, &value, sizeof(value));
    } else {
      llvm::APFloat converted(value);
      bool lost;
      converted.convert(element.getFloatSemantics(),
                        llvm::APFloat::rmNearestTiesToEven, &lost);
      uint64_t bits = converted.bitcastToAPInt().getZExtValue();
      std::memcpy(out, &bits, bytes);
    }
  }
  return DenseResourceElementsAttr::get(type, ("init." + name).str(),
                                        std::move(blob));
}
