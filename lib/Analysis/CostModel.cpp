//===- CostModel.cpp - Analytic cost of ops and blocks --------------------===//
//
// See include/pipe/Analysis/CostModel.h and docs/blocks-and-costs.md for the
// formulas. Everything is computed in 64-bit saturating arithmetic so that a
// pathological shape saturates instead of wrapping around.
//
//===----------------------------------------------------------------------===//

#include "pipe/Analysis/CostModel.h"
#include "pipe/Dialect/Pipe/IR/Pipe.h"
#include "pipe/Support/InputFile.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/xxhash.h"

#include <cmath>
#include <tuple>

using namespace mlir;
using namespace mlir::pipe;

static uint64_t satMul(uint64_t a, uint64_t b) {
  return llvm::SaturatingMultiply(a, b);
}
static uint64_t satAdd(uint64_t a, uint64_t b) {
  return llvm::SaturatingAdd(a, b);
}

//===----------------------------------------------------------------------===//
// Options
//===----------------------------------------------------------------------===//

std::optional<RecomputePolicy>
mlir::pipe::parseRecomputePolicy(StringRef text) {
  if (text == "save-all")
    return RecomputePolicy::SaveAll;
  if (text == "recompute" || text == "save-inputs")
    return RecomputePolicy::Recompute;
  return std::nullopt;
}

StringRef mlir::pipe::stringifyRecomputePolicy(RecomputePolicy policy) {
  switch (policy) {
  case RecomputePolicy::SaveAll:
    return "save-all";
  case RecomputePolicy::Recompute:
    return "recompute";
  }
  llvm_unreachable("unknown recompute policy");
}

