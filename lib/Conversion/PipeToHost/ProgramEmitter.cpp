//===- ProgramEmitter.cpp - Device programs of calls into the runtime -----===//
//
// Each device's action list becomes a straight-line function of calls into
// the entry points of include/pipe/Runtime/Program.h, with an early exit on
// the first failing call; blocks become the functions the runtime calls.
//
//===----------------------------------------------------------------------===//

#include "LowerToHost.h"

#include "pipe/Dialect/Pipe/Transforms/ScheduleIR.h"
#include "pipe/Runtime/Program.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::pipe;
using namespace mlir::pipe::host_lowering;

/// The runtime header is plain C: the compiler reads the ABI version the
/// runtime it targets was built with from the same definition.
static constexpr int32_t kAbiVersion = PIPE_RT_ABI_VERSION;

func::FuncOp ProgramEmitter::declare(StringRef name, ArrayRef<Type> args,
                                     Type result) {
  if (func::FuncOp fn = declarations.lookup(name))
    return fn;
  OpBuilder b(ctx);
  b.setInsertionPointToEnd(module.getBody());
  auto fn = func::FuncOp::create(b, module.getLoc(), name,
                                 FunctionType::get(ctx, args, {result}));
  fn.setPrivate();
  declarations[name] = fn;
  return fn;
}

Value ProgramEmitter::call(Location loc, StringRef name, ArrayRef<int64_t> ints,
                           bool returnsToken, Value extra) {
  Type i32 = builder.getI32Type(), i64 = builder.getI64Type();
  SmallVector<Type> argTypes{LLVM::LLVMPointerType::get(ctx)};
  SmallVector<Value> args{context};
  for (int64_t v : ints) {
    argTypes.push_back(i32);
    args.push_back(arith::ConstantIntOp::create(builder, loc, i32, v));
  }
  if (extra) {
    argTypes.push_back(extra.getType());
    args.push_back(extra);
  }
  Type resultType = returnsToken ? i64 : i32;
  func::FuncOp callee = declare(name, argTypes, resultType);
  Value result = func::CallOp::create(builder, loc, callee, args).getResult(0);
  Value zero = arith::ConstantIntOp::create(builder, loc, resultType, 0);
  Value failed, status;
  if (returnsToken) {
    // A token is > 0; minus the status otherwise (0 would be a runtime bug,
    // reported as an invalid argument rather than as success).
    failed = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::sle,
                                   result, zero);
    Value negated = arith::SubIOp::create(builder, loc, zero, result);
    Value truncated = arith::TruncIOp::create(builder, loc, i32, negated);
    Value isZero = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq,
                                         result, zero);
    Value invalid = arith::ConstantIntOp::create(builder, loc, i32,
                                                 PIPE_RT_INVALID_ARGUMENT);
    status = arith::SelectOp::create(builder, loc, isZero, invalid, truncated);
  } else {
    failed = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::ne,
                                   result, zero);
    status = result;
  }
  Block *current = builder.getInsertionBlock();
  Block *next = builder.createBlock(current->getParent(),
                                    std::prev(current->getParent()->end()));
  builder.setInsertionPointToEnd(current);
  cf::CondBranchOp::create(builder, loc, failed, exit, ValueRange{status}, next,
                           ValueRange{});
  builder.setInsertionPointToStart(next);
  return result;
}

FailureOr<SmallVector<int64_t>> ProgramEmitter::getArguments(
    Operation &op, bool forwardOnly, const RecomputedSet &recomputed) {
  using Args = FailureOr<SmallVector<int64_t>>;
  auto stage = [&](StringRef name) -> int64_t {
    return manifest.stageId(name);
  };
  auto step = [](std::optional<uint64_t> s) -> int64_t {
    return s.value_or(0);
  };
  auto version = [](std::optional<uint64_t> v) -> int64_t {
    return v ? static_cast<int64_t>(*v) : -1;
  };
  return llvm::TypeSwitch<Operation *, Args>(&op)
      .Case([&](ForwardOp f) -> Args {
        bool keep = !forwardOnly &&
                    !recomputed.contains({f.getStage(), f.getMicrobatch(),
                                          f.getStep().value_or(0)});
        return SmallVector<int64_t>{stage(f.getStage()),
                                    (int64_t)f.getMicrobatch(),
                                    step(f.getStep()),
                                    version(f.getVersion()), keep ? 1 : 0};
      })
      .Case([&](RecomputeOp r) -> Args {
        return SmallVector<int64_t>{stage(r.getStage()),
                                    (int64_t)r.getMicrobatch(),
                                    step(r.getStep()), version(r.getVersion())};
      })
      .Case<BackwardOp, BackwardInputOp, BackwardWeightOp>([&](auto b) -> Args {
        int64_t part = isa<BackwardOp>(op) ? 0 : isa<BackwardInputOp>(op) ? 1 : 2;
        return SmallVector<int64_t>{stage(b.getStage()),
                                    (int64_t)b.getMicrobatch(),
                                    step(b.getStep()), version(b.getVersion()),
                                    part};
      })
      .Case<SendOp, RecvOp>([&](auto t) -> Args {
        return SmallVector<int64_t>{t.getKind() == TransferKind::Gradient,
                                    stage(t.getSrc()), stage(t.getDst()),
                                    (int64_t)t.getMicrobatch(),
                                    step(t.getStep())};
      })
      .Case([&](LoadOp l) -> Args {
        return SmallVector<int64_t>{stage(l.getStage()), step(l.getStep()),
                                    version(l.getVersion())};
      })
      .Case<PushGradOp, HostUpdateOp, ReleaseOp, UpdateOp>(
          [&](auto a) -> Args {
            return SmallVector<int64_t>{stage(a.getStage()), step(a.getStep())};
          })
      .Case<OffloadOp, PrefetchOp>([&](auto a) -> Args {
        return SmallVector<int64_t>{stage(a.getStage()),
                                    (int64_t)a.getMicrobatch(),
                                    step(a.getStep())};
      })
      .Case([&](ReduceGradOp r) -> Args {
        std::optional<unsigned> pid = manifest.paramId(r.getParam());
        if (!pid)
          return r.emitOpError("reduces ")
                 << r.getParamAttr()
                 << ", which no block instance of the graph reads";
        return SmallVector<int64_t>{*pid, step(r.getStep())};
      })
      .Default([](Operation *other) -> Args {
        return other->emitOpError("has no host lowering");
      });
}

