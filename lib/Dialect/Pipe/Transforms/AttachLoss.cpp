//===- AttachLoss.cpp - Turns an inference function into a training one ---===//
//
// torch-mlir exports return logits or activations; the trainer needs one
// scalar loss. This pass appends a target argument and returns the loss of
// one result against it, written as torch-mlir lowers log_softmax, nll_loss
// and mse_loss (and as pipe-gen's models write their cross-entropy): generic
// reductions over the last dimension, a tensor.extract of the target's
// log-probability, a -100 ignore index, sums over a flattened rank-1 tensor.
// Keeping to those shapes is what lets the derivative rules and the
// index-range inference (IndexRanges.cpp) handle the result unchanged.
//
//===----------------------------------------------------------------------===//

#include "pipe/Autodiff/Autodiff.h"
#include "pipe/Dialect/Pipe/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/STLExtras.h"

namespace mlir::pipe {
#define GEN_PASS_DEF_PIPEATTACHLOSS
#include "pipe/Dialect/Pipe/Transforms/Passes.h.inc"
} // namespace mlir::pipe

using namespace mlir;

namespace {

/// PyTorch's default ignore_index of nll_loss and cross_entropy.
constexpr int64_t kIgnoreIndex = -100;

using BodyFn = llvm::function_ref<Value(OpBuilder &, Location, ValueRange)>;

Value addF(OpBuilder &b, Location loc, ValueRange a) {
  return arith::AddFOp::create(b, loc, a[0], a[1]);
}

/// Builds the loss ops before the function's return.
struct LossBuilder {
  OpBuilder &b;
  Location loc;
  Type ft; // the result's float type, also the loss's

