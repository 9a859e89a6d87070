//===- BlockAdjoint.cpp - Reverse-mode differentiation of pipe blocks -----===//
//
// Builds the backward of a forward pipe.block: the forward body is
// normalized (aggregate ops decomposed, named linalg ops generalized),
// cloned into a scratch "full backward" block, and a reverse sweep over its
// tensor-level ops accumulates adjoints from the output cotangents. The
// scratch block is then split into an input-gradient block and a
// weight-gradient block by dead-code elimination, and under save-all the
// forward intermediates the backward reads become extra forward results and
// extra backward arguments.
//
//===----------------------------------------------------------------------===//

#include "pipe/Autodiff/Autodiff.h"

#include "GenericAdjoint.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"

#include <map>

using namespace mlir;
using namespace mlir::pipe;
using namespace mlir::pipe::autodiff;
using namespace mlir::pipe::autodiff::detail;

/// Temporary attribute naming the forward op a value comes from: the
/// position of the op in the normalized forward body.
static constexpr llvm::StringLiteral kForwardTag = "pipe.autodiff.fwd";

std::optional<RecomputePolicy>
mlir::pipe::autodiff::parseRecomputePolicy(StringRef text) {
  if (text == "save-all")
    return RecomputePolicy::SaveAll;
  if (text == "save-inputs")
    return RecomputePolicy::SaveInputs;
  if (text == "recompute")
    return RecomputePolicy::Recompute;
  return std::nullopt;
}

StringRef mlir::pipe::autodiff::stringifyRecomputePolicy(RecomputePolicy p) {
  switch (p) {
  case RecomputePolicy::SaveAll:
    return "save-all";
  case RecomputePolicy::SaveInputs:
    return "save-inputs";
  case RecomputePolicy::Recompute:
    return "recompute";
  }
  return "save-all";
}

unsigned mlir::pipe::autodiff::getNumSavedResults(BlockOp block) {
  if (auto attr = block->getAttrOfType<IntegerAttr>(kSavedResultsAttr))
    return attr.getInt();
  return 0;
}

SmallVector<unsigned>
mlir::pipe::autodiff::getDifferentiableInputs(BlockOp block) {
  SmallVector<unsigned> positions;
  for (auto [i, type] : llvm::enumerate(block.getInputTypes()))
    if (isFloatTensor(type))
      positions.push_back(i);
  return positions;
}

SmallVector<unsigned>
mlir::pipe::autodiff::getDifferentiableParams(BlockOp block) {
  ArrayRef<int64_t> frozen;
  if (auto attr = block->getAttrOfType<DenseI64ArrayAttr>(kFrozenParamsAttr))
    frozen = attr.asArrayRef();
  SmallVector<unsigned> positions;
  for (auto [i, type] : llvm::enumerate(block.getParamTypes()))
    if (isFloatTensor(type) && !llvm::is_contained(frozen, int64_t(i)))
      positions.push_back(i);
  return positions;
}

SmallVector<unsigned>
mlir::pipe::autodiff::getDifferentiableResults(BlockOp block) {
  SmallVector<unsigned> positions;
  ArrayRef<Type> results = block.getResultTypes();
  unsigned numSaved =
      std::min<unsigned>(getNumSavedResults(block), results.size());
  for (unsigned i = 0, e = results.size() - numSaved; i < e; ++i)
    if (isFloatTensor(results[i]))
      positions.push_back(i);
  return positions;
}

uint64_t mlir::pipe::autodiff::getTensorBytes(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return 0;
  Type elt = tensor.getElementType();
  uint64_t bits = elt.isIntOrFloat() ? elt.getIntOrFloatBitWidth() : 64;
  return tensor.getNumElements() * ((bits + 7) / 8);
}

uint64_t mlir::pipe::autodiff::countFlops(Operation *root) {
  uint64_t total = 0;
  root->walk([&](Operation *op) {
    if (op->getNumRegions() != 0 || op->getNumResults() != 1 ||
        isa<arith::ConstantOp>(op))
      return;
    StringRef ns = op->getName().getDialectNamespace();
    if ((ns != "arith" && ns != "math") ||
        !isa<FloatType>(op->getResult(0).getType()))
      return;
    uint64_t weight = 1;
    for (Operation *p = op->getParentOp(); p && p != root;
         p = p->getParentOp()) {
      if (auto generic = dyn_cast<linalg::GenericOp>(p)) {
        for (int64_t range : generic.getStaticLoopRanges())
          weight *= range > 0 ? range : 1;
      } else if (auto loop = dyn_cast<scf::ForOp>(p)) {
        std::optional<int64_t> lb = getConstantIntValue(loop.getLowerBound());
        std::optional<int64_t> ub = getConstantIntValue(loop.getUpperBound());
        std::optional<int64_t> step = getConstantIntValue(loop.getStep());
        if (lb && ub && step && *step > 0 && *ub > *lb)
          weight *= (*ub - *lb + *step - 1) / *step;
      }
    }
    total += weight;
  });
  return total;
}