std::optional<unsigned> mlir::pipe::parseFloatBytes(StringRef dtype) {
  if (dtype == "native")
    return 0u;
  if (dtype == "f64")
    return 8u;
  if (dtype == "f32" || dtype == "tf32")
    return 4u;
  if (dtype == "bf16" || dtype == "f16")
    return 2u;
  if (dtype == "f8" || dtype.starts_with("f8E"))
    return 1u;
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Sizes and scalar FLOPs
//===----------------------------------------------------------------------===//

static uint64_t getElementBytes(Type type, const CostOptions &options) {
  if (auto complex = dyn_cast<ComplexType>(type))
    return 2 * getElementBytes(complex.getElementType(), options);
  if (isa<FloatType>(type) && options.floatBytes != 0)
    return options.floatBytes;
  if (type.isIndex())
    return 8;
  if (type.isIntOrFloat())
    return llvm::divideCeil(type.getIntOrFloatBitWidth(), 8);
  return 0;
}

uint64_t mlir::pipe::getTypeBytes(Type type, const CostOptions &options) {
  if (auto tensor = dyn_cast<RankedTensorType>(type)) {
    if (!tensor.hasStaticShape())
      return 0;
    uint64_t bytes = getElementBytes(tensor.getElementType(), options);
    for (int64_t dim : tensor.getShape())
      bytes = satMul(bytes, dim);
    return bytes;
  }
  return getElementBytes(type, options);
}

static bool isFloatLike(Type type) {
  if (auto shaped = dyn_cast<ShapedType>(type))
    type = shaped.getElementType();
  return isa<FloatType, ComplexType>(type);
}

uint64_t mlir::pipe::getScalarOpFlops(Operation *op,
                                      const CostOptions &options) {
  // One FLOP per float arithmetic op; comparisons count, since max/min-style
  // reductions and masks are real work on the vector units.
  if (isa<arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::DivFOp,
          arith::RemFOp, arith::NegFOp, arith::MaximumFOp, arith::MinimumFOp,
          arith::MaxNumFOp, arith::MinNumFOp, arith::CmpFOp>(op))
    return 1;
  if (isa<math::FmaOp>(op))
    return 2;
  // Cheap math ops are single instructions.
  if (isa<math::AbsFOp, math::CeilOp, math::FloorOp, math::RoundOp,
          math::RoundEvenOp, math::TruncOp, math::CopySignOp, math::ClampFOp>(
          op))
    return 1;
  // Everything else of the math dialect on floats is a transcendental (exp,
  // log, tanh, erf, sqrt, rsqrt, pow, trigonometry, ...).
  if (op->getDialect() && op->getDialect()->getNamespace() == "math" &&
      op->getNumResults() != 0 && isFloatLike(op->getResult(0).getType()))
    return options.transcendentalFlops;
  // Casts, selects, integer and index arithmetic, tensor.extract, yields.
  return 0;
}

/// Linear payload ops: their backward needs no forward values.
static bool isLinearScalarOp(Operation *op) {
  return isa<arith::AddFOp, arith::SubFOp, arith::NegFOp>(op);
}

uint64_t mlir::pipe::getPayloadFlops(Operation *linalgOp,
                                     const CostOptions &options) {
  uint64_t flops = 0;
  for (Region &region : linalgOp->getRegions())
    region.walk([&](Operation *nested) {
      flops = satAdd(flops, getScalarOpFlops(nested, options));
    });
  return flops;
}

//===----------------------------------------------------------------------===//
// ValueOrigins
//===----------------------------------------------------------------------===//

namespace {
/// Assigns origins to everything in `region` and returns the union of the
/// origins of all values used in it (which covers values captured from
/// above and values yielded by nested terminators).
struct OriginWalker {
  llvm::DenseMap<Value, ValueOrigin> &origins;

  static void merge(ValueOrigin &into, ValueOrigin from) {
    into.fromInput |= from.fromInput;
    into.fromParam |= from.fromParam;
    into.fromData |= from.fromData;
  }

  ValueOrigin visit(Region &region, ValueOrigin argOrigin) {
    ValueOrigin used;
    for (Block &block : region) {
      for (BlockArgument arg : block.getArguments())
        origins[arg] = argOrigin;
      for (Operation &op : block) {
        ValueOrigin operandsOrigin;
        for (Value operand : op.getOperands())
          merge(operandsOrigin, origins.lookup(operand));
        ValueOrigin resultOrigin = operandsOrigin;
        if (isa<GetParamOp>(op))
          resultOrigin.fromParam = true;
        for (Region &nested : op.getRegions())
          merge(resultOrigin, visit(nested, operandsOrigin));
        for (Value result : op.getResults())
          origins[result] = resultOrigin;
        merge(used, resultOrigin);
      }
    }
    return used;
  }
};
} // namespace

ValueOrigins::ValueOrigins(Region &body, unsigned numParams,
                           ArrayRef<bool> inputNeedsGrad) {
  if (body.empty())
    return;
  Block &entry = body.front();
  for (BlockArgument arg : entry.getArguments()) {
    ValueOrigin origin;
    unsigned index = arg.getArgNumber();
    if (index < numParams)
      origin.fromParam = true;
    else if (index - numParams < inputNeedsGrad.size() &&
             !inputNeedsGrad[index - numParams])
      origin.fromData = true;
    else
      origin.fromInput = true;
    origins[arg] = origin;
  }
  OriginWalker walker{origins};
  // The entry arguments were classified above; visit the ops only.
  for (Block &block : body) {
    for (Operation &op : block) {
      ValueOrigin operandsOrigin;
      for (Value operand : op.getOperands())
        OriginWalker::merge(operandsOrigin, origins.lookup(operand));
      ValueOrigin resultOrigin = operandsOrigin;
      // Reads of lifted parameters in a function before block formation.
      if (isa<GetParamOp>(op))
        resultOrigin.fromParam = true;
      for (Region &nested : op.getRegions())
        OriginWalker::merge(resultOrigin, walker.visit(nested, operandsOrigin));
      for (Value result : op.getResults())
        origins[result] = resultOrigin;
    }
  }
}

bool ValueOrigins::isDifferentiable(Value value) const {
  ValueOrigin origin = lookup(value);
  return (origin.fromInput || origin.fromParam) && isFloatLike(value.getType());
}

//===----------------------------------------------------------------------===//
// Op costs
//===----------------------------------------------------------------------===//

static LogicalResult checkStaticShapes(Operation *op) {
  auto isStatic = [](Type type) {
    if (isa<UnrankedTensorType>(type))
      return false;
    if (auto tensor = dyn_cast<RankedTensorType>(type))
      return tensor.hasStaticShape();
    return true;
  };
  for (Type type : op->getOperandTypes())
    if (!isStatic(type))
      return op->emitOpError("has an operand of dynamic type ")
             << type << "; the cost model needs static shapes";
  for (Type type : op->getResultTypes())
    if (!isStatic(type))
      return op->emitOpError("has a result of dynamic type ")
             << type << "; the cost model needs static shapes";
  return success();
}

/// Charges one backward pass of `flops` for the gradient of `value`.
static void chargeGradient(OpCost &cost, Value value, uint64_t flops,
                           const ValueOrigins &origins) {
  if (!origins.isDifferentiable(value))
    return;
  if (origins.lookup(value).fromInput)
    cost.backwardInputFlops = satAdd(cost.backwardInputFlops, flops);
  else
    cost.backwardWeightFlops = satAdd(cost.backwardWeightFlops, flops);
}

/// True if `value` is defined by `op` or inside one of its regions.
static bool isDefinedInside(Value value, Operation *op) {
  return op->isAncestor(value.getParentRegion()->getParentOp());
}

/// Which operands of one scalar op its backward reads, given which operands
/// carry a gradient: d(x + y) reads nothing; d(x * y) reads y for dx and x
/// for dy; d(x / y) reads y for dx and both for dy; a select reads its
/// condition; everything else nonlinear (exp, tanh, max, ...) reads all.
static void getOperandsReadByScalarBackward(Operation *op,
                                            ArrayRef<bool> operandIsDiff,
                                            const CostOptions &options,
                                            SmallVectorImpl<Value> &read) {
  if (!llvm::is_contained(operandIsDiff, true))
    return;
  if (isa<arith::SelectOp>(op)) {
    read.push_back(op->getOperand(0));
    return;
  }
  if (getScalarOpFlops(op, options) == 0 || isLinearScalarOp(op))
    return;
  if (isa<arith::MulFOp>(op)) {
    if (operandIsDiff[0])
      read.push_back(op->getOperand(1));
    if (operandIsDiff[1])
      read.push_back(op->getOperand(0));
    return;
  }
  if (isa<arith::DivFOp>(op)) {
    read.push_back(op->getOperand(1));
    if (operandIsDiff[1])
      read.push_back(op->getOperand(0));
    return;
  }
  llvm::append_range(read, op->getOperands());
}

/// Follows the gradient through the payload of a linalg op (block arguments
/// of differentiable operands and gathers from differentiable tensors carry
/// one, and so does every scalar computed from them), collects the scalars
/// the backward reads, and maps them back to the op's operands and captured
/// tensors: a payload intermediate is recomputed from what it derives from.
static SmallVector<Value, 4>
getValuesReadByPayloadBackward(linalg::LinalgOp linalgOp,
                               const ValueOrigins &origins,
                               const CostOptions &options) {
  Operation *op = linalgOp.getOperation();
  llvm::DenseSet<Value> diff;
  for (BlockArgument arg : linalgOp.getBlock()->getArguments()) {
    OpOperand *operand = linalgOp.getMatchingOpOperand(arg);
    if (operand && origins.isDifferentiable(operand->get()))
      diff.insert(arg);
  }
  SmallVector<Value> worklist;
  op->walk<WalkOrder::PreOrder>([&](Operation *nested) {
    if (nested == op)
      return;
    SmallVector<bool, 3> operandIsDiff;
    for (Value operand : nested->getOperands())
      operandIsDiff.push_back(diff.contains(operand));
    bool carries = llvm::is_contained(operandIsDiff, true);
    if (auto extract = dyn_cast<tensor::ExtractOp>(nested)) {
      Value source = extract.getTensor();
      if (!isDefinedInside(source, op) && origins.isDifferentiable(source)) {
        // The scatter-add of the gradient needs the gathered indices.
        carries = true;
        llvm::append_range(worklist, extract.getIndices());
      }
    }
    if (carries)
      for (Value result : nested->getResults())
        diff.insert(result);
    getOperandsReadByScalarBackward(nested, operandIsDiff, options, worklist);
  });

  llvm::DenseSet<Value> visited;
  llvm::SetVector<Value> outer;
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    if (!visited.insert(value).second)
      continue;
    if (!isDefinedInside(value, op)) {
      outer.insert(value);
    } else if (auto arg = dyn_cast<BlockArgument>(value)) {
      if (OpOperand *operand = linalgOp.getMatchingOpOperand(arg))
        outer.insert(operand->get());
    } else {
      llvm::append_range(worklist, value.getDefiningOp()->getOperands());
    }
  }
  return SmallVector<Value, 4>(outer.begin(), outer.end());
}