LogicalResult ProgramEmitter::emit(ScheduleOp schedule, unsigned scheduleId,
                                   DeviceOp device) {
  Location loc = device.getLoc();
  Type i32 = builder.getI32Type();
  builder.setInsertionPointToEnd(module.getBody());
  std::string name = "pipe_device_" + std::to_string(scheduleId) + "_" +
                     std::to_string(device.getDevice());
  auto fn = func::FuncOp::create(
      builder, loc, name,
      FunctionType::get(ctx, {LLVM::LLVMPointerType::get(ctx)}, {i32}));
  Block *entry = fn.addEntryBlock();
  context = entry->getArgument(0);
  exit = builder.createBlock(&fn.getBody(), fn.getBody().end(), {i32}, {loc});
  func::ReturnOp::create(builder, loc, exit->getArgument(0));
  builder.setInsertionPointToStart(entry);

  // A forward whose activations a later recompute rebuilds keeps only the
  // stage's inputs.
  RecomputedSet recomputed;
  for (auto op : device.getBody().front().getOps<RecomputeOp>())
    recomputed.insert(
        {op.getStage(), op.getMicrobatch(), op.getStep().value_or(0)});

  DenseMap<Value, Value> tokens;
  for (Operation &op : device.getBody().front()) {
    std::optional<ActionKind> kind = getActionKind(&op);
    if (!kind)
      return op.emitOpError("has no host lowering");
    if (auto wait = dyn_cast<WaitOp>(op)) {
      for (Value token : wait.getTokens())
        call(op.getLoc(), getActionEntry(*kind), {}, false,
             tokens.lookup(token));
      continue;
    }
    FailureOr<SmallVector<int64_t>> args =
        getArguments(op, schedule.getForwardOnly(), recomputed);
    if (failed(args))
      return failure();
    Value result = call(op.getLoc(), getActionEntry(*kind), *args,
                        producesToken(*kind));
    if (producesToken(*kind))
      tokens[op.getResult(0)] = result;
  }
  cf::BranchOp::create(
      builder, loc, exit,
      ValueRange{arith::ConstantIntOp::create(builder, loc, i32, 0)});
  return success();
}

void host_lowering::convertBlock(BlockOp block) {
  OpBuilder b(block);
  MLIRContext *ctx = block.getContext();
  auto func = func::FuncOp::create(b, block.getLoc(), block.getSymName(),
                                   block.getFunctionType());
  func.getBody().takeBody(block.getBody());
  for (Block &body : func.getBody())
    if (auto ret = dyn_cast<ReturnOp>(body.getTerminator())) {
      OpBuilder rb(ret);
      func::ReturnOp::create(rb, ret.getLoc(), ret.getOperands());
      ret.erase();
    }
  // Params and stashed activations are shared; bufferization must copy
  // rather than write into them.
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    func.setArgAttr(i, bufferization::BufferizationDialect::kWritableAttrName,
                    BoolAttr::get(ctx, false));
  func->setAttr("llvm.emit_c_interface", UnitAttr::get(ctx));
  func->setAttr("pipe.packed_entry",
                StringAttr::get(ctx, ManifestBuilder::symbolOf(block)));
  block.erase();
}

void host_lowering::emitProgramGlobals(ModuleOp module,
                                       const ManifestBuilder &manifest) {
  OpBuilder b(module.getBodyRegion());
  b.setInsertionPointToStart(module.getBody());
  std::string text = manifest.str();
  text.push_back('\0');
  auto arrayType = LLVM::LLVMArrayType::get(b.getI8Type(), text.size());
  LLVM::GlobalOp::create(b, module.getLoc(), arrayType, /*isConstant=*/true,
                         LLVM::Linkage::External, "pipe_program_manifest",
                         b.getStringAttr(text));
  LLVM::GlobalOp::create(b, module.getLoc(), b.getI32Type(),
                         /*isConstant=*/true, LLVM::Linkage::External,
                         "pipe_program_abi_version",
                         b.getI32IntegerAttr(kAbiVersion));
}