namespace {

void eraseDeadOps(Block &block) {
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block))) {
    for (Region &region : op.getRegions())
      for (Block &inner : region)
        eraseDeadOps(inner);
    if (isOpTriviallyDead(&op))
      op.erase();
  }
}

/// Decomposes aggregate ops (linalg.softmax) and generalizes named linalg ops
/// so that only linalg.generic carries structured computation, and writes
/// guarded sums (embedding bags) as sums. linalg.fill is kept: it never
/// carries a gradient unless its value is active.
void normalizeBody(Block &body) {
  IRRewriter rewriter(body.getParentOp()->getContext());
  bool changed = true;
  while (changed) {
    changed = false;
    for (Operation &op : llvm::make_early_inc_range(body)) {
      if (auto aggregate = dyn_cast<linalg::AggregatedOpInterface>(op)) {
        rewriter.setInsertionPoint(&op);
        FailureOr<SmallVector<Value>> values =
            aggregate.decomposeOperation(rewriter);
        if (succeeded(values)) {
          rewriter.replaceOp(&op, *values);
          changed = true;
        }
      }
    }
  }
  for (Operation &op : llvm::make_early_inc_range(body)) {
    auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
    if (!linalgOp || isa<linalg::GenericOp, linalg::FillOp>(op))
      continue;
    rewriter.setInsertionPoint(&op);
    (void)linalg::generalizeNamedOp(rewriter, linalgOp);
  }
  for (auto generic : body.getOps<linalg::GenericOp>())
    rewriteGuardedSums(generic);
}

/// Operands of `op` plus values its regions capture from above.
SmallVector<Value> getAllInputs(Operation *op) {
  SmallVector<Value> values(op->getOperands());
  if (op->getNumRegions() != 0) {
    llvm::SetVector<Value> captured;
    getUsedValuesDefinedAbove(op->getRegions(), captured);
    values.append(captured.begin(), captured.end());
  }
  return values;
}

bool isFloatScalarOrTensor(Type type) {
  return isa<FloatType>(type) || isFloatTensor(type);
}

LogicalResult checkTensorOp(Operation *op, function_ref<bool(Value)> isActive) {
  if (auto generic = dyn_cast<linalg::GenericOp>(op))
    return checkGenericDifferentiable(generic, isActive);
  if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp,
          tensor::ExtractSliceOp, tensor::InsertSliceOp, tensor::ConcatOp,
          tensor::CastOp>(op))
    return success();
  if (auto pad = dyn_cast<tensor::PadOp>(op)) {
    if (!pad.getLow().empty())
      return op->emitError("cannot differentiate 'tensor.pad' with dynamic "
                           "low padding");
    Value padding = pad.getConstantPaddingValue();
    if (!padding || isActive(padding))
      return op->emitError("cannot differentiate 'tensor.pad' unless its "
                           "padding value is a constant");
    return success();
  }
  return op->emitError("no derivative rule for '") << op->getName() << "'";
}