static FailureOr<OpCost> estimateLinalgCost(linalg::LinalgOp linalgOp,
                                            const ValueOrigins &origins,
                                            const CostOptions &options) {
  Operation *op = linalgOp.getOperation();
  uint64_t points = 1;
  for (int64_t range : linalgOp.getStaticLoopRanges()) {
    if (ShapedType::isDynamic(range) || range < 0)
      return op->emitOpError("has a dynamic loop range; the cost model needs "
                             "static shapes");
    points = satMul(points, range);
  }

  OpCost cost;
  uint64_t payloadFlops = getPayloadFlops(op, options);
  cost.forwardFlops = satMul(points, payloadFlops);
  cost.readByBackward =
      getValuesReadByPayloadBackward(linalgOp, origins, options);

  // Each differentiable input needs one more pass over the iteration domain:
  // dA[i,k] += dC[i,j] * B[k,j] for a contraction, dx = dy * f'(x) for a
  // pointwise op.
  for (OpOperand *input : linalgOp.getDpsInputOperands()) {
    Value value = input->get();
    cost.bytesRead =
        satAdd(cost.bytesRead, getTypeBytes(value.getType(), options));
    chargeGradient(cost, value, cost.forwardFlops, origins);
  }
  // An init the payload reads (an accumulator) gets the output gradient as
  // is: no FLOPs, but the bytes are read.
  for (OpOperand &init : linalgOp.getDpsInitsMutable())
    if (linalgOp.payloadUsesValueFromOperand(&init))
      cost.bytesRead =
          satAdd(cost.bytesRead, getTypeBytes(init.get().getType(), options));
  for (Value result : op->getResults())
    cost.bytesWritten =
        satAdd(cost.bytesWritten, getTypeBytes(result.getType(), options));

  // Gathers (embedding lookups) read a captured tensor with tensor.extract:
  // one element per iteration point, and the gradient is a scatter-add of
  // one FLOP per point.
  op->walk([&](tensor::ExtractOp extract) {
    Value source = extract.getTensor();
    if (isDefinedInside(source, op))
      return;
    uint64_t elementBytes = getTypeBytes(extract.getType(), options);
    cost.bytesRead = satAdd(cost.bytesRead,
                            std::min(satMul(points, elementBytes),
                                     getTypeBytes(source.getType(), options)));
    chargeGradient(cost, source, points, origins);
  });
  return cost;
}

