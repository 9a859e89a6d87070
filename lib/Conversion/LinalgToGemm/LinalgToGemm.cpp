//===- LinalgToGemm.cpp - f32 contractions on buffers to BLAS calls -------===//
//
// Loop-lowered contractions are the slowest part of a block on the host. A
// contraction whose loop dimensions fall into batch, M, N and K groups, each
// of which can be flattened into one dimension, is a (batched) GEMM with
// arbitrary element strides; the runtime's pipe_rt_gemm_f32 hands it to BLAS.
//
//===----------------------------------------------------------------------===//

#include "pipe/Conversion/Passes.h"
#include "pipe/Dialect/Pipe/Transforms/GemmMatch.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::pipe {
#define GEN_PASS_DEF_PIPELINALGTOGEMM
#include "pipe/Conversion/Passes.h.inc"
} // namespace mlir::pipe

using namespace mlir;
using namespace mlir::pipe;

FailureOr<linalg::ContractionDimensions>
pipe::matchGemmCandidate(linalg::LinalgOp op) {
  if (!linalg::isaContractionOpInterface(op))
    return failure();
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims) || dims->m.empty() || dims->n.empty() || dims->k.empty())
    return failure();
  if (llvm::any_of(op.getStaticLoopRanges(), ShapedType::isDynamic))
    return failure();
  // A, B and C (a contraction has exactly two inputs and one init): f32,
  // indexed by plain loop dimensions (the stride tables need that).
  SmallVector<OpOperand *> operands{op.getDpsInputOperand(0),
                                    op.getDpsInputOperand(1),
                                    op.getDpsInitOperand(0)};
  for (OpOperand *operand : operands) {
    auto type = dyn_cast<ShapedType>(operand->get().getType());
    if (!type || !type.getElementType().isF32())
      return failure();
    if (!llvm::all_of(op.getMatchingIndexingMap(operand).getResults(),
                      llvm::IsaPred<AffineDimExpr>))
      return failure();
  }
  return dims;
}

bool pipe::isGemmCandidate(Operation *op) {
  auto linalgOp = dyn_cast_or_null<linalg::LinalgOp>(op);
  return linalgOp && succeeded(matchGemmCandidate(linalgOp));
}

