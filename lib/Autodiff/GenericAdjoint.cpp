//===- GenericAdjoint.cpp - Vector-Jacobian products of linalg.generic ----===//
//
// The general derivative of a `linalg.generic` on tensors. For an operand x_i
// read through map M_i, its gradient is a new linalg.generic over the same
// iteration domain that reads the original operands, the final results (for
// max/min reductions) and the result cotangents (through the results' maps),
// recomputes the scalar body, runs reverse mode over the body's scalar ops,
// and accumulates the adjoint of x_i's block argument into a zero tensor of
// x_i's type through M_i: loop dimensions absent from M_i become reductions.
// Tensors read by `tensor.extract` inside the body (gathers such as embedding
// lookups) get their gradient from an scf.for nest over the iteration domain
// that scatter-adds the adjoints of the extracted scalars.
//
//===----------------------------------------------------------------------===//

#include "GenericAdjoint.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::pipe::autodiff;
using namespace mlir::pipe::autodiff::detail;

namespace {

/// How a float result of a generic combines its body value with the init.
enum class Combiner { None, Elementwise, Sum, Max, Min };

struct OutputInfo {
  Combiner kind = Combiner::None;
  /// Elementwise: the yielded value. Reductions: the value combined with the
  /// accumulator (it does not depend on any accumulator).
  Value contribution;
};

/// Ops whose derivative is zero almost everywhere; their results are never
/// active, which is exact away from their discontinuities.
bool isZeroDerivative(Operation *op) {
  return isa<arith::CmpFOp, arith::FPToSIOp, arith::FPToUIOp, math::FloorOp,
             math::CeilOp, math::RoundOp, math::RoundEvenOp, math::TruncOp,
             math::IsNaNOp, math::IsInfOp, math::IsFiniteOp>(op);
}

/// Scalar ops with a reverse-mode rule in ScalarAdjoint::propagate.
/// tensor.extract is a leaf: its adjoint is consumed by the scatter.
bool hasScalarRule(Operation *op) {
  return isa<arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::DivFOp,
             arith::NegFOp, arith::MaximumFOp, arith::MaxNumFOp,
             arith::MinimumFOp, arith::MinNumFOp, arith::SelectOp,
             arith::ExtFOp, arith::TruncFOp, math::ExpOp, math::LogOp,
             math::Log1pOp, math::Log2Op, math::TanhOp, math::ErfOp,
             math::SqrtOp, math::RsqrtOp, math::PowFOp, math::FPowIOp,
             math::AbsFOp, math::SinOp, math::CosOp, tensor::ExtractOp>(op);
}

bool isFloatValue(Value v) {
  Type t = v.getType();
  return isa<FloatType>(t) || isFloatTensor(t);
}

/// True when `v` is defined outside the body of `op`.
bool isDefinedOutside(linalg::GenericOp op, Value v) {
  return !op.getRegion().isAncestor(v.getParentRegion());
}

/// What searchUpstream does with a value it reaches.
enum class Upstream { Found, Skip, Descend };

/// Whether `classify` finds a value among `v` and the values it is computed
/// from: each value is classified once, and only Descend goes on to the
/// operands of its defining op.
bool searchUpstream(Value v, llvm::function_ref<Upstream(Value)> classify) {
  SmallVector<Value> worklist{v};
  DenseSet<Value> seen;
  while (!worklist.empty()) {
    Value cur = worklist.pop_back_val();
    if (!seen.insert(cur).second)
      continue;
    switch (classify(cur)) {
    case Upstream::Found:
      return true;
    case Upstream::Skip:
      continue;
    case Upstream::Descend:
      llvm::append_range(worklist, cur.getDefiningOp()->getOperands());
    }
  }
  return false;
}

/// True when `v` depends, inside the body, on one of `accumulators`.
bool dependsOnAny(Block &body, Value v, ArrayRef<BlockArgument> accumulators) {
  return searchUpstream(v, [&](Value cur) {
    if (auto arg = dyn_cast<BlockArgument>(cur))
      return llvm::is_contained(accumulators, arg) ? Upstream::Found
                                                   : Upstream::Skip;
    Operation *def = cur.getDefiningOp();
    return def && def->getBlock() == &body ? Upstream::Descend : Upstream::Skip;
  });
}

/// True when `v`, computed in the body of `op`, can carry a derivative: it
/// depends on a float block argument (an input or an accumulator) or on a
/// float value captured from outside other than a constant, and not only
/// through ops whose derivative is zero. A count computed from linalg.index
/// (torch-mlir's adaptive average pooling yields its window sizes so) cannot.
bool mayCarryDerivative(linalg::GenericOp op, Value v) {
  return searchUpstream(v, [&](Value cur) {
    if (isDefinedOutside(op, cur))
      return isFloatValue(cur) && !cur.getDefiningOp<arith::ConstantOp>()
                 ? Upstream::Found
                 : Upstream::Skip;
    if (isa<BlockArgument>(cur))
      return isFloatValue(cur) ? Upstream::Found : Upstream::Skip;
    Operation *def = cur.getDefiningOp();
    // What an op with regions yields is not among its operands: assume it
    // may carry a derivative, and let the combiner check decide.
    if (def->getNumRegions() > 0)
      return Upstream::Found;
    return isZeroDerivative(def) ? Upstream::Skip : Upstream::Descend;
  });
}

/// Classifies every result of `op`; emits a diagnostic for a float
/// reduction result whose combiner has no rule.
FailureOr<SmallVector<OutputInfo>> classifyOutputs(linalg::GenericOp op,
                                                   bool emitErrors) {
  Block &body = *op.getBody();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  unsigned numInputs = op.getNumDpsInputs();
  bool reduction = op.getNumReductionLoops() > 0;
  SmallVector<BlockArgument> accumulators;
  for (unsigned k = 0, e = op.getNumDpsInits(); k < e; ++k)
    if (isa<FloatType>(body.getArgument(numInputs + k).getType()))
      accumulators.push_back(body.getArgument(numInputs + k));

  SmallVector<OutputInfo> infos;
  for (unsigned k = 0, e = op.getNumDpsInits(); k < e; ++k) {
    OutputInfo info;
    BlockArgument acc = body.getArgument(numInputs + k);
    Value yielded = yield.getOperand(k);
    if (!isa<FloatType>(acc.getType())) {
      infos.push_back(info);
      continue;
    }
    if (!reduction) {
      info.kind = Combiner::Elementwise;
      info.contribution = yielded;
      infos.push_back(info);
      continue;
    }
    // A reduction result that yields a value of no float data (the last
    // iteration's count, say) is a constant: it has no derivative to pass.
    if (!mayCarryDerivative(op, yielded)) {
      infos.push_back(info);
      continue;
    }
    Operation *combiner = yielded.getDefiningOp();
    Combiner kind = Combiner::None;
    Value other;
    if (combiner && combiner->getBlock() == &body &&
        combiner->getNumOperands() == 2) {
      if (isa<arith::AddFOp>(combiner))
        kind = Combiner::Sum;
      else if (isa<arith::MaximumFOp, arith::MaxNumFOp>(combiner))
        kind = Combiner::Max;
      else if (isa<arith::MinimumFOp, arith::MinNumFOp>(combiner))
        kind = Combiner::Min;
      if (combiner->getOperand(0) == acc)
        other = combiner->getOperand(1);
      else if (combiner->getOperand(1) == acc)
        other = combiner->getOperand(0);
    }
    if (kind == Combiner::None || !other) {
      if (emitErrors)
        op.emitError("no derivative rule for this reduction: float result #")
            << k
            << " must yield arith.addf, arith.maximumf/maxnumf or "
               "arith.minimumf/minnumf of its accumulator and a value";
      return failure();
    }
    if (dependsOnAny(body, other, accumulators)) {
      if (emitErrors)
        op.emitError("no derivative rule for this reduction: the value "
                     "combined into float result #")
            << k << " reads an accumulator";
      return failure();
    }
    info.kind = kind;
    info.contribution = other;
    infos.push_back(info);
  }
  return infos;
}

/// Reverse-mode accumulation over scalar ops.
class ScalarAdjoint {
public:
  ScalarAdjoint(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  DenseSet<Value> active;

  Value get(Value v) const { return adjoints.lookup(v); }

  void add(Value v, Value g) {
    if (!g || !active.contains(v))
      return;
    auto it = adjoints.find(v);
    if (it == adjoints.end())
      adjoints[v] = g;
    else
      it->second = arith::AddFOp::create(b, loc, it->second, g);
  }

  Value cst(Type type, double value) {
    return arith::ConstantOp::create(
        b, loc, cast<TypedAttr>(b.getFloatAttr(type, value)));
  }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value plus(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value neg(Value x) { return arith::NegFOp::create(b, loc, x); }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
  Value cmp(arith::CmpFPredicate pred, Value x, Value y) {
    return arith::CmpFOp::create(b, loc, pred, x, y);
  }

  /// Sends the adjoint of the max/min result to the operand it selected
  /// (the left one on ties).
  void pickBranch(Operation *op, Value g, arith::CmpFPredicate pred) {
    Value lhs = op->getOperand(0), rhs = op->getOperand(1);
    Value zero = cst(g.getType(), 0.0);
    Value takeLhs = cmp(pred, lhs, rhs);
    add(lhs, select(takeLhs, g, zero));
    add(rhs, select(takeLhs, zero, g));
  }

  /// Propagates the adjoint of `op`'s result to its operands.
  void propagate(Operation *op) {
    if (op->getNumResults() != 1)
      return;
    Value y = op->getResult(0);
    Value g = get(y);
    if (!g)
      return;
    Type t = y.getType();
    llvm::TypeSwitch<Operation *>(op)
        .Case([&](arith::AddFOp o) {
          add(o.getLhs(), g);
          add(o.getRhs(), g);
        })
        .Case([&](arith::SubFOp o) {
          add(o.getLhs(), g);
          if (active.contains(o.getRhs()))
            add(o.getRhs(), neg(g));
        })
        .Case([&](arith::MulFOp o) {
          if (active.contains(o.getLhs()))
            add(o.getLhs(), mul(g, o.getRhs()));
          if (active.contains(o.getRhs()))
            add(o.getRhs(), mul(g, o.getLhs()));
        })
        .Case([&](arith::DivFOp o) {
          if (active.contains(o.getLhs()))
            add(o.getLhs(), div(g, o.getRhs()));
          if (active.contains(o.getRhs()))
            add(o.getRhs(), neg(div(mul(g, y), o.getRhs())));
        })
        .Case([&](arith::NegFOp o) { add(o.getOperand(), neg(g)); })
        .Case<arith::MaximumFOp, arith::MaxNumFOp>(
            [&](Operation *o) { pickBranch(o, g, arith::CmpFPredicate::OGE); })
        .Case<arith::MinimumFOp, arith::MinNumFOp>(
            [&](Operation *o) { pickBranch(o, g, arith::CmpFPredicate::OLE); })
        .Case([&](arith::SelectOp o) {
          Value zero = cst(t, 0.0);
          if (active.contains(o.getTrueValue()))
            add(o.getTrueValue(), select(o.getCondition(), g, zero));
          if (active.contains(o.getFalseValue()))
            add(o.getFalseValue(), select(o.getCondition(), zero, g));
        })
        .Case([&](arith::ExtFOp o) {
          add(o.getIn(),
              arith::TruncFOp::create(b, loc, o.getIn().getType(), g));
        })
        .Case([&](arith::TruncFOp o) {
          add(o.getIn(), arith::ExtFOp::create(b, loc, o.getIn().getType(), g));
        })
        .Case([&](math::ExpOp o) { add(o.getOperand(), mul(g, y)); })
        .Case(
            [&](math::LogOp o) { add(o.getOperand(), div(g, o.getOperand())); })
        .Case([&](math::Log1pOp o) {
          add(o.getOperand(), div(g, plus(cst(t, 1.0), o.getOperand())));
        })
        .Case([&](math::Log2Op o) {
          add(o.getOperand(),
              div(g, mul(o.getOperand(), cst(t, std::log(2.0)))));
        })
        .Case([&](math::TanhOp o) {
          add(o.getOperand(), mul(g, sub(cst(t, 1.0), mul(y, y))));
        })
        .Case([&](math::ErfOp o) {
          Value x = o.getOperand();
          Value gauss = math::ExpOp::create(b, loc, neg(mul(x, x)));
          add(x, mul(g, mul(cst(t, 2.0 / std::sqrt(M_PI)), gauss)));
        })
        .Case([&](math::SqrtOp o) {
          add(o.getOperand(), div(mul(g, cst(t, 0.5)), y));
        })
        .Case([&](math::RsqrtOp o) {
          add(o.getOperand(), mul(g, mul(cst(t, -0.5), mul(y, mul(y, y)))));
        })
        .Case([&](math::PowFOp o) {
          Value base = o.getLhs(), exponent = o.getRhs();
          if (active.contains(base)) {
            Value lower =
                math::PowFOp::create(b, loc, base, sub(exponent, cst(t, 1.0)));
            add(base, mul(g, mul(exponent, lower)));
          }
          if (active.contains(exponent))
            add(exponent, mul(g, mul(y, math::LogOp::create(b, loc, base))));
        })
        .Case([&](math::FPowIOp o) {
          Value base = o.getLhs(), n = o.getRhs();
          Value one = arith::ConstantOp::create(
              b, loc, cast<TypedAttr>(b.getIntegerAttr(n.getType(), 1)));
          Value lower = math::FPowIOp::create(
              b, loc, base, arith::SubIOp::create(b, loc, n, one));
          Value nf = arith::SIToFPOp::create(b, loc, t, n);
          add(base, mul(g, mul(nf, lower)));
        })
        .Case([&](math::AbsFOp o) {
          Value x = o.getOperand();
          Value nonNegative = cmp(arith::CmpFPredicate::OGE, x, cst(t, 0.0));
          add(x, select(nonNegative, g, neg(g)));
        })
        .Case([&](math::SinOp o) {
          add(o.getOperand(),
              mul(g, math::CosOp::create(b, loc, o.getOperand())));
        })
        .Case([&](math::CosOp o) {
          add(o.getOperand(),
              neg(mul(g, math::SinOp::create(b, loc, o.getOperand()))));
        })
        .Default([](Operation *) {});
  }

private:
  OpBuilder &b;
  Location loc;
  DenseMap<Value, Value> adjoints;
};

/// The block arguments of `op`'s body whose operands are active. Reduction
/// accumulators are excluded: their derivative is handled by the combiner
/// rule, not through the body.
SmallVector<BlockArgument> activeBodyArgs(linalg::GenericOp op,
                                          function_ref<bool(Value)> isActive) {
  Block &body = *op.getBody();
  unsigned numInputs = op.getNumDpsInputs();
  bool reduction = op.getNumReductionLoops() > 0;
  SmallVector<BlockArgument> args;
  for (unsigned i = 0; i < numInputs; ++i)
    if (isActive(op.getDpsInputs()[i]))
      args.push_back(body.getArgument(i));
  if (!reduction)
    for (unsigned k = 0, e = op.getNumDpsInits(); k < e; ++k)
      if (isActive(op.getDpsInits()[k]))
        args.push_back(body.getArgument(numInputs + k));
  return args;
}

/// Clones `op`'s body at the builder's insertion point (its block arguments
/// are pre-mapped in `mapping`; with non-empty `ivs`, linalg.index results
/// map to them), seeds the adjoints of the results' contributions with the
/// cotangents, and runs the scalar reverse sweep.
void emitBodyAdjoint(OpBuilder &b, Location loc, linalg::GenericOp op,
                     ArrayRef<OutputInfo> infos, IRMapping &mapping,
                     ValueRange ivs, ArrayRef<Value> resultScalars,
                     ArrayRef<Value> cotangentScalars,
                     function_ref<bool(Value)> isActive, ScalarAdjoint &sa) {
  Block &body = *op.getBody();
  for (BlockArgument arg : activeBodyArgs(op, isActive))
    sa.active.insert(mapping.lookup(arg));

  SmallVector<Operation *> cloned;
  for (Operation &inner : body.without_terminator()) {
    if (!ivs.empty())
      if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
        mapping.map(index.getResult(), ivs[index.getDim()]);
        continue;
      }
    Operation *copy = b.clone(inner, mapping);
    cloned.push_back(copy);
    if (isZeroDerivative(copy))
      continue;
    bool anyActive = false;
    for (auto [orig, now] : llvm::zip(inner.getOperands(), copy->getOperands()))
      anyActive |= sa.active.contains(now) ||
                   (isDefinedOutside(op, orig) && isActive(orig));
    if (anyActive)
      for (Value result : copy->getResults())
        if (isFloatValue(result))
          sa.active.insert(result);
  }

  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  for (auto [k, info] : llvm::enumerate(infos)) {
    Value cot = cotangentScalars[k];
    if (!cot || info.kind == Combiner::None)
      continue;
    switch (info.kind) {
    case Combiner::Elementwise:
      sa.add(mapping.lookupOrDefault(yield.getOperand(k)), cot);
      break;
    case Combiner::Sum:
      sa.add(mapping.lookupOrDefault(info.contribution), cot);
      break;
    case Combiner::Max:
    case Combiner::Min: {
      Value v = mapping.lookupOrDefault(info.contribution);
      if (!sa.active.contains(v))
        break;
      Value hit = sa.cmp(arith::CmpFPredicate::OEQ, v, resultScalars[k]);
      sa.add(v, sa.select(hit, cot, sa.cst(cot.getType(), 0.0)));
      break;
    }
    case Combiner::None:
      break;
    }
  }
  for (Operation *copy : llvm::reverse(cloned))
    sa.propagate(copy);
}

/// Erases ops without uses or side effects, innermost regions first.
void eraseDeadOps(Block &block) {
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block))) {
    for (Region &region : op.getRegions())
      for (Block &inner : region)
        eraseDeadOps(inner);
    if (isOpTriviallyDead(&op))
      op.erase();
  }
}