FailureOr<OpCost> mlir::pipe::estimateOpCost(Operation *op,
                                             const ValueOrigins &origins,
                                             const CostOptions &options) {
  if (failed(checkStaticShapes(op)))
    return failure();
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
    return estimateLinalgCost(linalgOp, origins, options);

  OpCost cost;
  auto elementsOf = [](Type type) -> uint64_t {
    if (auto tensor = dyn_cast<RankedTensorType>(type))
      return tensor.getNumElements();
    return 1;
  };
  if (auto softmax = dyn_cast<linalg::SoftmaxOp>(op)) {
    // max, subtract, exp, sum, divide per element.
    uint64_t elements = elementsOf(softmax.getInput().getType());
    cost.forwardFlops = satMul(elements, 4 + options.transcendentalFlops);
    cost.bytesRead = getTypeBytes(softmax.getInput().getType(), options);
    cost.bytesWritten = getTypeBytes(softmax.getType(0), options);
    cost.readByBackward.push_back(softmax.getInput());
    chargeGradient(cost, softmax.getInput(), cost.forwardFlops, origins);
    return cost;
  }

  // Elementwise arith/math directly on tensors.
  if (op->getNumResults() == 1 &&
      isa<RankedTensorType>(op->getResult(0).getType())) {
    uint64_t scalarFlops = getScalarOpFlops(op, options);
    if (scalarFlops != 0) {
      cost.forwardFlops =
          satMul(elementsOf(op->getResult(0).getType()), scalarFlops);
      SmallVector<bool, 3> operandIsDiff;
      for (Value operand : op->getOperands())
        operandIsDiff.push_back(origins.isDifferentiable(operand));
      SmallVector<Value> read;
      getOperandsReadByScalarBackward(op, operandIsDiff, options, read);
      for (Value value : read)
        if (!llvm::is_contained(cost.readByBackward, value))
          cost.readByBackward.push_back(value);
      for (Value operand : op->getOperands()) {
        cost.bytesRead =
            satAdd(cost.bytesRead, getTypeBytes(operand.getType(), options));
        chargeGradient(cost, operand, cost.forwardFlops, origins);
      }
      cost.bytesWritten = getTypeBytes(op->getResult(0).getType(), options);
    }
  }
  // Reshapes, slices and the like move no FLOPs and are views or copies the
  // back ends fuse; they are free here.
  return cost;
}

