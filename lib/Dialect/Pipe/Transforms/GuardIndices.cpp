//===- GuardIndices.cpp - Checks data-dependent indices in host code ------===//
//
// The half of the index guarantee that the data loader cannot give:
// integers computed inside the model (or graph inputs without a range)
// that reach an index are checked where they are used, before
// bufferization, so that an out-of-range index fails the action with the
// op's location instead of touching memory out of bounds.
//
//===----------------------------------------------------------------------===//

#include "pipe/Dialect/Pipe/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::pipe {
#define GEN_PASS_DEF_PIPEGUARDINDICES
#include "pipe/Dialect/Pipe/Transforms/Passes.h.inc"
} // namespace mlir::pipe

using namespace mlir;
using namespace mlir::pipe;

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
    // Name a block function as the user's IR names the block (the host
    // lowering prefixes its symbol).
    StringRef name = fn.getSymName();
    name.consume_front(kBlockFunctionPrefix);
    os << describeLocation(loc) << ": " << op->getName() << " in @" << name
       << ", index " << i << " of " << type;
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

} // namespace

namespace {
struct GuardIndicesPass
    : public pipe::impl::PipeGuardIndicesBase<GuardIndicesPass> {
  using Base::Base;

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
