//===- IndexRanges.cpp - Valid ranges of integer graph inputs -------------===//
//
// One half of one guarantee: an integer the model uses as an index never
// reads or writes outside its tensor. Graph inputs get a range from the IR
// here (what the data loader checks, with a message naming the file and
// row); everything else that reaches an index is checked where it is used,
// in the generated code (GuardIndices.cpp).
//
//===----------------------------------------------------------------------===//

#include "pipe/Dialect/Pipe/Transforms/IndexRanges.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <set>

using namespace mlir;
using namespace mlir::pipe;

//===----------------------------------------------------------------------===//
// Ranges of graph inputs
//===----------------------------------------------------------------------===//

namespace {

/// The value `v` is a cast of (integer casts keep the value).
Value stripCasts(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (!isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp,
             arith::ExtUIOp>(def))
      break;
    v = def->getOperand(0);
  }
  return v;
}

std::optional<int64_t> constantInt(Value v) {
  APInt value;
  if (!matchPattern(v, m_ConstantInt(&value)))
    return std::nullopt;
  return value.getSExtValue();
}

/// One use of an input as an index: it must be in [0, bound) or in `exempt`.
struct IndexUse {
  int64_t bound;
  SmallVector<int64_t> exempt;
  bool allows(int64_t v) const {
    return (v >= 0 && v < bound) || llvm::is_contained(exempt, v);
  }
};

/// Follows one graph input through the graph and its blocks, collecting its
/// uses as an index. Values carry the exempt values of their path: those a
/// select has replaced by a constant on the way.
class RangeFinder {
public:
  explicit RangeFinder(SymbolTable &symbols) : symbols(symbols) {}

  std::optional<IndexRange> find(BlockArgument input) {
    visitTensor(input, nullptr, {});
    for (IndexUse &use : classUses) {
      use.exempt.append(sentinels.begin(), sentinels.end());
      uses.push_back(std::move(use));
    }
    if (uses.empty())
      return std::nullopt;
    return combine(uses);
  }

  static IndexRange combine(ArrayRef<IndexUse> uses) {
    IndexRange range;
    range.bound = uses.front().bound;
    for (const IndexUse &use : uses)
      range.bound = std::min(range.bound, use.bound);
    std::set<int64_t> exempt;
    for (const IndexUse &use : uses)
      for (int64_t v : use.exempt)
        if ((v < 0 || v >= range.bound) &&
            llvm::all_of(uses, [&](const IndexUse &u) { return u.allows(v); }))
          exempt.insert(v);
    range.exempt.assign(exempt.begin(), exempt.end());
    return range;
  }

private:
  /// `t`'s elements are elements of the input. `run` is the pipe.run whose
  /// block `t` is in (null in the graph).
  void visitTensor(Value t, RunOp run, ArrayRef<int64_t> exempt) {
    if (!visited.insert({t, run}).second)
      return;
    for (OpOperand &use : t.getUses()) {
      Operation *user = use.getOwner();
      unsigned n = use.getOperandNumber();
      if (auto next = dyn_cast<RunOp>(user)) {
        auto block = symbols.lookup<BlockOp>(next.getCallee());
        if (block && !block.getBody().empty())
          visitTensor(block.getBody().getArgument(block.getNumParams() + n),
                      next, exempt);
      } else if (isa<ReturnOp>(user)) {
        if (run && isa<BlockOp>(user->getParentOp()))
          visitTensor(run.getResult(n), nullptr, exempt);
      } else if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp,
                     tensor::CastOp, tensor::ExtractSliceOp, tensor::ReshapeOp>(
                     user)) {
        // Reshapes and slices of the source (not of the shape operands).
        if (n == 0)
          visitTensor(user->getResult(0), run, exempt);
      } else if (isa<linalg::TransposeOp, linalg::BroadcastOp, linalg::CopyOp>(
                     user)) {
        if (cast<DestinationStyleOpInterface>(user).isDpsInput(&use))
          visitTensor(user->getResult(0), run, exempt);
      } else if (auto generic = dyn_cast<linalg::GenericOp>(user)) {
        if (generic.isDpsInput(&use))
          visitScalar(generic.getBody()->getArgument(n), run, exempt);
      } else if (auto extract = dyn_cast<tensor::ExtractOp>(user)) {
        if (n == 0)
          visitScalar(extract.getResult(), run, exempt);
      }
    }
  }

  /// `s` is an element of the input (possibly cast).
  void visitScalar(Value s, RunOp run, ArrayRef<int64_t> exempt) {
    if (!visited.insert({s, run}).second)
      return;
    Value root = stripCasts(s);
    for (OpOperand &use : s.getUses()) {
      Operation *user = use.getOwner();
      unsigned n = use.getOperandNumber();
      if (isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp,
              arith::ExtUIOp>(user)) {
        visitScalar(user->getResult(0), run, exempt);
      } else if (auto select = dyn_cast<arith::SelectOp>(user)) {
        if (n == 0)
          continue;
        // select(x != K, x, c): K never reaches what the result indexes.
        SmallVector<int64_t> path(exempt);
        Value other = n == 1 ? select.getFalseValue() : select.getTrueValue();
        auto cmp = select.getCondition().getDefiningOp<arith::CmpIOp>();
        if (constantInt(other) && cmp &&
            (stripCasts(cmp.getLhs()) == root ||
             stripCasts(cmp.getRhs()) == root)) {
          Value k =
              stripCasts(cmp.getLhs()) == root ? cmp.getRhs() : cmp.getLhs();
          bool guards =
              (cmp.getPredicate() == arith::CmpIPredicate::ne && n == 1) ||
              (cmp.getPredicate() == arith::CmpIPredicate::eq && n == 2);
          if (std::optional<int64_t> value = constantInt(k); value && guards)
            path.push_back(*value);
        }
        visitScalar(select.getResult(), run, path);
      } else if (auto cmp = dyn_cast<arith::CmpIOp>(user)) {
        if (cmp.getPredicate() != arith::CmpIPredicate::eq &&
            cmp.getPredicate() != arith::CmpIPredicate::ne)
          continue;
        Value other = stripCasts(cmp->getOperand(1 - n));
        if (std::optional<int64_t> value = constantInt(other)) {
          // The model tells this value apart (a sentinel such as an
          // ignore_index): it never selects a class.
          sentinels.push_back(*value);
        } else if (auto index = other.getDefiningOp<linalg::IndexOp>()) {
          // A class picked by comparing the loop index with the target.
          auto generic = dyn_cast<linalg::GenericOp>(index->getParentOp());
          if (!generic)
            continue;
          int64_t range = generic.getStaticLoopRanges()[index.getDim()];
          if (!ShapedType::isDynamic(range))
            classUses.push_back({range, SmallVector<int64_t>(exempt)});
        }
      } else if (isa<linalg::YieldOp>(user)) {
        if (auto generic = dyn_cast<linalg::GenericOp>(user->getParentOp()))
          visitTensor(generic.getResult(n), run, exempt);
      } else if (auto extract = dyn_cast<tensor::ExtractOp>(user)) {
        if (n >= 1)
          addUse(extract.getTensor().getType(), n - 1, exempt);
      } else if (auto insert = dyn_cast<tensor::InsertOp>(user)) {
        if (n >= 2)
          addUse(insert.getDest().getType(), n - 2, exempt);
      }
    }
  }

  void addUse(RankedTensorType type, unsigned dim, ArrayRef<int64_t> exempt) {
    int64_t size = type.getDimSize(dim);
    if (!ShapedType::isDynamic(size))
      uses.push_back({size, SmallVector<int64_t>(exempt)});
  }

  SymbolTable &symbols;
  DenseSet<std::pair<Value, Operation *>> visited;
  SmallVector<IndexUse> uses, classUses;
  SmallVector<int64_t> sentinels;
};