namespace {

constexpr StringLiteral kGemmFunction = "pipe_rt_gemm_f32";

/// A group of loop dimensions flattened into one: its size and, per operand
/// (A, B, C), its element stride (0 when the operand does not use it).
struct FlatDim {
  int64_t size = 1;
  int64_t strides[3] = {0, 0, 0};
};

/// Flattens `dims` (loop dimension indices) into one dimension, or fails if
/// some operand's strides do not allow it. `strides[o][d]` is operand o's
/// stride of loop dimension d.
std::optional<FlatDim> flatten(ArrayRef<unsigned> dims, ArrayRef<int64_t> sizes,
                               const SmallVector<int64_t> (&strides)[3]) {
  FlatDim flat;
  if (dims.empty())
    return flat;
  // Outermost first: order by the largest stride any operand gives.
  SmallVector<unsigned> order(dims);
  auto key = [&](unsigned d) {
    return std::max({strides[0][d], strides[1][d], strides[2][d]});
  };
  llvm::stable_sort(order,
                    [&](unsigned x, unsigned y) { return key(x) > key(y); });
  unsigned inner = order.back();
  flat.size = sizes[inner];
  for (unsigned o = 0; o < 3; ++o)
    flat.strides[o] = strides[o][inner];
  for (unsigned i = order.size() - 1; i-- > 0;) {
    unsigned d = order[i];
    for (unsigned o = 0; o < 3; ++o)
      if (strides[o][d] != flat.strides[o] * flat.size)
        return std::nullopt;
    flat.size *= sizes[d];
  }
  return flat;
}

struct LinalgToGemmPass
    : public pipe::impl::PipeLinalgToGemmBase<LinalgToGemmPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<linalg::LinalgOp> candidates;
    module.walk([&](linalg::LinalgOp op) {
      if (op.hasPureBufferSemantics() && isGemmCandidate(op))
        candidates.push_back(op);
    });
    for (linalg::LinalgOp op : candidates)
      rewrite(op);
  }

  /// Replaces `op` with a runtime call when it is a flattenable f32 GEMM.
  void rewrite(linalg::LinalgOp op) {
    FailureOr<linalg::ContractionDimensions> dims = matchGemmCandidate(op);
    if (failed(dims))
      return;
    SmallVector<int64_t> sizes = op.getStaticLoopRanges();
    SmallVector<Value> operands{op.getDpsInputOperand(0)->get(),
                                op.getDpsInputOperand(1)->get(),
                                op.getDpsInitOperand(0)->get()};
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    SmallVector<int64_t> strides[3];
    for (unsigned o = 0; o < 3; ++o) {
      auto type = dyn_cast<MemRefType>(operands[o].getType());
      if (!type || !type.getElementType().isF32())
        return;
      SmallVector<int64_t> memrefStrides;
      int64_t offset;
      if (failed(type.getStridesAndOffset(memrefStrides, offset)) ||
          llvm::any_of(memrefStrides, ShapedType::isDynamic))
        return;
      strides[o].assign(sizes.size(), 0);
      for (auto [r, expr] : llvm::enumerate(maps[o].getResults()))
        strides[o][cast<AffineDimExpr>(expr).getPosition()] = memrefStrides[r];
    }
    std::optional<FlatDim> batch = flatten(dims->batch, sizes, strides);
    std::optional<FlatDim> m = flatten(dims->m, sizes, strides);
    std::optional<FlatDim> n = flatten(dims->n, sizes, strides);
    std::optional<FlatDim> k = flatten(dims->k, sizes, strides);
    if (!batch || !m || !n || !k)
      return;
    // dims {batch, m, n, k}; A {batch, m, k}; B {batch, k, n}; C {batch, m,
    // n}: the layout pipe_rt_gemm_f32 reads.
    SmallVector<int64_t> table{batch->size,   m->size,           n->size,
                               k->size,       batch->strides[0], m->strides[0],
                               k->strides[0], batch->strides[1], k->strides[1],
                               n->strides[1], batch->strides[2], m->strides[2],
                               n->strides[2]};
    emitCall(op, operands, table);
  }

  Value pointerTo(OpBuilder &b, Location loc, Value memref) {
    auto metadata = memref::ExtractStridedMetadataOp::create(b, loc, memref);
    Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
    auto type = cast<MemRefType>(memref.getType());
    Value elementBytes = arith::ConstantIndexOp::create(
        b, loc, type.getElementTypeBitWidth() / 8);
    Value offsetBytes =
        arith::MulIOp::create(b, loc, metadata.getOffset(), elementBytes);
    Value address = arith::AddIOp::create(b, loc, base, offsetBytes);
    Value asInt = arith::IndexCastOp::create(b, loc, b.getI64Type(), address);
    return LLVM::IntToPtrOp::create(
        b, loc, LLVM::LLVMPointerType::get(b.getContext()), asInt);
  }

  void emitCall(linalg::LinalgOp op, ArrayRef<Value> operands,
                ArrayRef<int64_t> table) {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    Location loc = op.getLoc();
    auto ptr = LLVM::LLVMPointerType::get(ctx);

    OpBuilder top(ctx);
    top.setInsertionPointToStart(module.getBody());
    if (!module.lookupSymbol(kGemmFunction)) {
      auto fn = func::FuncOp::create(
          top, loc, kGemmFunction,
          FunctionType::get(ctx, SmallVector<Type>(7, ptr), {}));
      fn.setPrivate();
    }
    auto tableType =
        MemRefType::get({(int64_t)table.size()}, IntegerType::get(ctx, 64));
    std::string name;
    do
      name = "__pipe_gemm_shape_" + std::to_string(counter++);
    while (module.lookupSymbol(name));
    memref::GlobalOp::create(
        top, loc, name, top.getStringAttr("private"), tableType,
        DenseElementsAttr::get(
            RankedTensorType::get(tableType.getShape(),
                                  tableType.getElementType()),
            table),
        /*constant=*/true, /*alignment=*/nullptr);

    OpBuilder b(op);
    Value tableRef = memref::GetGlobalOp::create(b, loc, tableType, name);
    Value tablePtr = pointerTo(b, loc, tableRef);
    auto at = [&](int64_t index) -> Value {
      return LLVM::GEPOp::create(b, loc, ptr, b.getI64Type(), tablePtr,
                                 ArrayRef<LLVM::GEPArg>{(int32_t)index});
    };
    SmallVector<Value> args;
    for (Value operand : operands)
      args.push_back(pointerTo(b, loc, operand));
    args.append({tablePtr, at(4), at(7), at(10)});
    func::CallOp::create(b, loc, kGemmFunction, TypeRange{}, args);
    op->erase();
  }

  unsigned counter = 0;
};

} // namespace