//===----------------------------------------------------------------------===//
// Block costs
//===----------------------------------------------------------------------===//

/// Looks through reshapes and casts, which are views of their source once
/// bufferized, so that a saved tensor is counted once.
static Value getStorageRoot(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tensor::ReshapeOp,
            tensor::CastOp, tensor::BitcastOp>(def))
      value = def->getOperand(0);
    else
      break;
  }
  return value;
}

FailureOr<BlockCost>
mlir::pipe::estimateRegionCost(Region &body, unsigned numParams,
                               const CostOptions &options,
                               ArrayRef<bool> inputNeedsGrad) {
  BlockCost total;
  if (body.empty())
    return total;
  ValueOrigins origins(body, numParams, inputNeedsGrad);
  Block &entry = body.front();

  llvm::SmallSetVector<Value, 16> saved;
  bool failedOp = false;
  // Ops inside loops (scf.for, ...) run once per iteration: each loop's
  // multiplier is its static trip count times that of its enclosing loops.
  // A loop without a static trip count cannot be costed.
  DenseMap<Operation *, uint64_t> loopMultiplier;
  auto multiplierOf = [&](Operation *op) -> uint64_t {
    Operation *parent = op->getParentOp();
    if (!parent || parent == body.getParentOp())
      return 1;
    auto it = loopMultiplier.find(parent);
    return it == loopMultiplier.end() ? 1 : it->second;
  };
  body.walk<WalkOrder::PreOrder>([&](Operation *op) {
    uint64_t times = multiplierOf(op);
    if (auto loop = dyn_cast<LoopLikeOpInterface>(op)) {
      std::optional<APInt> trips = loop.getStaticTripCount();
      if (!trips) {
        op->emitOpError("has no static trip count; the cost model needs "
                        "loops with constant bounds");
        failedOp = true;
        return WalkResult::interrupt();
      }
      loopMultiplier[op] = satMul(times, trips->getLimitedValue());
    } else if (op->getNumRegions() != 0) {
      loopMultiplier[op] = times;
    }
    FailureOr<OpCost> cost = estimateOpCost(op, origins, options);
    if (failed(cost)) {
      failedOp = true;
      return WalkResult::interrupt();
    }
    total.forwardFlops =
        satAdd(total.forwardFlops, satMul(times, cost->forwardFlops));
    total.backwardInputFlops = satAdd(total.backwardInputFlops,
                                      satMul(times, cost->backwardInputFlops));
    total.backwardWeightFlops = satAdd(
        total.backwardWeightFlops, satMul(times, cost->backwardWeightFlops));
    total.bytesRead = satAdd(total.bytesRead, satMul(times, cost->bytesRead));
    total.bytesWritten =
        satAdd(total.bytesWritten, satMul(times, cost->bytesWritten));

    // Values that depend on the block's inputs must be kept; values that
    // depend on parameters only are re-derived from the resident weights,
    // and constants are free.
    for (Value value : cost->readByBackward) {
      ValueOrigin origin = origins.lookup(value);
      if (origin.fromInput || origin.fromData)
        saved.insert(getStorageRoot(value));
    }
    // Payloads and ops with their own cost rules are not entered.
    if (isa<linalg::LinalgOp, linalg::SoftmaxOp>(op))
      return WalkResult::skip();
    return WalkResult::advance();
  });
  if (failedOp)
    return failure();

  for (BlockArgument arg : entry.getArguments()) {
    uint64_t bytes = getTypeBytes(arg.getType(), options);
    if (arg.getArgNumber() < numParams)
      total.paramBytes = satAdd(total.paramBytes, bytes);
  }

  switch (options.recompute) {
  case RecomputePolicy::SaveAll:
    for (Value value : saved)
      total.savedBytes =
          satAdd(total.savedBytes, getTypeBytes(value.getType(), options));
    break;
  case RecomputePolicy::Recompute:
    for (BlockArgument arg : entry.getArguments().drop_front(
             std::min<size_t>(numParams, entry.getNumArguments())))
      total.savedBytes =
          satAdd(total.savedBytes, getTypeBytes(arg.getType(), options));
    total.recomputeFlops = total.forwardFlops;
    total.backwardInputFlops =
        satAdd(total.backwardInputFlops, total.recomputeFlops);
    break;
  }

  Operation *terminator = body.back().empty() ? nullptr : &body.back().back();
  if (terminator && terminator->hasTrait<OpTrait::IsTerminator>()) {
    for (Value result : terminator->getOperands()) {
      uint64_t bytes = getTypeBytes(result.getType(), options);
      total.resultBytes.push_back(bytes);
      total.outputBytes = satAdd(total.outputBytes, bytes);
    }
  }
  return total;
}