/// Drops input operands whose body arguments are unused, keeping any input
/// still needed to define a loop range.
linalg::GenericOp pruneUnusedInputs(OpBuilder &b, linalg::GenericOp op) {
  Block &body = *op.getBody();
  unsigned numInputs = op.getNumDpsInputs();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  llvm::BitVector keep(numInputs);
  for (unsigned i = 0; i < numInputs; ++i)
    keep[i] = !body.getArgument(i).use_empty();
  llvm::BitVector covered(op.getNumLoops());
  auto cover = [&](AffineMap map) {
    for (AffineExpr e : map.getResults())
      if (auto d = dyn_cast<AffineDimExpr>(e))
        covered.set(d.getPosition());
  };
  for (unsigned i = 0; i < maps.size(); ++i)
    if (i >= numInputs || keep[i])
      cover(maps[i]);
  for (unsigned i = 0; i < numInputs && !covered.all(); ++i) {
    if (keep[i])
      continue;
    llvm::BitVector before = covered;
    cover(maps[i]);
    if (covered != before)
      keep[i] = true;
  }
  if (keep.all())
    return op;

  SmallVector<Value> inputs;
  SmallVector<AffineMap> newMaps;
  llvm::BitVector erase(body.getNumArguments());
  for (unsigned i = 0; i < numInputs; ++i) {
    if (keep[i]) {
      inputs.push_back(op.getDpsInputs()[i]);
      newMaps.push_back(maps[i]);
    } else {
      erase.set(i);
    }
  }
  for (unsigned i = numInputs; i < maps.size(); ++i)
    newMaps.push_back(maps[i]);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op);
  auto pruned = linalg::GenericOp::create(b, op.getLoc(), op.getResultTypes(),
                                          inputs, op.getDpsInits(), newMaps,
                                          op.getIteratorTypesArray());
  pruned.getRegion().takeBody(op.getRegion());
  pruned.getBody()->eraseArguments(erase);
  op.erase();
  return pruned;
}