  RankedTensorType tensorOf(ArrayRef<int64_t> shape, Type et) {
    return RankedTensorType::get(shape, et);
  }
  Value cstF(double v) {
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(ft, v));
  }
  Value cstF(const APFloat &v) {
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(ft, v));
  }
  Value cstI64(int64_t v) {
    return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(v));
  }
  Value empty(ArrayRef<int64_t> shape, Type et) {
    return tensor::EmptyOp::create(b, loc, shape, et);
  }
  Value filled(ArrayRef<int64_t> shape, Value init) {
    return linalg::FillOp::create(b, loc, ValueRange{init},
                                  ValueRange{empty(shape, init.getType())})
        .getResult(0);
  }

  Value generic(RankedTensorType out, ValueRange ins,
                ArrayRef<AffineMap> inMaps, AffineMap outMap,
                ArrayRef<utils::IteratorType> iters, Value init, BodyFn body) {
    SmallVector<AffineMap> maps(inMaps.begin(), inMaps.end());
    maps.push_back(outMap);
    return linalg::GenericOp::create(
               b, loc, TypeRange{out}, ins, ValueRange{init}, maps, iters,
               [&](OpBuilder &nb, Location l, ValueRange args) {
                 linalg::YieldOp::create(nb, l, body(nb, l, args));
               })
        .getResult(0);
  }

  /// An elementwise generic of same-rank operands whose size-1 dimensions
  /// broadcast (the keepdim results of reduceLast).
  Value elementwise(ArrayRef<Value> ins, BodyFn body) {
    auto first = cast<RankedTensorType>(ins.front().getType());
    int64_t rank = first.getRank();
    SmallVector<int64_t> shape(rank, 1);
    for (Value v : ins)
      for (auto [i, d] :
           llvm::enumerate(cast<RankedTensorType>(v.getType()).getShape()))
        shape[i] = std::max(shape[i], d);
    SmallVector<AffineMap> maps;
    for (Value v : ins) {
      SmallVector<AffineExpr> exprs;
      for (auto [i, d] :
           llvm::enumerate(cast<RankedTensorType>(v.getType()).getShape()))
        exprs.push_back(d == 1 && shape[i] != 1
                            ? getAffineConstantExpr(0, b.getContext())
                            : getAffineDimExpr(i, b.getContext()));
      maps.push_back(AffineMap::get(rank, 0, exprs, b.getContext()));
    }
    SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
    return generic(tensorOf(shape, ft), ins, maps,
                   AffineMap::getMultiDimIdentityMap(rank, b.getContext()),
                   iters, empty(shape, ft),
                   [&](OpBuilder &nb, Location l, ValueRange args) {
                     return body(nb, l, args.drop_back());
                   });
  }

  /// Reduces a rank-2 tensor over its last dimension, keeping it (size 1).
  Value reduceLast(Value x, Value init, BodyFn combine) {
    MLIRContext *ctx = b.getContext();
    int64_t n = cast<RankedTensorType>(x.getType()).getDimSize(0);
    AffineMap out = AffineMap::get(
        2, 0, {getAffineDimExpr(0, ctx), getAffineConstantExpr(0, ctx)}, ctx);
    return generic(tensorOf({n, 1}, ft), {x},
                   {AffineMap::getMultiDimIdentityMap(2, ctx)}, out,
                   {utils::IteratorType::parallel,
                    utils::IteratorType::reduction},
                   filled({n, 1}, init), combine);
  }

  /// The sum of a rank-1 tensor, as a rank-0 one.
  Value sumAll(Value x) {
    MLIRContext *ctx = b.getContext();
    return generic(tensorOf({}, ft), {x},
                   {AffineMap::getMultiDimIdentityMap(1, ctx)},
                   AffineMap::get(1, 0, {}, ctx),
                   {utils::IteratorType::reduction}, filled({}, cstF(0.0)),
                   addF);
  }

  /// `total / max(count, 1)`: a micro-batch whose targets are all ignored
  /// contributes a loss and gradient of 0, not 0/0 (PyTorch's mean over no
  /// target is NaN, and one such micro-batch would end the run).
  Value meanOverCounted(Value total, Value count) {
    Value one = cstF(1.0);
    return elementwise(
        {total, count}, [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
          Value atLeastOne = arith::MaximumFOp::create(nb, l, a[1], one);
          return arith::DivFOp::create(nb, l, a[0], atLeastOne);
        });
  }

  /// [...] -> [M] (a rank-0 tensor becomes [1]).
  Value flatten(Value x) {
    auto type = cast<RankedTensorType>(x.getType());
    if (type.getRank() == 1)
      return x;
    if (type.getRank() == 0)
      return tensor::ExpandShapeOp::create(
          b, loc, tensorOf({1}, type.getElementType()), x,
          ArrayRef<ReassociationIndices>{});
    ReassociationIndices all =
        llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
    return tensor::CollapseShapeOp::create(
        b, loc, x, ArrayRef<ReassociationIndices>{all});
  }

  /// [..., C] -> [N, C], as torch's cross_entropy views its input.
  Value collapseLeading(Value x) {
    auto type = cast<RankedTensorType>(x.getType());
    int64_t rank = type.getRank();
    if (rank == 2)
      return x;
    if (rank == 1)
      return tensor::ExpandShapeOp::create(
          b, loc, tensorOf({1, type.getDimSize(0)}, type.getElementType()), x,
          ArrayRef<ReassociationIndices>{{0, 1}});
    ReassociationIndices leading =
        llvm::to_vector(llvm::seq<int64_t>(0, rank - 1));
    return tensor::CollapseShapeOp::create(
        b, loc, x, ArrayRef<ReassociationIndices>{leading, {rank - 1}});
  }

  /// log_softmax over the last dimension of [N, C] (torch's decomposition:
  /// amax, sub, exp, sum, log, sub).
  Value logSoftmax(Value x) {
    const llvm::fltSemantics &sem = cast<FloatType>(ft).getFloatSemantics();
    Value negInf = cstF(APFloat::getInf(sem, /*Negative=*/true));
    Value mx = reduceLast(x, negInf,
                          [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                            return arith::MaximumFOp::create(nb, l, a[0], a[1]);
                          });
    Value shifted =
        elementwise({x, mx}, [](OpBuilder &nb, Location l, ValueRange a) {
          return arith::SubFOp::create(nb, l, a[0], a[1]).getResult();
        });
    Value e = elementwise({shifted}, [](OpBuilder &nb, Location l,
                                        ValueRange a) {
      return math::ExpOp::create(nb, l, a[0]).getResult();
    });
    Value sum = reduceLast(e, cstF(0.0), addF);
    Value lse = elementwise({sum}, [](OpBuilder &nb, Location l, ValueRange a) {
      return math::LogOp::create(nb, l, a[0]).getResult();
    });
    return elementwise({shifted, lse},
                       [](OpBuilder &nb, Location l, ValueRange a) {
                         return arith::SubFOp::create(nb, l, a[0], a[1])
                             .getResult();
                       });
  }

  /// Inside a generic over the rows (d0) of `table` [N, C]: whether
  /// `target` (a row's class index) counts (is not `ignore`, -100), and the
  /// table's element at the row and that class (class `zero` when it does
  /// not count, so the read stays in bounds).
  std::pair<Value, Value> readTarget(OpBuilder &nb, Location l, Value table,
                                     Value target, Value ignore, Value zero) {
    Value valid = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ne,
                                        target, ignore);
    Value safe = arith::SelectOp::create(nb, l, valid, target, zero);
    Value col = arith::IndexCastOp::create(nb, l, nb.getIndexType(), safe);
    Value row = linalg::IndexOp::create(nb, l, 0);
    Value element =
        tensor::ExtractOp::create(nb, l, table, ValueRange{row, col});
    return {valid, element};
  }

  /// nll_loss of log-probabilities [N, C] against class indices [N].
  Value nll(Value logp, Value target, bool mean) {
    MLIRContext *ctx = b.getContext();
    int64_t n = cast<RankedTensorType>(target.getType()).getDimSize(0);
    Value ignore = cstI64(kIgnoreIndex), zeroI = cstI64(0);
    Value zero = cstF(0.0), one = cstF(1.0);
    AffineMap id1 = AffineMap::getMultiDimIdentityMap(1, ctx);
    Value picked = generic(
        tensorOf({n}, ft), {target}, {id1}, id1,
        {utils::IteratorType::parallel}, empty({n}, ft),
        [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
          auto [valid, lp] = readTarget(nb, l, logp, a[0], ignore, zeroI);
          Value neg = arith::NegFOp::create(nb, l, lp);
          return arith::SelectOp::create(nb, l, valid, neg, zero);
        });
    Value total = sumAll(picked);
    if (!mean)
      return total;
    Value weights = generic(
        tensorOf({n}, ft), {target}, {id1}, id1,
        {utils::IteratorType::parallel}, empty({n}, ft),
        [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
          Value valid = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ne,
                                              a[0], ignore);
          return arith::SelectOp::create(nb, l, valid, one, zero);
        });
    return meanOverCounted(total, sumAll(weights));
  }

  /// Accuracy counts [hits, counted] (tensor<2xi64>) of class scores
  /// [N, C] against class indices [N]: one generic reduces over the rows
  /// (d0) for both counts (d1), so the metric is one value.
  Value accuracyCounts(Value scores, Value target) {
    MLIRContext *ctx = b.getContext();
    const llvm::fltSemantics &sem = cast<FloatType>(ft).getFloatSemantics();
    Value rowMax =
        reduceLast(scores, cstF(APFloat::getInf(sem, /*Negative=*/true)),
                   [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                     return arith::MaximumFOp::create(nb, l, a[0], a[1]);
                   });
    Type i64 = b.getI64Type();
    Value ignore = cstI64(kIgnoreIndex), zeroI = cstI64(0);
    AffineExpr row = getAffineDimExpr(0, ctx), slot = getAffineDimExpr(1, ctx);
    AffineMap targetMap = AffineMap::get(2, 0, {row}, ctx);
    AffineMap maxMap =
        AffineMap::get(2, 0, {row, getAffineConstantExpr(0, ctx)}, ctx);
    AffineMap outMap = AffineMap::get(2, 0, {slot}, ctx);
    return generic(
        tensorOf({2}, i64), {target, rowMax}, {targetMap, maxMap}, outMap,
        {utils::IteratorType::reduction, utils::IteratorType::parallel},
        filled({2}, zeroI), [&](OpBuilder &nb, Location l, ValueRange a) {
          auto [valid, score] =
              readTarget(nb, l, scores, a[0], ignore, zeroI);
          Value hit = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OGE,
                                            score, a[1]);
          // Slot 0 counts hits, slot 1 every counted target.
          Value s = linalg::IndexOp::create(nb, l, 1);
          Value zeroIdx = arith::ConstantIndexOp::create(nb, l, 0);
          Value isHits = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq,
                                               s, zeroIdx);
          Value trueI1 = arith::ConstantIntOp::create(nb, l, 1, 1);
          Value pick = arith::SelectOp::create(nb, l, isHits, hit, trueI1);
          Value counted = arith::AndIOp::create(nb, l, valid, pick);
          Value one = arith::ExtUIOp::create(nb, l, i64, counted);
          return arith::AddIOp::create(nb, l, a[2], one).getResult();
        });
  }

  /// mse_loss of two tensors flattened to [M].
  Value mse(Value x, Value target, bool mean) {
    Value diff =
        elementwise({x, target}, [](OpBuilder &nb, Location l, ValueRange a) {
          Value d = arith::SubFOp::create(nb, l, a[0], a[1]);
          return arith::MulFOp::create(nb, l, d, d).getResult();
        });
    Value total = sumAll(diff);
    if (!mean)
      return total;
    auto type = cast<RankedTensorType>(x.getType());
    Value count = cstF(static_cast<double>(type.getNumElements()));
    return elementwise({total}, [&](OpBuilder &nb, Location l, ValueRange a) {
      return arith::DivFOp::create(nb, l, a[0], count).getResult();
    });
  }
};

