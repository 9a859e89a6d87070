//===- LinalgToGpu.cpp - Block functions as CUDA device work --------------===//
//
// The CUDA back end keeps the block functions' C interface (the runtime calls
// `pipe_fn_*` with memref descriptors) but the buffers are device pointers,
// so nothing inside a block function may touch memory on the host. This pass
// rewrites every bufferized block function (after deallocation and
// `pipe-linalg-to-gemm`) so that:
//
// - every linalg op is a `gpu.launch` (own mapping, not the upstream
//   parallel-loop mapper: that gives one thread per block for a
//   one-level loop nest and leaves reductions sequential). Elementwise:
//   one thread per point of the parallel loops, reduction loops sequential
//   in the thread. Reductions of one f32/i32 output by add/mul/max/min whose
//   reduction domain is large enough: one thread block per output element,
//   the threads stride over the reduction domain and finish with a
//   block-wide `gpu.all_reduce` (warp shuffles, lowered by
//   convert-gpu-to-nvvm) - softmax and layernorm rows, loss sums, bias
//   gradients and the contractions pipe-linalg-to-gemm left;
// - host loop nests whose only writes are accumulations `A[i] += v`
//   (autodiff's scatter-adds, whose indices may repeat) run one thread per
//   iteration with atomic adds; other host loops that read or write memory
//   run unchanged in a one-thread kernel (correct, serial);
// - allocation is stream-ordered device memory (`gpu.alloc`/`gpu.dealloc`,
//   i.e. mgpuMemAlloc/mgpuMemFree on the function's stream), constants are
//   copied to device memory, `memref.copy` is a device copy;
// - `pipe_rt_gemm_f32` calls become `pipe_rt_cuda_gemm` calls that also pass
//   a cuBLAS compute-type code (include/pipe/Runtime/CUDA.h); the runtime
//   queues them on the calling block's stream, the one mgpuStreamCreate
//   returns inside a block call, so they are ordered with the kernels;
// - all of it is chained on one stream per function: `gpu.wait async`
//   (mgpuStreamCreate) before the first device op, `gpu.wait` (synchronize,
//   destroy) before every return, so a block's results are complete when
//   its `pipe_fn_*` returns.
//
//===----------------------------------------------------------------------===//

#include "pipe/Conversion/Passes.h"

#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::pipe {
#define GEN_PASS_DEF_PIPELINALGTOGPU
#include "pipe/Conversion/Passes.h.inc"
} // namespace mlir::pipe

using namespace mlir;
using namespace mlir::pipe;

namespace {

constexpr StringLiteral kHostGemm = "pipe_rt_gemm_f32";
constexpr StringLiteral kCudaGemm = "pipe_rt_cuda_gemm";

/// Reductions over fewer points than this stay sequential in one thread per
/// output element: a block of mostly idle threads costs more than it saves.
constexpr int64_t kMinParallelReduction = 32;

/// Compute-type codes of pipe_rt_cuda_gemm (docs/cuda-lowering.md).
std::optional<int32_t> gemmComputeCode(StringRef precision) {
  return llvm::StringSwitch<std::optional<int32_t>>(precision)
      .Case("f32", 0)
      .Case("tf32", 1)
      .Case("bf16", 2)
      .Case("f16", 3)
      .Default(std::nullopt);
}

Value indexConstant(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value);
}

/// Splits the linear index `linear` over `sizes` (row-major: the last size
/// varies fastest).
SmallVector<Value> delinearize(OpBuilder &b, Location loc, Value linear,
                               ArrayRef<int64_t> sizes) {
  SmallVector<Value> result(sizes.size());
  for (size_t i = sizes.size(); i-- > 0;) {
    if (i == 0) {
      result[i] = linear;
      break;
    }
    Value size = indexConstant(b, loc, sizes[i]);
    result[i] = arith::RemUIOp::create(b, loc, linear, size);
    linear = arith::DivUIOp::create(b, loc, linear, size);
  }
  return result;
}

/// The reduction of a linalg body `out = combine(out, x)`.
struct Combiner {
  Operation *op = nullptr; // the combining op of the body
  gpu::AllReduceOperation kind;
  TypedAttr identity;
};