bool isIntegerTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getElementType().isSignlessInteger() &&
         tensor.getElementType().getIntOrFloatBitWidth() > 1;
}

} // namespace

FailureOr<std::optional<IndexRange>> mlir::pipe::getIndexRange(GraphOp graph,
                                                               unsigned arg) {
  Attribute bound = graph.getArgAttr(arg, kIndexBoundAttr);
  Attribute exempt = graph.getArgAttr(arg, kIndexExemptAttr);
  if (!bound && !exempt)
    return std::optional<IndexRange>();
  auto fail = [&](const Twine &what) {
    return graph.emitOpError("argument ") << arg << ": " << what;
  };
  auto boundAttr = dyn_cast_or_null<IntegerAttr>(bound);
  if (!boundAttr || !boundAttr.getType().isInteger(64) ||
      boundAttr.getInt() < 1)
    return fail(Twine(kIndexBoundAttr) + " must be a positive i64");
  if (!isIntegerTensor(graph.getArgumentTypes()[arg]))
    return fail(Twine(kIndexBoundAttr) + " on a tensor that is not integer");
  IndexRange range;
  range.bound = boundAttr.getInt();
  if (exempt) {
    auto values = dyn_cast<DenseI64ArrayAttr>(exempt);
    if (!values)
      return fail(Twine(kIndexExemptAttr) + " must be an array<i64>");
    range.exempt.assign(values.asArrayRef().begin(), values.asArrayRef().end());
  }
  return std::optional<IndexRange>(std::move(range));
}

LogicalResult mlir::pipe::inferIndexRanges(GraphOp graph,
                                           SymbolTable &symbols) {
  if (graph.getBody().empty())
    return success();
  Builder b(graph.getContext());
  for (BlockArgument arg : graph.getBody().getArguments()) {
    if (!isIntegerTensor(arg.getType()))
      continue;
    FailureOr<std::optional<IndexRange>> recorded =
        getIndexRange(graph, arg.getArgNumber());
    if (failed(recorded))
      return failure();
    std::optional<IndexRange> found = RangeFinder(symbols).find(arg);
    if (!found)
      continue;
    if (*recorded) {
      // Both must hold: a range written by hand only tightens.
      IndexUse a{found->bound, found->exempt};
      IndexUse c{(*recorded)->bound, (*recorded)->exempt};
      found = RangeFinder::combine({a, c});
    }
    graph.setArgAttr(arg.getArgNumber(), kIndexBoundAttr,
                     b.getI64IntegerAttr(found->bound));
    if (found->exempt.empty())
      graph.removeArgAttr(arg.getArgNumber(), kIndexExemptAttr);
    else
      graph.setArgAttr(arg.getArgNumber(), kIndexExemptAttr,
                       b.getDenseI64ArrayAttr(found->exempt));
  }
  return success();
}