SmallVector<Value> applyMap(OpBuilder &b, Location loc, AffineMap map,
                            ValueRange ivs) {
  SmallVector<Value> indices;
  for (unsigned r = 0; r < map.getNumResults(); ++r) {
    AffineExpr e = map.getResult(r);
    if (auto d = dyn_cast<AffineDimExpr>(e))
      indices.push_back(ivs[d.getPosition()]);
    else if (auto c = dyn_cast<AffineConstantExpr>(e))
      indices.push_back(arith::ConstantIndexOp::create(b, loc, c.getValue()));
    else
      indices.push_back(
          affine::AffineApplyOp::create(b, loc, map.getSubMap({r}), ivs));
  }
  return indices;
}

/// Gradient of operand `target` (an input, or an init of an elementwise
/// generic): a linalg.generic over the same domain writing through the
/// operand's map. Returns null when the body gives it no adjoint.
Value buildOperandGradient(OpBuilder &b, linalg::GenericOp op,
                           ArrayRef<OutputInfo> infos,
                           ArrayRef<Value> cotangents, unsigned target,
                           function_ref<bool(Value)> isActive) {
  Location loc = op.getLoc();
  unsigned numInputs = op.getNumDpsInputs();
  unsigned numInits = op.getNumDpsInits();
  unsigned numLoops = op.getNumLoops();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  auto targetType = cast<RankedTensorType>(op->getOperand(target).getType());
  AffineMap targetMap = maps[target];

  // Slots 0 .. numInputs+numInits-1 mirror the forward body arguments.
  SmallVector<Value> inputs;
  SmallVector<AffineMap> newMaps;
  for (unsigned i = 0; i < numInputs + numInits; ++i) {
    inputs.push_back(op->getOperand(i));
    newMaps.push_back(maps[i]);
  }
  SmallVector<int> resultSlot(numInits, -1), cotangentSlot(numInits, -1);
  for (unsigned k = 0; k < numInits; ++k) {
    if (!cotangents[k] || infos[k].kind == Combiner::None)
      continue;
    if (infos[k].kind == Combiner::Max || infos[k].kind == Combiner::Min) {
      resultSlot[k] = inputs.size();
      inputs.push_back(op->getResult(k));
      newMaps.push_back(maps[numInputs + k]);
    }
    cotangentSlot[k] = inputs.size();
    inputs.push_back(cotangents[k]);
    newMaps.push_back(maps[numInputs + k]);
  }
  newMaps.push_back(targetMap);

  // Loops indexing the operand stay parallel; all others reduce. A map that
  // is not a projected permutation (e.g. d0 + d1) aliases iterations onto
  // one element, so every loop is a reduction then.
  bool permutation = targetMap.isPermutation();
  SmallVector<utils::IteratorType> iterators(numLoops,
                                             utils::IteratorType::reduction);
  if (targetMap.isProjectedPermutation(/*allowZeroInResults=*/true))
    for (AffineExpr e : targetMap.getResults())
      if (auto d = dyn_cast<AffineDimExpr>(e))
        iterators[d.getPosition()] = utils::IteratorType::parallel;
  Value init = permutation
                   ? tensor::EmptyOp::create(b, loc, targetType.getShape(),
                                             targetType.getElementType())
                         .getResult()
                   : createZeros(b, loc, targetType);

  bool found = true;
  auto gradient = linalg::GenericOp::create(
      b, loc, TypeRange{targetType}, inputs, ValueRange{init}, newMaps,
      iterators, [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Block &body = *op.getBody();
        IRMapping mapping;
        for (unsigned i = 0; i < numInputs + numInits; ++i)
          mapping.map(body.getArgument(i), args[i]);
        SmallVector<Value> results(numInits), cots(numInits);
        for (unsigned k = 0; k < numInits; ++k) {
          if (resultSlot[k] >= 0)
            results[k] = args[resultSlot[k]];
          if (cotangentSlot[k] >= 0)
            cots[k] = args[cotangentSlot[k]];
        }
        ScalarAdjoint sa(nb, nloc);
        emitBodyAdjoint(nb, nloc, op, infos, mapping, ValueRange(), results,
                        cots, isActive, sa);
        Value g = sa.get(args[target]);
        Value acc = args.back();
        if (!g) {
          found = false;
          linalg::YieldOp::create(nb, nloc, acc);
          return;
        }
        if (!permutation)
          g = arith::AddFOp::create(nb, nloc, acc, g);
        linalg::YieldOp::create(nb, nloc, g);
      });
  if (!found) {
    gradient.erase();
    return {};
  }
  eraseDeadOps(*gradient.getBody());
  return pruneUnusedInputs(b, gradient).getResult(0);
}