/// Recognizes a body whose only use of the output is one associative,
/// commutative combine whose result is yielded.
std::optional<Combiner> matchCombiner(linalg::GenericOp op) {
  if (op.getNumDpsInits() != 1)
    return std::nullopt;
  Block &body = *op.getBlock();
  BlockArgument out = body.getArguments().back();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  Operation *combine = yield.getOperand(0).getDefiningOp();
  if (!combine || combine->getBlock() != &body ||
      combine->getNumOperands() != 2 || !combine->hasOneUse() ||
      !out.hasOneUse() || *out.getUsers().begin() != combine)
    return std::nullopt;
  Type type = out.getType();
  Builder b(op.getContext());
  Combiner result;
  result.op = combine;
  if (type.isF32()) {
    const llvm::fltSemantics &sem = llvm::APFloat::IEEEsingle();
    auto inf = [&](bool negative) {
      return b.getFloatAttr(type, llvm::APFloat::getInf(sem, negative));
    };
    if (isa<arith::AddFOp>(combine)) {
      result.kind = gpu::AllReduceOperation::ADD;
      result.identity = b.getFloatAttr(type, 0.0);
    } else if (isa<arith::MulFOp>(combine)) {
      result.kind = gpu::AllReduceOperation::MUL;
      result.identity = b.getFloatAttr(type, 1.0);
    } else if (isa<arith::MaximumFOp>(combine)) {
      result.kind = gpu::AllReduceOperation::MAXIMUMF;
      result.identity = inf(true);
    } else if (isa<arith::MaxNumFOp>(combine)) {
      result.kind = gpu::AllReduceOperation::MAXNUMF;
      result.identity = inf(true);
    } else if (isa<arith::MinimumFOp>(combine)) {
      result.kind = gpu::AllReduceOperation::MINIMUMF;
      result.identity = inf(false);
    } else if (isa<arith::MinNumFOp>(combine)) {
      result.kind = gpu::AllReduceOperation::MINNUMF;
      result.identity = inf(false);
    } else {
      return std::nullopt;
    }
    return result;
  }
  if (type.isInteger(32)) {
    if (isa<arith::AddIOp>(combine)) {
      result.kind = gpu::AllReduceOperation::ADD;
      result.identity = b.getI32IntegerAttr(0);
    } else if (isa<arith::MaxSIOp>(combine)) {
      result.kind = gpu::AllReduceOperation::MAXSI;
      result.identity = b.getI32IntegerAttr(INT32_MIN);
    } else if (isa<arith::MinSIOp>(combine)) {
      result.kind = gpu::AllReduceOperation::MINSI;
      result.identity = b.getI32IntegerAttr(INT32_MAX);
    } else {
      return std::nullopt;
    }
    return result;
  }
  return std::nullopt;
}

bool touchesMemory(Operation *op) {
  bool found = false;
  op->walk([&](Operation *inner) {
    if (isa<memref::LoadOp, memref::StoreOp, memref::AtomicRMWOp,
            memref::GenericAtomicRMWOp>(inner))
      found = true;
  });
  return found;
}

/// True if `value` or a view of it is returned by `ret`.
bool escapes(Value value, func::ReturnOp ret) {
  SmallVector<Value> work{value};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      if (use.getOwner() == ret.getOperation())
        return true;
      if (auto view = dyn_cast<ViewLikeOpInterface>(use.getOwner()))
        if (view.getViewSource() == v)
          work.push_back(view->getResult(0));
    }
  }
  return false;
}