/// Reverse-mode rule of one tensor-level op.
void propagateTensorOp(OpBuilder &b, Operation *op, ArrayRef<Value> cots,
                       function_ref<bool(Value)> isActive,
                       function_ref<void(Value, Value)> accumulate) {
  Location loc = op->getLoc();
  auto ones = [&](int64_t rank) {
    return SmallVector<OpFoldResult>(rank, b.getIndexAttr(1));
  };
  llvm::TypeSwitch<Operation *>(op)
      .Case([&](linalg::GenericOp g) {
        buildGenericAdjoint(b, g, cots, isActive, accumulate);
      })
      .Case([&](tensor::ExpandShapeOp e) {
        accumulate(e.getSrc(), tensor::CollapseShapeOp::create(
                                   b, loc, e.getSrcType(), cots[0],
                                   e.getReassociationIndices()));
      })
      .Case([&](tensor::CollapseShapeOp c) {
        accumulate(c.getSrc(), tensor::ExpandShapeOp::create(
                                   b, loc, c.getSrcType(), cots[0],
                                   c.getReassociationIndices()));
      })
      .Case([&](tensor::ExtractSliceOp s) {
        Value zeros = createZeros(b, loc, s.getSourceType());
        accumulate(s.getSource(),
                   tensor::InsertSliceOp::create(
                       b, loc, cots[0], zeros, s.getMixedOffsets(),
                       s.getMixedSizes(), s.getMixedStrides()));
      })
      .Case([&](tensor::InsertSliceOp s) {
        auto sourceType = cast<RankedTensorType>(s.getSource().getType());
        if (isActive(s.getSource()))
          accumulate(s.getSource(),
                     tensor::ExtractSliceOp::create(
                         b, loc, sourceType, cots[0], s.getMixedOffsets(),
                         s.getMixedSizes(), s.getMixedStrides()));
        if (isActive(s.getDest()))
          accumulate(s.getDest(), tensor::InsertSliceOp::create(
                                      b, loc, createZeros(b, loc, sourceType),
                                      cots[0], s.getMixedOffsets(),
                                      s.getMixedSizes(), s.getMixedStrides()));
      })
      .Case([&](tensor::ConcatOp c) {
        int64_t dim = c.getDim();
        int64_t offset = 0;
        for (Value input : c.getInputs()) {
          auto type = cast<RankedTensorType>(input.getType());
          if (isActive(input)) {
            SmallVector<OpFoldResult> offsets(type.getRank(),
                                              b.getIndexAttr(0));
            offsets[dim] = b.getIndexAttr(offset);
            SmallVector<OpFoldResult> sizes;
            for (int64_t size : type.getShape())
              sizes.push_back(b.getIndexAttr(size));
            accumulate(input, tensor::ExtractSliceOp::create(
                                  b, loc, type, cots[0], offsets, sizes,
                                  ones(type.getRank())));
          }
          offset += type.getDimSize(dim);
        }
      })
      .Case([&](tensor::CastOp c) {
        accumulate(
            c.getSource(),
            tensor::CastOp::create(b, loc, c.getSource().getType(), cots[0]));
      })
      .Case([&](tensor::PadOp p) {
        auto type = p.getSourceType();
        SmallVector<OpFoldResult> offsets, sizes;
        for (int64_t low : p.getStaticLow())
          offsets.push_back(b.getIndexAttr(low));
        for (int64_t size : type.getShape())
          sizes.push_back(b.getIndexAttr(size));
        accumulate(p.getSource(), tensor::ExtractSliceOp::create(
                                      b, loc, type, cots[0], offsets, sizes,
                                      ones(type.getRank())));
      });
}

/// Replaces the terminator of `block` to return `values` and updates the
/// function type's results.
void setReturn(BlockOp block, ValueRange values) {
  Block &body = block.getBody().front();
  Operation *terminator = body.getTerminator();
  OpBuilder b(terminator);
  ReturnOp::create(b, terminator->getLoc(), values);
  terminator->erase();
  block.setFunctionTypeAttr(TypeAttr::get(
      FunctionType::get(block.getContext(), block.getArgumentTypes(),
                        llvm::to_vector(ValueRange(values).getTypes()))));
}

void stripTags(Operation *root) {
  root->walk([](Operation *op) { op->removeAttr(kForwardTag); });
}

using ForwardValueKey = std::pair<int64_t, unsigned>;

/// The tag of a top-level op of a forward-derived body, or -1.
int64_t getTag(Operation *op) {
  if (auto attr = op->getAttrOfType<IntegerAttr>(kForwardTag))
    return attr.getInt();
  return -1;
}

} // namespace