/// Gradient of a tensor read by tensor.extract inside the body: a loop nest
/// over the iteration domain scatter-adding the extracted scalars' adjoints.
Value buildScatterGradient(OpBuilder &b, linalg::GenericOp op,
                           ArrayRef<OutputInfo> infos,
                           ArrayRef<Value> cotangents, Value table,
                           function_ref<bool(Value)> isActive) {
  Location loc = op.getLoc();
  auto tableType = cast<RankedTensorType>(table.getType());
  unsigned numInputs = op.getNumDpsInputs();
  unsigned numInits = op.getNumDpsInits();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  SmallVector<Value> lbs, ubs, steps;
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  for (int64_t range : op.getStaticLoopRanges()) {
    lbs.push_back(zero);
    ubs.push_back(arith::ConstantIndexOp::create(b, loc, range));
    steps.push_back(one);
  }
  Value zeros = createZeros(b, loc, tableType);
  scf::LoopNest nest = scf::buildLoopNest(
      b, loc, lbs, ubs, steps, ValueRange{zeros},
      [&](OpBuilder &nb, Location nloc, ValueRange ivs,
          ValueRange iterArgs) -> scf::ValueVector {
        auto extractAt = [&](Value t, AffineMap map) -> Value {
          if (!isa<RankedTensorType>(t.getType()))
            return t;
          return tensor::ExtractOp::create(nb, nloc, t,
                                           applyMap(nb, nloc, map, ivs));
        };
        Block &body = *op.getBody();
        IRMapping mapping;
        for (unsigned i = 0; i < numInputs + numInits; ++i)
          mapping.map(body.getArgument(i),
                      extractAt(op->getOperand(i), maps[i]));
        SmallVector<Value> results(numInits), cots(numInits);
        for (unsigned k = 0; k < numInits; ++k) {
          if (!cotangents[k] || infos[k].kind == Combiner::None)
            continue;
          cots[k] = extractAt(cotangents[k], maps[numInputs + k]);
          if (infos[k].kind == Combiner::Max || infos[k].kind == Combiner::Min)
            results[k] = extractAt(op->getResult(k), maps[numInputs + k]);
        }
        ScalarAdjoint sa(nb, nloc);
        emitBodyAdjoint(nb, nloc, op, infos, mapping, ivs, results, cots,
                        isActive, sa);
        Value acc = iterArgs.front();
        for (Operation &inner : body.without_terminator()) {
          auto extract = dyn_cast<tensor::ExtractOp>(inner);
          if (!extract || extract.getTensor() != table)
            continue;
          Value copy = mapping.lookup(extract.getResult());
          Value g = sa.get(copy);
          if (!g)
            continue;
          auto indices =
              cast<tensor::ExtractOp>(copy.getDefiningOp()).getIndices();
          SmallVector<Value> idx(indices.begin(), indices.end());
          Value old = tensor::ExtractOp::create(nb, nloc, acc, idx);
          acc = tensor::InsertOp::create(
              nb, nloc, arith::AddFOp::create(nb, nloc, old, g), acc, idx);
        }
        return {acc};
      });
  Value result = nest.results.empty() ? zeros : nest.results.front();
  if (!nest.loops.empty())
    for (Block &inner : nest.loops.front().getRegion())
      eraseDeadOps(inner);
  return result;
}

} // namespace