struct AttachLossPass
    : public pipe::impl::PipeAttachLossBase<AttachLossPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (kind != "cross-entropy" && kind != "mse" && kind != "nll") {
      mlir::emitError(module.getLoc(), "pipe-attach-loss: unknown kind '")
          << kind << "' (cross-entropy, mse or nll)";
      return signalPassFailure();
    }
    if (reduction != "mean" && reduction != "sum") {
      mlir::emitError(module.getLoc(), "pipe-attach-loss: unknown reduction '")
          << reduction << "' (mean or sum)";
      return signalPassFailure();
    }
    for (const std::string &metric : metrics) {
      if (llvm::count(metrics, metric) > 1) {
        mlir::emitError(module.getLoc(), "pipe-attach-loss: metric '")
            << metric << "' named twice";
        return signalPassFailure();
      }
      if (metric != "accuracy") {
        mlir::emitError(module.getLoc(), "pipe-attach-loss: unknown metric '")
            << metric << "' (accuracy)";
        return signalPassFailure();
      }
      if (kind == "mse") {
        mlir::emitError(module.getLoc(), "pipe-attach-loss: metric '")
            << metric << "' needs class scores (cross-entropy or nll), not "
            << kind;
        return signalPassFailure();
      }
    }
    func::FuncOp func = findFunction(module);
    if (!func || failed(attach(func)))
      return signalPassFailure();
  }

  /// `func`, or else the only public function with a body.
  func::FuncOp findFunction(ModuleOp module) {
    if (!funcName.empty()) {
      auto func = module.lookupSymbol<func::FuncOp>(funcName);
      if (!func || func.isExternal())
        mlir::emitError(module.getLoc(), "pipe-attach-loss: no function @")
            << funcName << " with a body in the module";
      return func && !func.isExternal() ? func : nullptr;
    }
    SmallVector<func::FuncOp> candidates;
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal() && !func.isPrivate())
        candidates.push_back(func);
    if (candidates.empty()) {
      mlir::emitError(module.getLoc(),
                      "pipe-attach-loss: no public function with a body");
      return nullptr;
    }
    if (candidates.size() == 1)
      return candidates.front();
    // At the second candidate, without a dump of the whole module.
    constexpr size_t kListed = 8;
    InFlightDiagnostic diag = mlir::emitError(candidates[1].getLoc())
                              << "pipe-attach-loss: " << candidates.size()
                              << " public functions (";
    llvm::interleaveComma(
        ArrayRef(candidates).take_front(kListed), diag,
        [&](func::FuncOp func) { diag << "@" << func.getSymName(); });
    if (candidates.size() > kListed)
      diag << ", and " << candidates.size() - kListed << " more";
    diag << ") could each be the model: name one with func=<function>, or "
            "make the others private";
    diag.attachNote(candidates.front().getLoc()) << "the first is here";
    return nullptr;
  }

  LogicalResult attach(func::FuncOp func) {
    // Callers would still pass the old arguments and expect the old results.
    if (!SymbolTable::symbolKnownUseEmpty(func, getOperation()))
      return func.emitOpError("pipe-attach-loss: @")
             << func.getSymName()
             << " is called from elsewhere in the module; its signature "
                "cannot change";
    if (!func.getBody().hasOneBlock())
      return func.emitOpError("pipe-attach-loss: needs a function of one "
                              "block, this one has ")
             << func.getBody().getBlocks().size();
    auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
    unsigned numResults = ret.getNumOperands();
    unsigned index = resultIndex;
    if (index >= numResults)
      return func.emitOpError("pipe-attach-loss: result ")
             << index << " is out of range: @" << func.getSymName()
             << " has " << numResults << " results";
    Value output = ret.getOperand(index);
    auto type = dyn_cast<RankedTensorType>(output.getType());
    if (!type || !isa<FloatType>(type.getElementType()))
      return func.emitOpError("pipe-attach-loss: result ")
             << index << " is " << output.getType()
             << ", not a tensor of floats";
    if (!type.hasStaticShape())
      return func.emitOpError("pipe-attach-loss: result ")
             << index << " is " << type << ", which has no static shape";
    bool classes = kind != "mse";
    if (classes && type.getRank() == 0)
      return func.emitOpError("pipe-attach-loss: ")
             << kind << " needs class scores over the last dimension, but "
             << "result " << index << " is " << type << " (rank 0)";

    ArrayRef<int64_t> shape = type.getShape();
    RankedTensorType targetType =
        classes ? RankedTensorType::get(shape.drop_back(),
                                        IntegerType::get(&getContext(), 64))
                : type;
    if (failed(func.insertArgument(func.getNumArguments(), targetType, {},
                                   func.getLoc())))
      return failure();
    Value target = func.getArguments().back();

    OpBuilder b(ret);
    LossBuilder lb{b, ret.getLoc(), type.getElementType()};
    bool mean = reduction == "mean";
    Value loss;
    SmallVector<Value> metricValues;
    if (classes) {
      // Separate statements: the order of argument evaluation is open, and
      // it would be the order of the ops.
      Value scores = lb.collapseLeading(output);
      Value logp = kind == "nll" ? scores : lb.logSoftmax(scores);
      Value indices = lb.flatten(target);
      loss = lb.nll(logp, indices, mean);
      for (size_t i = 0; i < metrics.size(); ++i)
        metricValues.push_back(lb.accuracyCounts(scores, indices));
    } else {
      Value flat = lb.flatten(output);
      Value flatTarget = lb.flatten(target);
      loss = lb.mse(flat, flatTarget, mean);
    }
    SmallVector<Value> results{loss};
    llvm::append_range(results, metricValues);
    func::ReturnOp::create(b, ret.getLoc(), results);
    ret.erase();
    if (failed(func.eraseResults(llvm::BitVector(numResults, true))) ||
        failed(func.insertResult(0, loss.getType(), {})))
      return failure();
    for (auto [i, metric] : llvm::enumerate(metrics)) {
      Value v = metricValues[i];
      if (failed(func.insertResult(i + 1, v.getType(), {})))
        return failure();
      func.setResultAttr(i + 1, pipe::autodiff::kMetricAttr,
                         StringAttr::get(&getContext(), metric));
    }
    // The results that are no longer returned: drop what only they used.
    for (Operation &op :
         llvm::make_early_inc_range(llvm::reverse(func.getBody().front())))
      if (isOpTriviallyDead(&op))
        op.erase();
    return success();
  }
};

} // namespace