FailureOr<BlockCost>
mlir::pipe::estimateBlockCost(BlockOp block, const CostOptions &options,
                              ArrayRef<bool> inputNeedsGrad) {
  return estimateRegionCost(block.getBody(), block.getNumParams(), options,
                            inputNeedsGrad);
}

//===----------------------------------------------------------------------===//
// Profiles
//===----------------------------------------------------------------------===//

static llvm::Error profileError(StringRef fileName, const llvm::Twine &what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 fileName + ": " + what);
}

BlockKey mlir::pipe::getBlockKey(BlockOp block) {
  BlockKey key;
  Region &body = block.getBody();
  {
    llvm::raw_string_ostream os(key.shapes);
    os << "(";
    llvm::interleaveComma(body.getArgumentTypes(), os);
    os << ") -> (";
    if (!body.empty() && !body.back().empty())
      llvm::interleaveComma(body.back().back().getOperandTypes(), os);
    os << ")";
  }
  // Generic form, local names, no locations: only the structure counts.
  std::string text;
  llvm::raw_string_ostream os(text);
  OpPrintingFlags flags;
  flags.printGenericOpForm().useLocalScope();
  for (Block &b : body)
    for (Operation &op : b)
      op.print(os, flags);
  os << key.shapes;
  key.hash = llvm::utohexstr(llvm::xxh3_64bits(text), /*LowerCase=*/true,
                             /*Width=*/16);
  return key;
}