bool mlir::pipe::autodiff::detail::isFloatTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<FloatType>(tensor.getElementType());
}

Value mlir::pipe::autodiff::detail::createZeros(OpBuilder &b, Location loc,
                                                RankedTensorType type) {
  Value empty =
      tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  Value zero = arith::ConstantOp::create(
      b, loc, cast<TypedAttr>(b.getFloatAttr(type.getElementType(), 0.0)));
  return linalg::FillOp::create(b, loc, ValueRange{zero}, ValueRange{empty})
      .getResult(0);
}

Value mlir::pipe::autodiff::detail::createTensorAdd(OpBuilder &b, Location loc,
                                                    Value lhs, Value rhs) {
  auto type = cast<RankedTensorType>(lhs.getType());
  AffineMap id = b.getMultiDimIdentityMap(type.getRank());
  SmallVector<utils::IteratorType> iterators(type.getRank(),
                                             utils::IteratorType::parallel);
  Value empty =
      tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  return linalg::GenericOp::create(
             b, loc, TypeRange{type}, ValueRange{lhs, rhs}, ValueRange{empty},
             ArrayRef<AffineMap>{id, id, id}, iterators,
             [](OpBuilder &nb, Location nloc, ValueRange args) {
               linalg::YieldOp::create(nb, nloc,
                                       ValueRange{arith::AddFOp::create(
                                           nb, nloc, args[0], args[1])});
             })
      .getResult(0);
}

