//===- IndexRanges.cpp - Valid ranges of integer inputs, index guards -----===//
//
// Two halves of one guarantee: an integer the model uses as an index never
// reads or writes outside its tensor. Graph inputs get a range from the IR
// (what the data loader checks, with a message naming the file and row);
// everything else that reaches an index is checked where it is used, in the
// generated code.
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
#include "mlir/Pass/Pass.h"
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

//===----------------------------------------------------------------------===//
// Guards in generated code
//===----------------------------------------------------------------------===//

namespace {

/// Whether `v` is computed from constants, linalg.index and loop induction
/// variables only: such an index is as good as the model, not as the data.
bool isStaticIndex(Value v, DenseMap<Value, bool> &memo) {
  auto known = memo.find(v);
  if (known != memo.end())
    return known->second;
  memo[v] = false; // cycles (loop-carried values) are data
  bool result = false;
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    auto loop = dyn_cast<scf::ForOp>(arg.getOwner()->getParentOp());
    result = loop && arg == loop.getInductionVar();
  } else {
    Operation *def = v.getDefiningOp();
    result = def->getNumRegions() == 0 && isMemoryEffectFree(def) &&
             llvm::all_of(def->getOperands(), [&](Value operand) {
               return isStaticIndex(operand, memo);
             });
  }
  return memo[v] = result;
}

std::string describeLocation(Location loc) {
  std::string text;
  loc->walk([&](Location inner) {
    if (auto file = dyn_cast<FileLineColLoc>(inner)) {
      text = (file.getFilename().getValue() + ":" + Twine(file.getLine()) +
              ":" + Twine(file.getColumn()))
                 .str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return text.empty() ? "unknown location" : text;
}

class IndexGuard {
public:
  explicit IndexGuard(ModuleOp module)
      : module(module), ctx(module.getContext()) {}

  /// Guards indices [firstIndex, firstIndex + rank) of `op`, which accesses
  /// `container` (a tensor or memref).
  void guard(Operation *op, func::FuncOp fn, Value container,
             unsigned firstIndex);

private:
  Value site(OpBuilder &b, Location loc, StringRef text);
  func::FuncOp callee();

  ModuleOp module;
  MLIRContext *ctx;
  DenseMap<Value, bool> memo;
  llvm::StringMap<LLVM::GlobalOp> sites;
  func::FuncOp fault;
};

func::FuncOp IndexGuard::callee() {
  if (fault)
    return fault;
  if ((fault = module.lookupSymbol<func::FuncOp>("pipe_rt_index_fault")))
    return fault;
  OpBuilder b(module.getBodyRegion());
  Type i64 = b.getI64Type();
  fault = func::FuncOp::create(
      b, module.getLoc(), "pipe_rt_index_fault",
      FunctionType::get(ctx, {LLVM::LLVMPointerType::get(ctx), i64, i64}, {}));
  fault.setPrivate();
  return fault;
}

/// A pointer to the NUL-terminated `text`, one global per distinct text.
Value IndexGuard::site(OpBuilder &b, Location loc, StringRef text) {
  LLVM::GlobalOp &global = sites[text];
  if (!global) {
    OpBuilder gb(module.getBodyRegion());
    std::string value = text.str();
    value.push_back('\0');
    auto type = LLVM::LLVMArrayType::get(gb.getI8Type(), value.size());
    global = LLVM::GlobalOp::create(
        gb, loc, type, /*isConstant=*/true, LLVM::Linkage::Internal,
        "pipe_index_site_" + std::to_string(sites.size() - 1),
        gb.getStringAttr(value));
  }
  return LLVM::AddressOfOp::create(b, loc, global);
}

void IndexGuard::guard(Operation *op, func::FuncOp fn, Value container,
                       unsigned firstIndex) {
  Location loc = op->getLoc();
  auto type = cast<ShapedType>(container.getType());
  for (unsigned i = 0; i < type.getRank(); ++i) {
    Value index = op->getOperand(firstIndex + i);
    if (isStaticIndex(index, memo))
      continue;
    OpBuilder b(op);
    Value dim;
    if (!type.isDynamicDim(i))
      dim = arith::ConstantIndexOp::create(b, loc, type.getDimSize(i));
    else if (isa<MemRefType>(type))
      dim = memref::DimOp::create(b, loc, container, i);
    else
      dim = tensor::DimOp::create(b, loc, container, i);
    // Unsigned: a negative index is out of range too.
    Value bad =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, index, dim);
    std::string text;
    llvm::raw_string_ostream os(text);
    os << describeLocation(loc) << ": " << op->getName() << " in @"
       << fn.getSymName() << ", index " << i << " of " << type;
    scf::IfOp::create(b, loc, bad, [&](OpBuilder &nb, Location l) {
      Type i64 = nb.getI64Type();
      Value where = site(nb, l, text);
      Value value = arith::IndexCastOp::create(nb, l, i64, index);
      Value bound = arith::IndexCastOp::create(nb, l, i64, dim);
      func::CallOp::create(nb, l, callee(), ValueRange{where, value, bound});
      scf::YieldOp::create(nb, l);
    });
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    op->setOperand(firstIndex + i,
                   arith::SelectOp::create(b, loc, bad, zero, index));
  }
}

struct InferIndexRangesPass
    : PassWrapper<InferIndexRangesPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(InferIndexRangesPass)
  StringRef getArgument() const final { return "pipe-infer-index-ranges"; }
  StringRef getDescription() const final {
    return "Records on each integer pipe.graph argument the range its values "
           "must have (pipe.index_bound, pipe.index_exempt), from its uses "
           "as an index; --pipe-lower-to-host does the same for the manifest";
  }
  void runOnOperation() override {
    SymbolTable symbols(getOperation());
    for (GraphOp graph : getOperation().getOps<GraphOp>())
      if (failed(inferIndexRanges(graph, symbols)))
        return signalPassFailure();
  }
};

struct GuardIndicesPass
    : PassWrapper<GuardIndicesPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(GuardIndicesPass)
  StringRef getArgument() const final { return "pipe-guard-indices"; }
  StringRef getDescription() const final {
    return "Checks every data-dependent tensor.extract / tensor.insert "
           "(or memref.load / memref.store) index of the func.func ops "
           "against its dimension: out of range calls "
           "pipe_rt_index_fault and uses index 0 (part of "
           "--pipe-host-to-llvm)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, func::FuncDialect, LLVM::LLVMDialect,
                    memref::MemRefDialect, scf::SCFDialect,
                    tensor::TensorDialect>();
  }
  void runOnOperation() override {
    ModuleOp module = getOperation();
    IndexGuard guard(module);
    for (func::FuncOp fn : llvm::to_vector(module.getOps<func::FuncOp>())) {
      SmallVector<Operation *> accesses;
      fn.walk([&](Operation *op) {
        if (isa<tensor::ExtractOp, tensor::InsertOp, memref::LoadOp,
                memref::StoreOp>(op))
          accesses.push_back(op);
      });
      // Reads: (container, indices...); writes: (value, container,
      // indices...).
      for (Operation *op : accesses) {
        unsigned first = isa<tensor::ExtractOp, memref::LoadOp>(op) ? 1 : 2;
        guard.guard(op, fn, op->getOperand(first - 1), first);
      }
    }
  }
};

} // namespace

void mlir::pipe::addIndexGuardPass(OpPassManager &pm) {
  pm.addPass(std::make_unique<GuardIndicesPass>());
}

void mlir::pipe::registerIndexRangePasses() {
  PassRegistration<InferIndexRangesPass>();
  PassRegistration<GuardIndicesPass>();
}