/// The longest time a profile may give a part, in milliseconds (1e6 s, the
/// device models' bound on times): beyond it a figure is a typo or garbage,
/// and would saturate the nanosecond counts of #pipe.cost.
static constexpr double kMaxPartMs = 1e9;

/// Whether `ms` is a time a profile may give.
static bool isPartTime(std::optional<double> ms) {
  return ms && std::isfinite(*ms) && *ms >= 0 && *ms <= kMaxPartMs;
}

static constexpr const char *kPartTimeRule =
    "' must be a number of milliseconds in [0, 1e9]";

/// A pipe-profile table (docs/profiler.md): `blocks` is an array of entries
/// keyed by hash and shapes.
static llvm::Error parseProfileTable(const llvm::json::Object &root,
                                     StringRef fileName, Profile &profile) {
  const llvm::json::Array *blocks = root.getArray("blocks");
  if (!blocks)
    return profileError(fileName, "field 'blocks' must be an array of "
                                  "block entries (format pipe-profile-1)");
  profile.isTable = true;
  llvm::StringMap<size_t> entryOfKey;
  for (auto [index, value] : llvm::enumerate(*blocks)) {
    std::string where = "blocks[" + std::to_string(index) + "]";
    const llvm::json::Object *entry = value.getAsObject();
    if (!entry)
      return profileError(fileName, "field '" + where + "' must be an object");
    std::optional<StringRef> hash = entry->getString("hash");
    if (!hash)
      return profileError(fileName,
                          "missing or non-string field '" + where + ".hash'");
    std::optional<StringRef> shapes = entry->getString("shapes");
    if (!shapes)
      return profileError(fileName,
                          "missing or non-string field '" + where + ".shapes'");
    MeasuredCosts times;
    // The fused times are required; the split parts and the update are
    // optional (tables written before they were read), and 0 means the part
    // did not run.
    using Field = std::tuple<StringRef, std::optional<double> *, bool>;
    for (auto [field, slot, required] :
         {Field{"forward_ms", &times.forwardMs, true},
          Field{"backward_ms", &times.backwardMs, true},
          Field{"backward_input_ms", &times.backwardInputMs, false},
          Field{"backward_weight_ms", &times.backwardWeightMs, false},
          Field{"update_ms", &times.updateMs, false}}) {
      const llvm::json::Value *number = entry->get(field);
      if (!number) {
        if (required)
          return profileError(fileName,
                              "missing field '" + where + "." + field + "'");
        continue;
      }
      std::optional<double> ms = number->getAsNumber();
      if (!isPartTime(ms))
        return profileError(fileName,
                            "field '" + where + "." + field + kPartTimeRule);
      if (required || *ms > 0)
        *slot = *ms;
    }
    // Working memory: optional (tables written before it was measured).
    for (auto [field, slot] :
         {std::pair<StringRef, std::optional<uint64_t> *>{
              "forward_working_bytes", &times.forwardWorkingBytes},
          {"recompute_working_bytes", &times.recomputeWorkingBytes},
          {"backward_fused_working_bytes", &times.backwardWorkingBytes},
          {"backward_input_working_bytes", &times.backwardInputWorkingBytes},
          {"backward_weight_working_bytes",
           &times.backwardWeightWorkingBytes}}) {
      const llvm::json::Value *number = entry->get(field);
      if (!number)
        continue;
      std::optional<int64_t> bytes = number->getAsInteger();
      if (!bytes || *bytes < 0)
        return profileError(fileName, "field '" + where + "." + field +
                                          "' must be a non-negative integer "
                                          "number of bytes");
      if (*bytes > 0)
        *slot = uint64_t(*bytes);
    }
    std::string key = (*hash + " " + *shapes).str();
    auto [first, inserted] = entryOfKey.try_emplace(key, index);
    if (!inserted)
      return profileError(fileName,
                          "'" + where + "' has the hash and shapes of "
                          "'blocks[" + std::to_string(first->second) +
                          "]': one entry per block (which of the two "
                          "measurements holds?)");
    profile.table[key] = times;
  }
  return llvm::Error::success();
}