void mlir::pipe::autodiff::detail::rewriteGuardedSums(linalg::GenericOp op) {
  if (op.getNumReductionLoops() == 0)
    return;
  Block &body = *op.getBody();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  unsigned numInputs = op.getNumDpsInputs();
  for (unsigned k = 0, e = op.getNumDpsInits(); k < e; ++k) {
    BlockArgument acc = body.getArgument(numInputs + k);
    auto select = yield.getOperand(k).getDefiningOp<arith::SelectOp>();
    if (!isa<FloatType>(acc.getType()) || !select ||
        select->getBlock() != &body || select.getFalseValue() != acc)
      continue;
    auto add = select.getTrueValue().getDefiningOp<arith::AddFOp>();
    if (!add || add->getBlock() != &body)
      continue;
    Value other = add.getLhs() == acc   ? add.getRhs()
                  : add.getRhs() == acc ? add.getLhs()
                                        : Value();
    if (!other)
      continue;
    OpBuilder b(yield);
    Location loc = select.getLoc();
    Value zero = arith::ConstantOp::create(
        b, loc, b.getFloatAttr(acc.getType(), 0.0));
    Value guarded =
        arith::SelectOp::create(b, loc, select.getCondition(), other, zero);
    yield->setOperand(k, arith::AddFOp::create(b, loc, acc, guarded));
    // -0.0 + 0.0 is +0.0 where the old form kept -0.0; nothing else differs.
    if (select->use_empty())
      select->erase();
    if (add->use_empty())
      add->erase();
  }
}