struct LinalgToGpuPass
    : public pipe::impl::PipeLinalgToGpuBase<LinalgToGpuPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<int32_t> code = gemmComputeCode(gemmPrecision);
    if (!code) {
      mlir::emitError(module.getLoc(),
                      "pipe-linalg-to-gpu: gemm-precision must be f32, "
                      "tf32, bf16 or f16, not '")
          << gemmPrecision << "'";
      return signalPassFailure();
    }
    if (blockSize < 32 || blockSize > 1024 || blockSize % 32 != 0) {
      mlir::emitError(module.getLoc(),
                      "pipe-linalg-to-gpu: block-size must be a multiple "
                      "of 32 between 32 and 1024, not ")
          << static_cast<int64_t>(blockSize.getValue());
      return signalPassFailure();
    }
    computeCode = *code;
    for (auto fn : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (fn.isExternal() || !fn->hasAttr(kPackedEntryAttr))
        continue;
      if (failed(lowerFunction(fn)))
        return signalPassFailure();
    }
    // The host GEMM entry is not called any more.
    if (auto host = module.lookupSymbol<func::FuncOp>(kHostGemm))
      if (SymbolTable::symbolKnownUseEmpty(host, module))
        host.erase();
  }

  //===--------------------------------------------------------------------===//
  // Per function
  //===--------------------------------------------------------------------===//

  /// The state of one function: its stream chain.
  struct FunctionState {
    func::FuncOp fn;
    Value token;                       // last token of the top-level chain
    SmallVector<Value> constantCopies; // device copies of globals to free
  };

  /// The current token, creating the stream (`gpu.wait async`) at the start
  /// of the function on first use.
  Value currentToken(FunctionState &state) {
    if (!state.token) {
      OpBuilder b = OpBuilder::atBlockBegin(&state.fn.getBody().front());
      state.token =
          gpu::WaitOp::create(b, state.fn.getLoc(), tokenType(), ValueRange{})
              .getAsyncToken();
    }
    return state.token;
  }

  Type tokenType() { return gpu::AsyncTokenType::get(&getContext()); }

  LogicalResult lowerFunction(func::FuncOp fn) {
    if (!fn.getBody().hasOneBlock())
      return fn.emitOpError("has several blocks; pipe-linalg-to-gpu expects "
                            "structured control flow (run it before "
                            "convert-scf-to-cf)");
    // Named linalg ops become generics first: one code path.
    IRRewriter rewriter(&getContext());
    SmallVector<linalg::LinalgOp> named;
    fn.walk([&](linalg::LinalgOp op) {
      if (!isa<linalg::GenericOp>(op))
        named.push_back(op);
    });
    for (linalg::LinalgOp op : named) {
      rewriter.setInsertionPoint(op);
      if (failed(linalg::generalizeNamedOp(rewriter, op)))
        return op.emitOpError("has no linalg.generic form; the CUDA "
                              "lowering cannot run it");
    }

    FunctionState state{fn, Value(), {}};
    Block &entry = fn.getBody().front();
    for (Operation &op : llvm::make_early_inc_range(entry))
      if (failed(lowerTopLevelOp(&op, state)))
        return failure();
    return success();
  }

  LogicalResult lowerTopLevelOp(Operation *op, FunctionState &state) {
    Location loc = op->getLoc();
    OpBuilder b(op);
    if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
      FailureOr<Value> token = lowerGeneric(generic, currentToken(state));
      if (failed(token))
        return failure();
      state.token = *token;
      generic.erase();
      return success();
    }
    if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
      auto device = gpu::AllocOp::create(
          b, loc, alloc.getType(), tokenType(), ValueRange{currentToken(state)},
          alloc.getDynamicSizes(), alloc.getSymbolOperands(),
          /*hostShared=*/false);
      state.token = device.getAsyncToken();
      alloc.replaceAllUsesWith(device.getMemref());
      alloc.erase();
      return success();
    }
    if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
      state.token = gpu::DeallocOp::create(b, loc, tokenType(),
                                           ValueRange{currentToken(state)},
                                           dealloc.getMemref())
                        .getAsyncToken();
      dealloc.erase();
      return success();
    }
    if (auto alloca = dyn_cast<memref::AllocaOp>(op))
      return alloca.emitOpError("is host stack memory; block functions on "
                                "the GPU cannot use it");
    if (auto global = dyn_cast<memref::GetGlobalOp>(op))
      return lowerGlobal(global, state);
    if (auto copy = dyn_cast<memref::CopyOp>(op))
      return lowerCopy(copy, state);
    if (auto call = dyn_cast<func::CallOp>(op)) {
      if (call.getCallee() == kHostGemm)
        return lowerGemm(call, state);
      return success();
    }
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      if (!state.token)
        return success();
      for (Value copy : state.constantCopies)
        if (!escapes(copy, ret))
          state.token = gpu::DeallocOp::create(b, loc, tokenType(),
                                               ValueRange{state.token}, copy)
                            .getAsyncToken();
      gpu::WaitOp::create(b, loc, Type(), ValueRange{state.token});
      return success();
    }
    if (auto load = dyn_cast<memref::LoadOp>(op))
      return load.emitOpError("reads device memory on the host; the CUDA "
                              "lowering supports this only inside loops");
    if (op->getNumRegions() == 0 && !touchesMemory(op))
      return success(); // scalar and view arithmetic stays on the host
    bool hasLinalg = false;
    op->walk([&](linalg::LinalgOp) { hasLinalg = true; });
    if (hasLinalg)
      return op->emitOpError("contains linalg ops under host control flow; "
                             "the CUDA lowering does not support that");
    if (touchesMemory(op)) {
      if (op->getNumResults() != 0 && !op->use_empty())
        return op->emitOpError("reads device memory into a host value; the "
                               "CUDA lowering does not support that");
      if (auto loop = dyn_cast<scf::ForOp>(op))
        if (std::optional<ScatterNest> nest = matchScatterNest(loop)) {
          lowerScatterNest(loop, *nest, state);
          return success();
        }
      return wrapSerial(op, state);
    }
    // Host control flow without memory access (conditional deallocation):
    // its deallocations go on the same stream.
    WalkResult walk = op->walk([&](Operation *inner) {
      OpBuilder ib(inner);
      if (auto dealloc = dyn_cast<memref::DeallocOp>(inner)) {
        gpu::DeallocOp::create(ib, inner->getLoc(), tokenType(),
                               ValueRange{currentToken(state)},
                               dealloc.getMemref());
        dealloc.erase();
      } else if (isa<memref::AllocOp, memref::AllocaOp>(inner)) {
        inner->emitOpError("allocates under host control flow; the CUDA "
                           "lowering does not support that");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    return failure(walk.wasInterrupted());
  }

  //===--------------------------------------------------------------------===//
  // Kernels
  //===--------------------------------------------------------------------===//

  /// A launch of `grid` x `threads` blocks depending on `token`, with an
  /// empty body ending in gpu.terminator; the builder is set inside.
  gpu::LaunchOp createLaunch(OpBuilder &b, Location loc, Value token,
                             int64_t grid, int64_t threads) {
    Value one = indexConstant(b, loc, 1);
    auto launch = gpu::LaunchOp::create(
        b, loc, indexConstant(b, loc, grid), one, one,
        indexConstant(b, loc, threads), one, one,
        /*dynamicSharedMemorySize=*/nullptr, tokenType(), ValueRange{token});
    Block &body = launch.getBody().front();
    b.setInsertionPointToEnd(&body);
    gpu::TerminatorOp::create(b, loc);
    b.setInsertionPointToStart(&body);
    return launch;
  }

  /// A launch of `grid` x `threads` whose work is one point per thread: the
  /// linear thread id (block * threads + thread) and the builder inside a
  /// guard `id < points` (the last block may be partial).
  std::pair<gpu::LaunchOp, Value> createPointLaunch(OpBuilder &b, Location loc,
                                                    Value token, int64_t grid,
                                                    int64_t threads,
                                                    int64_t points) {
    gpu::LaunchOp launch = createLaunch(b, loc, token, grid, threads);
    Value linear = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc, launch.getBlockIds().x,
                              indexConstant(b, loc, threads)),
        launch.getThreadIds().x);
    Value inRange =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, linear,
                              indexConstant(b, loc, points));
    auto guard = scf::IfOp::create(b, loc, inRange, /*withElse=*/false);
    b.setInsertionPointToStart(&guard.getThenRegion().front());
    return {launch, linear};
  }

  /// Index values of operand map `map` at loop point `ivs`.
  SmallVector<Value> applyMap(OpBuilder &b, Location loc, AffineMap map,
                              ArrayRef<Value> ivs) {
    SmallVector<Value> indices;
    for (AffineExpr expr : map.getResults()) {
      if (auto dim = dyn_cast<AffineDimExpr>(expr))
        indices.push_back(ivs[dim.getPosition()]);
      else
        indices.push_back(
            affine::expandAffineExpr(b, loc, expr, ivs, ValueRange{}));
    }
    return indices;
  }

  /// Maps the body's block arguments to the operands' values at `ivs`
  /// (loads; scalars as they are), except `skip`.
  void mapOperands(OpBuilder &b, Location loc, linalg::GenericOp op,
                   ArrayRef<Value> ivs, IRMapping &mapping,
                   BlockArgument skip = {}) {
    for (OpOperand &operand : op->getOpOperands()) {
      BlockArgument arg = op.getMatchingBlockArgument(&operand);
      if (arg == skip || arg.use_empty())
        continue;
      Value value = operand.get();
      if (isa<MemRefType>(value.getType()))
        value = memref::LoadOp::create(
            b, loc, value,
            applyMap(b, loc, op.getMatchingIndexingMap(&operand), ivs));
      mapping.map(arg, value);
    }
  }

  /// Clones the body (without the yield) with `linalg.index` replaced by
  /// `ivs`, except `skip`.
  void cloneBody(OpBuilder &b, linalg::GenericOp op, ArrayRef<Value> ivs,
                 IRMapping &mapping, Operation *skip = nullptr) {
    for (Operation &inner : op.getBlock()->without_terminator()) {
      if (&inner == skip)
        continue;
      if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
        mapping.map(index.getResult(), ivs[index.getDim()]);
        continue;
      }
      b.clone(inner, mapping);
    }
  }

  /// Stores the yielded values at `ivs`.
  void storeResults(OpBuilder &b, Location loc, linalg::GenericOp op,
                    ArrayRef<Value> ivs, IRMapping &mapping) {
    auto yield = cast<linalg::YieldOp>(op.getBlock()->getTerminator());
    for (OpOperand &init : op.getDpsInitsMutable()) {
      unsigned i = init.getOperandNumber() - op.getNumDpsInputs();
      memref::StoreOp::create(
          b, loc, mapping.lookupOrDefault(yield.getOperand(i)), init.get(),
          applyMap(b, loc, op.getMatchingIndexingMap(&init), ivs));
    }
  }

  FailureOr<Value> lowerGeneric(linalg::GenericOp op, Value token) {
    if (!op.hasPureBufferSemantics())
      return op.emitOpError("is not bufferized; run pipe-linalg-to-gpu "
                            "after one-shot-bufferize");
    SmallVector<int64_t> sizes = op.getStaticLoopRanges();
    if (llvm::any_of(sizes, ShapedType::isDynamic))
      return op.emitOpError("has dynamic loop sizes; the CUDA lowering "
                            "needs static shapes");
    SmallVector<unsigned> parallel, reduction;
    for (auto [d, kind] : llvm::enumerate(op.getIteratorTypesArray()))
      (kind == utils::IteratorType::parallel ? parallel : reduction)
          .push_back(d);
    int64_t parallelPoints = 1, reductionPoints = 1;
    SmallVector<int64_t> parallelSizes, reductionSizes;
    for (unsigned d : parallel) {
      parallelSizes.push_back(sizes[d]);
      parallelPoints *= sizes[d];
    }
    for (unsigned d : reduction) {
      reductionSizes.push_back(sizes[d]);
      reductionPoints *= sizes[d];
    }
    OpBuilder b(op);
    if (parallelPoints == 0 || reductionPoints == 0)
      return token; // nothing to compute or the outputs stay as they are
    if (!reduction.empty() && reductionPoints >= kMinParallelReduction)
      if (std::optional<Combiner> combiner = matchCombiner(op))
        return lowerBlockReduction(b, op, token, *combiner, sizes, parallel,
                                   reduction, parallelSizes, reductionSizes,
                                   parallelPoints, reductionPoints);
    return lowerElementwise(b, op, token, sizes, parallel, reduction,
                            parallelSizes, parallelPoints);
  }

  /// One thread per point of the parallel loops; reduction loops in order.
  Value lowerElementwise(OpBuilder &b, linalg::GenericOp op, Value token,
                         ArrayRef<int64_t> sizes, ArrayRef<unsigned> parallel,
                         ArrayRef<unsigned> reduction,
                         ArrayRef<int64_t> parallelSizes,
                         int64_t parallelPoints) {
    Location loc = op.getLoc();
    int64_t threads =
        std::min<int64_t>(blockSize, llvm::alignTo(parallelPoints, 32));
    int64_t grid = llvm::divideCeil(parallelPoints, threads);
    auto [launch, linear] =
        createPointLaunch(b, loc, token, grid, threads, parallelPoints);
    SmallVector<Value> ivs(sizes.size());
    for (auto [d, iv] :
         llvm::zip(parallel, delinearize(b, loc, linear, parallelSizes)))
      ivs[d] = iv;
    // Sequential reduction loops, outermost first.
    for (unsigned d : reduction) {
      auto loop = scf::ForOp::create(b, loc, indexConstant(b, loc, 0),
                                     indexConstant(b, loc, sizes[d]),
                                     indexConstant(b, loc, 1));
      ivs[d] = loop.getInductionVar();
      b.setInsertionPoint(loop.getBody()->getTerminator());
    }
    IRMapping mapping;
    mapOperands(b, loc, op, ivs, mapping);
    cloneBody(b, op, ivs, mapping);
    storeResults(b, loc, op, ivs, mapping);
    return launch.getAsyncToken();
  }

  /// One block per output element, a strided loop per thread, then a
  /// block-wide all-reduce; thread 0 combines with the old output value.
  Value lowerBlockReduction(OpBuilder &b, linalg::GenericOp op, Value token,
                            const Combiner &combiner, ArrayRef<int64_t> sizes,
                            ArrayRef<unsigned> parallel,
                            ArrayRef<unsigned> reduction,
                            ArrayRef<int64_t> parallelSizes,
                            ArrayRef<int64_t> reductionSizes,
                            int64_t parallelPoints, int64_t reductionPoints) {
    Location loc = op.getLoc();
    int64_t threads = std::min<int64_t>(
        blockSize, std::max<int64_t>(32, llvm::PowerOf2Ceil(reductionPoints)));
    gpu::LaunchOp launch = createLaunch(b, loc, token, parallelPoints, threads);
    Value tid = launch.getThreadIds().x;
    SmallVector<Value> ivs(sizes.size());
    for (auto [d, iv] :
         llvm::zip(parallel,
                   delinearize(b, loc, launch.getBlockIds().x, parallelSizes)))
      ivs[d] = iv;

    BlockArgument out = op.getBlock()->getArguments().back();
    Value identity = arith::ConstantOp::create(b, loc, combiner.identity);
    auto loop = scf::ForOp::create(
        b, loc, tid, indexConstant(b, loc, reductionPoints),
        indexConstant(b, loc, threads), ValueRange{identity});
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      SmallVector<Value> pointIvs(ivs);
      for (auto [d, iv] :
           llvm::zip(reduction, delinearize(b, loc, loop.getInductionVar(),
                                            reductionSizes)))
        pointIvs[d] = iv;
      IRMapping mapping;
      mapOperands(b, loc, op, pointIvs, mapping, /*skip=*/out);
      mapping.map(out, loop.getRegionIterArg(0));
      cloneBody(b, op, pointIvs, mapping);
      scf::YieldOp::create(b, loc, mapping.lookup(combiner.op->getResult(0)));
    }
    Value total = gpu::AllReduceOp::create(
        b, loc, loop.getResult(0),
        gpu::AllReduceOperationAttr::get(b.getContext(), combiner.kind),
        /*uniform=*/true);
    Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid,
                                        indexConstant(b, loc, 0));
    auto write = scf::IfOp::create(b, loc, first, /*withElse=*/false);
    b.setInsertionPointToStart(&write.getThenRegion().front());
    // The output map does not use the reduction loops: any value will do.
    for (unsigned d : reduction)
      ivs[d] = indexConstant(b, loc, 0);
    OpOperand *init = op.getDpsInitOperand(0);
    Value old = memref::LoadOp::create(
        b, loc, init->get(),
        applyMap(b, loc, op.getMatchingIndexingMap(init), ivs));
    // combine(old, total), keeping the body's operand order.
    IRMapping mapping;
    for (Value operand : combiner.op->getOperands())
      mapping.map(operand, operand == out ? old : total);
    Value result = b.clone(*combiner.op, mapping)->getResult(0);
    memref::StoreOp::create(
        b, loc, result, init->get(),
        applyMap(b, loc, op.getMatchingIndexingMap(init), ivs));
    return launch.getAsyncToken();
  }

  /// A perfect nest of constant-bound loops whose only memory writes are
  /// accumulations `A[i] = A[i] + v` (autodiff's scatter-adds: embedding
  /// and cross-entropy gradients, where indices may repeat).
  struct ScatterNest {
    SmallVector<scf::ForOp> loops;
    SmallVector<int64_t> lowerBounds, tripCounts;
    /// (load, add, store) of each accumulation.
    SmallVector<std::tuple<memref::LoadOp, Operation *, memref::StoreOp>>
        updates;
  };

  std::optional<ScatterNest> matchScatterNest(scf::ForOp outer) {
    ScatterNest nest;
    scf::ForOp loop = outer;
    while (true) {
      std::optional<int64_t> lb = getConstantIntValue(loop.getLowerBound());
      std::optional<int64_t> ub = getConstantIntValue(loop.getUpperBound());
      std::optional<int64_t> step = getConstantIntValue(loop.getStep());
      if (!lb || !ub || !step || *step != 1 || *ub < *lb ||
          loop.getNumRegionIterArgs() != 0)
        return std::nullopt;
      nest.loops.push_back(loop);
      nest.lowerBounds.push_back(*lb);
      nest.tripCounts.push_back(*ub - *lb);
      Block *body = loop.getBody();
      auto inner = dyn_cast<scf::ForOp>(body->front());
      if (inner && body->getOperations().size() == 2) {
        loop = inner;
        continue;
      }
      break;
    }
    Block *body = nest.loops.back().getBody();
    llvm::SmallPtrSet<Operation *, 8> matchedLoads;
    llvm::DenseSet<Value> targets;
    for (Operation &op : body->without_terminator()) {
      if (op.getNumRegions() != 0 ||
          isa<memref::AtomicRMWOp, memref::GenericAtomicRMWOp>(op))
        return std::nullopt;
      auto store = dyn_cast<memref::StoreOp>(op);
      if (!store)
        continue;
      Operation *add = store.getValueToStore().getDefiningOp();
      if (!add || !isa<arith::AddFOp, arith::AddIOp>(add) ||
          !add->hasOneUse() || add->getBlock() != body)
        return std::nullopt;
      memref::LoadOp load;
      for (Value operand : add->getOperands()) {
        auto candidate = operand.getDefiningOp<memref::LoadOp>();
        if (candidate && candidate.getMemref() == store.getMemref() &&
            candidate.getIndices() == store.getIndices() &&
            candidate->hasOneUse())
          load = candidate;
      }
      if (!load)
        return std::nullopt;
      nest.updates.push_back({load, add, store});
      matchedLoads.insert(load);
      targets.insert(store.getMemref());
    }
    if (nest.updates.empty())
      return std::nullopt;
    // The accumulators are not read otherwise (an atomic add is not
    // ordered with plain loads).
    for (Operation &op : body->without_terminator())
      if (auto load = dyn_cast<memref::LoadOp>(op))
        if (targets.contains(load.getMemref()) && !matchedLoads.contains(load))
          return std::nullopt;
    return nest;
  }

  /// One thread per iteration of the nest; each accumulation an atomic add
  /// (the summation order of repeated indices is not fixed).
  void lowerScatterNest(scf::ForOp outer, ScatterNest &nest,
                        FunctionState &state) {
    OpBuilder b(outer);
    Location loc = outer.getLoc();
    int64_t points = 1;
    for (int64_t count : nest.tripCounts)
      points *= count;
    int64_t threads = std::min<int64_t>(
        blockSize, std::max<int64_t>(32, llvm::alignTo(points, 32)));
    int64_t grid = std::max<int64_t>(1, llvm::divideCeil(points, threads));
    auto [launch, linear] =
        createPointLaunch(b, loc, currentToken(state), grid, threads, points);
    IRMapping mapping;
    for (auto [i, iv] :
         llvm::enumerate(delinearize(b, loc, linear, nest.tripCounts))) {
      Value value = iv;
      if (nest.lowerBounds[i] != 0)
        value = arith::AddIOp::create(
            b, loc, iv, indexConstant(b, loc, nest.lowerBounds[i]));
      mapping.map(nest.loops[i].getInductionVar(), value);
    }
    llvm::SmallPtrSet<Operation *, 8> replaced;
    for (auto &[load, add, store] : nest.updates) {
      replaced.insert(load);
      replaced.insert(add);
    }
    for (Operation &op : nest.loops.back().getBody()->without_terminator()) {
      if (replaced.contains(&op))
        continue;
      auto store = dyn_cast<memref::StoreOp>(op);
      if (!store) {
        b.clone(op, mapping);
        continue;
      }
      for (auto &[load, add, update] : nest.updates) {
        if (update != store)
          continue;
        Value addend = add->getOperand(0) == load.getResult()
                           ? add->getOperand(1)
                           : add->getOperand(0);
        SmallVector<Value> indices;
        for (Value index : store.getIndices())
          indices.push_back(mapping.lookupOrDefault(index));
        memref::AtomicRMWOp::create(
            b, loc,
            isa<arith::AddFOp>(add) ? arith::AtomicRMWKind::addf
                                    : arith::AtomicRMWKind::addi,
            mapping.lookupOrDefault(addend), store.getMemref(), indices);
      }
    }
    state.token = launch.getAsyncToken();
    outer.erase();
  }

  /// Runs `op` (host loops over memrefs) unchanged in a one-thread kernel.
  LogicalResult wrapSerial(Operation *op, FunctionState &state) {
    OpBuilder b(op);
    gpu::LaunchOp launch =
        createLaunch(b, op->getLoc(), currentToken(state), 1, 1);
    op->moveBefore(launch.getBody().front().getTerminator());
    state.token = launch.getAsyncToken();
    return success();
  }

  //===--------------------------------------------------------------------===//
  // Copies, constants, GEMMs
  //===--------------------------------------------------------------------===//

  LogicalResult lowerCopy(memref::CopyOp copy, FunctionState &state) {
    OpBuilder b(copy);
    Location loc = copy.getLoc();
    auto source = cast<MemRefType>(copy.getSource().getType());
    auto target = cast<MemRefType>(copy.getTarget().getType());
    if (source.getLayout().isIdentity() && target.getLayout().isIdentity()) {
      state.token = gpu::MemcpyOp::create(b, loc, tokenType(),
                                          ValueRange{currentToken(state)},
                                          copy.getTarget(), copy.getSource())
                        .getAsyncToken();
      copy.erase();
      return success();
    }
    // Strided views: an elementwise copy kernel.
    AffineMap identity = b.getMultiDimIdentityMap(source.getRank());
    auto generic = linalg::GenericOp::create(
        b, loc, TypeRange{}, ValueRange{copy.getSource()},
        ValueRange{copy.getTarget()}, ArrayRef<AffineMap>{identity, identity},
        SmallVector<utils::IteratorType>(source.getRank(),
                                         utils::IteratorType::parallel),
        [](OpBuilder &nb, Location nloc, ValueRange args) {
          linalg::YieldOp::create(nb, nloc, args[0]);
        });
    copy.erase();
    FailureOr<Value> token = lowerGeneric(generic, currentToken(state));
    if (failed(token))
      return failure();
    state.token = *token;
    generic.erase();
    return success();
  }

  /// A constant used by device code gets a device copy; tables only read
  /// through their address (pipe-linalg-to-gemm's shapes, read by the
  /// runtime on the host) stay where they are.
  LogicalResult lowerGlobal(memref::GetGlobalOp global, FunctionState &state) {
    bool hostOnly = llvm::all_of(global->getUsers(), [](Operation *user) {
      return isa<memref::ExtractStridedMetadataOp,
                 memref::ExtractAlignedPointerAsIndexOp>(user);
    });
    if (hostOnly)
      return success();
    auto type = global.getType();
    if (!type.hasStaticShape() || !type.getLayout().isIdentity())
      return global.emitOpError("is a constant of a type the CUDA lowering "
                                "cannot copy to the device");
    OpBuilder b(global);
    b.setInsertionPointAfter(global);
    Location loc = global.getLoc();
    auto alloc = gpu::AllocOp::create(b, loc, type, tokenType(),
                                      ValueRange{currentToken(state)},
                                      ValueRange{}, ValueRange{},
                                      /*hostShared=*/false);
    auto memcpy = gpu::MemcpyOp::create(b, loc, tokenType(),
                                        ValueRange{alloc.getAsyncToken()},
                                        alloc.getMemref(), global.getResult());
    global.getResult().replaceAllUsesExcept(alloc.getMemref(), memcpy);
    state.token = memcpy.getAsyncToken();
    state.constantCopies.push_back(alloc.getMemref());
    return success();
  }

  /// pipe_rt_gemm_f32(a, b, c, dims, as, bs, cs) ->
  /// pipe_rt_cuda_gemm(a, b, c, dims, as, bs, cs, compute). The runtime
  /// queues it on the block call's stream (the one mgpuStreamCreate returned
  /// for this call), after the kernels launched before it.
  LogicalResult lowerGemm(func::CallOp call, FunctionState &state) {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    OpBuilder b(call);
    Location loc = call.getLoc();
    SmallVector<Type> types(call.getOperandTypes());
    types.push_back(b.getI32Type());
    auto fnType = FunctionType::get(ctx, types, {});
    if (auto existing = module.lookupSymbol<func::FuncOp>(kCudaGemm)) {
      if (existing.getFunctionType() != fnType)
        return existing.emitOpError("is not the runtime's GEMM entry of type ")
               << fnType;
    } else {
      OpBuilder top = OpBuilder::atBlockBegin(module.getBody());
      func::FuncOp::create(top, loc, kCudaGemm, fnType).setPrivate();
    }
    SmallVector<Value> args(call.getOperands());
    args.push_back(arith::ConstantIntOp::create(b, loc, computeCode, 32));
    // The stream must exist (and be synchronized before returning) even
    // when the GEMM is the block's only device work.
    (void)currentToken(state);
    func::CallOp::create(b, loc, kCudaGemm, TypeRange{}, args);
    call.erase();
    return success();
  }

  int32_t computeCode = 0;
};

} // namespace