llvm::Expected<Profile> mlir::pipe::parseProfile(StringRef json,
                                                 StringRef fileName) {
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(json);
  if (!parsed)
    return profileError(fileName,
                        "invalid JSON: " + llvm::toString(parsed.takeError()));
  const llvm::json::Object *root = parsed->getAsObject();
  if (!root)
    return profileError(fileName, "expected a JSON object at the top level");
  if (const llvm::json::Value *format = root->get("format")) {
    if (format->getAsString() != StringRef("pipe-profile-1"))
      return profileError(fileName,
                          "field 'format' must be \"pipe-profile-1\"");
    Profile profile;
    if (llvm::Error err = parseProfileTable(*root, fileName, profile))
      return std::move(err);
    return profile;
  }
  const llvm::json::Value *blocksValue = root->get("blocks");
  if (!blocksValue)
    return profileError(fileName, "missing field 'blocks'");
  const llvm::json::Object *blocks = blocksValue->getAsObject();
  if (!blocks)
    return profileError(fileName, "field 'blocks' must be an object mapping "
                                  "block or instance names to times");

  Profile profile;
  for (const auto &[key, entryValue] : *blocks) {
    std::string where = ("blocks." + key.str());
    const llvm::json::Object *entry = entryValue.getAsObject();
    if (!entry)
      return profileError(fileName, "field '" + where +
                                        "' must be an object with "
                                        "'forward_ms' and/or 'backward_ms'");
    MeasuredCosts times;
    for (const auto &[field, value] : *entry) {
      std::optional<double> *slot = nullptr;
      if (field == "forward_ms")
        slot = &times.forwardMs;
      else if (field == "backward_ms")
        slot = &times.backwardMs;
      else
        return profileError(fileName, "unknown field '" + where + "." +
                                          field.str() +
                                          "' (expected 'forward_ms' or "
                                          "'backward_ms')");
      std::optional<double> number = value.getAsNumber();
      if (!isPartTime(number))
        return profileError(fileName, "field '" + where + "." + field.str() +
                                          kPartTimeRule);
      *slot = *number;
    }
    if (!times.forwardMs && !times.backwardMs)
      return profileError(fileName, "field '" + where +
                                        "' has neither 'forward_ms' nor "
                                        "'backward_ms'");
    profile.blocks[key.str()] = times;
  }
  return profile;
}

llvm::Expected<Profile> mlir::pipe::loadProfile(StringRef path) {
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      readInputFile(path, /*isText=*/true);
  if (!buffer)
    return profileError(path, "cannot read profile: " +
                                  llvm::toString(buffer.takeError()));
  return parseProfile((*buffer)->getBuffer(), path);
}

CostAttr mlir::pipe::toCostAttr(MLIRContext *context, const BlockCost &cost,
                                const MeasuredCosts &measured) {
  auto toNs = [](std::optional<double> ms) -> uint64_t {
    if (!ms)
      return 0;
    double ns = std::round(*ms * 1.0e6);
    if (ns >= 1.8e19)
      return UINT64_MAX;
    return static_cast<uint64_t>(ns);
  };
  return CostAttr::get(
      context, cost.forwardFlops, cost.backwardInputFlops,
      cost.backwardWeightFlops, cost.paramBytes, cost.savedBytes,
      cost.outputBytes, cost.bytesRead + cost.bytesWritten,
      /*backwardFlops=*/0, toNs(measured.forwardMs), toNs(measured.backwardMs),
      toNs(measured.backwardInputMs), toNs(measured.backwardWeightMs),
      toNs(measured.updateMs), measured.forwardWorkingBytes.value_or(0),
      measured.recomputeWorkingBytes.value_or(0),
      measured.backwardWorkingBytes.value_or(0),
      measured.backwardInputWorkingBytes.value_or(0),
      measured.backwardWeightWorkingBytes.value_or(0));
}