LogicalResult mlir::pipe::autodiff::detail::checkGenericDifferentiable(
    linalg::GenericOp op, function_ref<bool(Value)> isActive) {
  if (!op.hasPureTensorSemantics())
    return op.emitError("cannot differentiate a linalg.generic without pure "
                        "tensor semantics");
  for (OpOperand &operand : op->getOpOperands()) {
    if (!isActive(operand.get()))
      continue;
    auto tensor = dyn_cast<RankedTensorType>(operand.get().getType());
    if (!tensor)
      return op.emitError("cannot differentiate with respect to scalar "
                          "operand #")
             << operand.getOperandNumber() << " of a linalg.generic";
    if (!tensor.hasStaticShape())
      return op.emitError("cannot differentiate with respect to operand #")
             << operand.getOperandNumber() << " of dynamic shape " << tensor;
  }
  for (int64_t range : op.getStaticLoopRanges())
    if (ShapedType::isDynamic(range))
      return op.emitError("cannot differentiate a linalg.generic with a "
                          "dynamic iteration domain");
  if (failed(classifyOutputs(op, /*emitErrors=*/true)))
    return failure();

  Block &body = *op.getBody();
  DenseSet<Value> active;
  for (BlockArgument arg : activeBodyArgs(op, isActive))
    active.insert(arg);
  for (Operation &inner : body.without_terminator()) {
    bool anyActive = false;
    for (Value v : inner.getOperands()) {
      if (isDefinedOutside(op, v)) {
        if (!isActive(v))
          continue;
        auto extract = dyn_cast<tensor::ExtractOp>(inner);
        if (!extract || extract.getTensor() != v ||
            !isa<RankedTensorType>(v.getType()))
          return inner.emitError("cannot differentiate '")
                 << inner.getName()
                 << "': a linalg.generic body may read an active value from "
                    "outside only through tensor.extract";
        anyActive = true;
        continue;
      }
      anyActive |= active.contains(v);
    }
    if (!anyActive || isZeroDerivative(&inner))
      continue;
    if (inner.getNumRegions() != 0 || !hasScalarRule(&inner))
      return inner.emitError("no derivative rule for '")
             << inner.getName() << "'";
    for (Value result : inner.getResults())
      if (isFloatValue(result))
        active.insert(result);
  }
  return success();
}