FailureOr<BackwardBlocks>
mlir::pipe::autodiff::differentiateBlock(BlockOp forward,
                                         RecomputePolicy policy) {
  MLIRContext *ctx = forward.getContext();
  auto module = forward->getParentOfType<ModuleOp>();
  if (!module)
    return forward.emitOpError("must be nested in a module to be "
                               "differentiated");
  if (!forward.getBody().hasOneBlock())
    return forward.emitOpError("expects a single-block body to be "
                               "differentiated");
  if (forward->hasAttr(kSavedResultsAttr) ||
      forward->hasAttr(kBackwardInputAttr) ||
      forward->hasAttr(kBackwardWeightAttr))
    return forward.emitOpError("is already differentiated");
  unsigned numParams = forward.getNumParams();
  for (auto [i, type] : llvm::enumerate(forward.getArgumentTypes()))
    if (isa<FloatType>(type))
      return forward.emitOpError("cannot differentiate with respect to "
                                 "scalar argument #")
             << i << " of type " << type << "; pass a 0-d tensor instead";

  // Work on a normalized, detached copy; the forward block is only changed
  // once everything succeeded.
  auto norm = cast<BlockOp>(forward->clone());
  Block &fwdBody = norm.getBody().front();
  normalizeBody(fwdBody);
  int64_t counter = 0;
  for (Operation &op : fwdBody.without_terminator())
    op.setAttr(kForwardTag,
               IntegerAttr::get(IntegerType::get(ctx, 64), counter++));

  SmallVector<unsigned> diffInputs = getDifferentiableInputs(norm);
  SmallVector<unsigned> diffParams = getDifferentiableParams(norm);
  SmallVector<unsigned> diffResults = getDifferentiableResults(norm);
  ArrayRef<Type> resultTypes = norm.getResultTypes();

  // The scratch backward: params, inputs, output cotangents.
  SmallVector<Type> argTypes(norm.getArgumentTypes());
  for (unsigned r : diffResults)
    argTypes.push_back(resultTypes[r]);
  OpBuilder b(ctx);
  Location loc = forward.getLoc();
  auto full = BlockOp::create(b, loc, (forward.getSymName() + "_bwd").str(),
                              FunctionType::get(ctx, argTypes, {}), numParams,
                              CostAttr(), ArrayAttr(), ArrayAttr());
  Block *entry = new Block();
  full.getBody().push_back(entry);
  for (Type type : argTypes)
    entry->addArgument(type, loc);
  auto cleanup = [&]() {
    full->erase();
    norm->erase();
  };

  b.setInsertionPointToEnd(entry);
  IRMapping mapping;
  for (unsigned i = 0, e = fwdBody.getNumArguments(); i < e; ++i)
    mapping.map(fwdBody.getArgument(i), entry->getArgument(i));
  SmallVector<Operation *> fwdOps;
  for (Operation &op : fwdBody.without_terminator())
    fwdOps.push_back(b.clone(op, mapping));

  // Activity: values computed from differentiable params or inputs.
  DenseSet<Value> active;
  for (unsigned p : diffParams)
    active.insert(entry->getArgument(p));
  for (unsigned i : diffInputs)
    active.insert(entry->getArgument(numParams + i));
  auto isActive = [&](Value v) { return active.contains(v); };
  for (Operation *op : fwdOps) {
    if (!llvm::any_of(getAllInputs(op), isActive))
      continue;
    if (failed(checkTensorOp(op, isActive))) {
      cleanup();
      return failure();
    }
    for (Value result : op->getResults())
      if (isFloatScalarOrTensor(result.getType()))
        active.insert(result);
  }
  Operation *fwdReturn = fwdBody.getTerminator();
  for (Value v : fwdReturn->getOperands()) {
    Value mapped = mapping.lookupOrDefault(v);
    if (active.contains(mapped) && !isa<RankedTensorType>(mapped.getType())) {
      fwdReturn->emitError("cannot differentiate a block returning a "
                           "non-tensor value");
      cleanup();
      return failure();
    }
  }

  // Reverse sweep.
  DenseMap<Value, Value> adjoints;
  auto accumulate = [&](Value v, Value g) {
    if (!g || !active.contains(v))
      return;
    auto it = adjoints.find(v);
    if (it == adjoints.end())
      adjoints[v] = g;
    else
      it->second = createTensorAdd(b, v.getLoc(), it->second, g);
  };
  unsigned cotangentBase = fwdBody.getNumArguments();
  for (auto [j, r] : llvm::enumerate(diffResults))
    accumulate(mapping.lookupOrDefault(fwdReturn->getOperand(r)),
               entry->getArgument(cotangentBase + j));
  for (Operation *op : llvm::reverse(fwdOps)) {
    SmallVector<Value> cots;
    bool any = false;
    for (Value result : op->getResults()) {
      cots.push_back(adjoints.lookup(result));
      any |= static_cast<bool>(cots.back());
    }
    if (!any)
      continue;
    propagateTensorOp(b, op, cots, isActive, accumulate);
  }

  SmallVector<Value> inputGrads, paramGrads;
  auto gradOf = [&](Value arg) -> Value {
    if (Value g = adjoints.lookup(arg))
      return g;
    return createZeros(b, loc, cast<RankedTensorType>(arg.getType()));
  };
  for (unsigned i : diffInputs)
    inputGrads.push_back(gradOf(entry->getArgument(numParams + i)));
  for (unsigned p : diffParams)
    paramGrads.push_back(gradOf(entry->getArgument(p)));
  SmallVector<Value> allGrads(inputGrads);
  allGrads.append(paramGrads);
  ReturnOp::create(b, loc, allGrads);

  // Split by dead-code elimination.
  auto makePart = [&](bool inputPart) -> BlockOp {
    auto part = cast<BlockOp>(full->clone());
    Block &body = part.getBody().front();
    auto operands = body.getTerminator()->getOperands();
    SmallVector<Value> returned =
        inputPart ? SmallVector<Value>(operands.take_front(inputGrads.size()))
                  : SmallVector<Value>(operands.drop_front(inputGrads.size()));
    setReturn(part, returned);
    eraseDeadOps(body);
    return part;
  };
  BlockOp inputPart = diffInputs.empty() ? BlockOp() : makePart(true);
  BlockOp weightPart = diffParams.empty() ? BlockOp() : makePart(false);
  SmallVector<BlockOp> parts;
  if (inputPart)
    parts.push_back(inputPart);
  if (weightPart)
    parts.push_back(weightPart);
  // The split parts each redo the cotangent chain; a full backward runs this
  // one sweep instead (the split ones serve zero-bubble schedules).
  BlockOp fusedPart;
  if (inputPart && weightPart) {
    fusedPart = cast<BlockOp>(full->clone());
    Block &body = fusedPart.getBody().front();
    setReturn(fusedPart,
              SmallVector<Value>(body.getTerminator()->getOperands()));
    eraseDeadOps(body);
    parts.push_back(fusedPart);
  }

  // Saved activations: forward results the backward ops read, except those
  // computable without the block's inputs (constants, fills, and values of
  // the parameters alone such as a transposed weight). Those are recomputed
  // by the backward from the parameters it is given: this saves memory (as
  // the cost model assumes) and makes an asynchronous backward that is given
  // newer weights (pipedream-async weights=stale) really use them.
  std::map<ForwardValueKey, Type> saved;
  if (policy == RecomputePolicy::SaveAll) {
    auto inputArgs = fwdBody.getArguments().drop_front(
        std::min<size_t>(numParams, fwdBody.getNumArguments()));
    DenseSet<Value> argDependent(inputArgs.begin(), inputArgs.end());
    for (Operation &op : fwdBody.without_terminator())
      if (llvm::any_of(getAllInputs(&op),
                       [&](Value v) { return argDependent.contains(v); }))
        for (Value result : op.getResults())
          argDependent.insert(result);
    std::map<ForwardValueKey, bool> isArgDependent;
    for (Operation &op : fwdBody.without_terminator())
      for (OpResult result : op.getResults())
        isArgDependent[{getTag(&op), result.getResultNumber()}] =
            argDependent.contains(result);

    for (BlockOp part : parts) {
      Block &body = part.getBody().front();
      for (Operation &op : body) {
        int64_t tag = getTag(&op);
        if (tag < 0)
          continue;
        for (OpResult result : op.getResults()) {
          if (!isArgDependent[{tag, result.getResultNumber()}])
            continue;
          bool readByBackward =
              llvm::any_of(result.getUsers(), [&](Operation *user) {
                Operation *top = body.findAncestorOpInBlock(*user);
                return top && getTag(top) < 0;
              });
          if (readByBackward)
            saved[{tag, result.getResultNumber()}] = result.getType();
        }
      }
    }
    for (BlockOp part : parts) {
      Block &body = part.getBody().front();
      DenseMap<int64_t, Operation *> byTag;
      for (Operation &op : body)
        if (getTag(&op) >= 0)
          byTag[getTag(&op)] = &op;
      for (auto &[key, type] : saved) {
        BlockArgument arg = body.addArgument(type, loc);
        if (Operation *op = byTag.lookup(key.first))
          op->getResult(key.second).replaceAllUsesWith(arg);
      }
      part.setFunctionTypeAttr(TypeAttr::get(
          FunctionType::get(ctx, llvm::to_vector(body.getArgumentTypes()),
                            part.getResultTypes())));
      eraseDeadOps(body);
    }
  }

  // Commit: the forward takes the normalized body (plus saved results).
  forward.getBody().takeBody(norm.getBody());
  Block &newBody = forward.getBody().front();
  if (!saved.empty()) {
    DenseMap<int64_t, Operation *> byTag;
    for (Operation &op : newBody)
      if (getTag(&op) >= 0)
        byTag[getTag(&op)] = &op;
    SmallVector<Value> returned(newBody.getTerminator()->getOperands());
    for (auto &entryKV : saved)
      returned.push_back(
          byTag.lookup(entryKV.first.first)->getResult(entryKV.first.second));
    setReturn(forward, returned);
    if (ArrayAttr resAttrs = forward.getResAttrsAttr()) {
      SmallVector<Attribute> attrs(resAttrs.begin(), resAttrs.end());
      attrs.resize(returned.size(), DictionaryAttr::get(ctx));
      forward.setResAttrsAttr(ArrayAttr::get(ctx, attrs));
    }
  }
  stripTags(forward);
  forward->setAttr(kSavedResultsAttr,
                   IntegerAttr::get(IntegerType::get(ctx, 64), saved.size()));
  forward->setAttr(kRecomputeAttr,
                   StringAttr::get(ctx, stringifyRecomputePolicy(policy)));

  BackwardBlocks result;
  result.numSaved = saved.size();
  SymbolTable symbols(module);
  Block::iterator insertPt = std::next(Block::iterator(forward));
  auto install = [&](BlockOp part, StringRef suffix, StringRef attrName) {
    stripTags(part);
    part.setSymName((forward.getSymName() + suffix).str());
    symbols.insert(part, insertPt);
    insertPt = std::next(Block::iterator(part));
    forward->setAttr(attrName, FlatSymbolRefAttr::get(part.getSymNameAttr()));
    uint64_t flops = countFlops(part);
    part->setAttr(kFlopsAttr,
                  IntegerAttr::get(IntegerType::get(ctx, 64), flops));
    return flops;
  };
  if (inputPart) {
    result.input = inputPart;
    result.inputFlops = install(inputPart, "_bwd_input", kBackwardInputAttr);
  }
  if (weightPart) {
    result.weight = weightPart;
    result.weightFlops =
        install(weightPart, "_bwd_weight", kBackwardWeightAttr);
  }
  uint64_t fusedFlops = 0;
  if (fusedPart) {
    result.fused = fusedPart;
    fusedFlops = install(fusedPart, "_bwd_fused", kBackwardAttr);
  }

  // Saved bytes: the block inputs the backward reads (unless recomputed by
  // the schedule) plus the saved intermediates.
  uint64_t savedBytes = 0;
  if (policy != RecomputePolicy::Recompute) {
    for (unsigned i = 0, e = forward.getInputTypes().size(); i < e; ++i) {
      bool used = llvm::any_of(parts, [&](BlockOp part) {
        return !part.getBody().front().getArgument(numParams + i).use_empty();
      });
      if (used)
        savedBytes += getTensorBytes(forward.getInputTypes()[i]);
    }
  }
  for (auto &entryKV : saved)
    savedBytes += getTensorBytes(entryKV.second);
  result.savedBytes = savedBytes;
  if (CostAttr cost = forward.getCostAttr()) {
    forward.setCostAttr(CostAttr::get(
        ctx, cost.getForwardFlops(), result.inputFlops, result.weightFlops,
        cost.getParamBytes(), savedBytes, cost.getOutputBytes(),
        cost.getBytesAccessed(), fusedFlops, cost.getForwardTimeNs(),
        cost.getBackwardTimeNs(), cost.getBackwardInputTimeNs(),
        cost.getBackwardWeightTimeNs(), cost.getUpdateTimeNs(),
        cost.getForwardWorkingBytes(), cost.getRecomputeWorkingBytes(),
        cost.getBackwardWorkingBytes(), cost.getBackwardInputWorkingBytes(),
        cost.getBackwardWeightWorkingBytes()));
  } else {
    forward->setAttr(kSavedBytesAttr,
                     IntegerAttr::get(IntegerType::get(ctx, 64), savedBytes));
  }
  full->erase();
  norm->erase();
  return result;
}