void mlir::pipe::autodiff::detail::buildGenericAdjoint(
    OpBuilder &b, linalg::GenericOp op, ArrayRef<Value> cotangents,
    function_ref<bool(Value)> isActive,
    function_ref<void(Value, Value)> accumulate) {
  SmallVector<OutputInfo> infos = *classifyOutputs(op, /*emitErrors=*/false);
  Location loc = op.getLoc();
  unsigned numInputs = op.getNumDpsInputs();
  bool reduction = op.getNumReductionLoops() > 0;

  for (unsigned i = 0; i < numInputs; ++i) {
    Value input = op.getDpsInputs()[i];
    if (!isActive(input))
      continue;
    if (Value g = buildOperandGradient(b, op, infos, cotangents, i, isActive))
      accumulate(input, g);
  }
  for (unsigned k = 0, e = op.getNumDpsInits(); k < e; ++k) {
    Value init = op.getDpsInits()[k];
    if (!isActive(init))
      continue;
    if (!reduction) {
      if (Value g = buildOperandGradient(b, op, infos, cotangents,
                                         numInputs + k, isActive))
        accumulate(init, g);
      continue;
    }
    Value cot = cotangents[k];
    if (!cot)
      continue;
    if (infos[k].kind == Combiner::Sum) {
      // result = init + sum(...): the init receives the cotangent unchanged.
      accumulate(init, cot);
      continue;
    }
    // Max/min: the init gets the cotangent where it is the extremum.
    auto type = cast<RankedTensorType>(init.getType());
    AffineMap id = b.getMultiDimIdentityMap(type.getRank());
    SmallVector<utils::IteratorType> iterators(type.getRank(),
                                               utils::IteratorType::parallel);
    Value empty =
        tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
    Value g =
        linalg::GenericOp::create(
            b, loc, TypeRange{type}, ValueRange{init, op.getResult(k), cot},
            ValueRange{empty}, ArrayRef<AffineMap>{id, id, id, id}, iterators,
            [](OpBuilder &nb, Location nloc, ValueRange args) {
              Value hit = arith::CmpFOp::create(
                  nb, nloc, arith::CmpFPredicate::OEQ, args[0], args[1]);
              Value zero = arith::ConstantOp::create(
                  nb, nloc,
                  cast<TypedAttr>(nb.getFloatAttr(args[2].getType(), 0.0)));
              linalg::YieldOp::create(nb, nloc,
                                      ValueRange{arith::SelectOp::create(
                                          nb, nloc, hit, args[2], zero)});
            })
            .getResult(0);
    accumulate(init, g);
  }

  llvm::SetVector<Value> tables;
  op.getBody()->walk([&](tensor::ExtractOp extract) {
    Value t = extract.getTensor();
    if (isDefinedOutside(op, t) && isActive(t))
      tables.insert(t);
  });
  for (Value table : tables)
    accumulate(table,
               buildScatterGradient(b, op, infos, cotangents, table, isActive));
}
