//===- ProgramEmitter.cpp - Device programs of calls into the runtime -----===//
//
// Each device's action list becomes a straight-line function of calls into
// the entry points of include/pipe/Runtime/Program.h, and for transfers of
// the transport ABI (include/pipe/Runtime/Comm.h), with an early exit on the
// first failing call; blocks become the functions the runtime calls.
//
//===----------------------------------------------------------------------===//

#include "LowerToHost.h"

#include "pipe/Dialect/Pipe/Transforms/ScheduleIR.h"
#include "pipe/Runtime/ManifestSchema.h"
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

SmallVector<Value> ProgramEmitter::withContext(Location loc,
                                               ArrayRef<int64_t> ints) {
  SmallVector<Value> args{context};
  for (int64_t v : ints)
    args.push_back(
        arith::ConstantIntOp::create(builder, loc, builder.getI32Type(), v));
  return args;
}

Value ProgramEmitter::call(Location loc, StringRef name, ValueRange args,
                           bool returnsToken) {
  Type i32 = builder.getI32Type(), i64 = builder.getI64Type();
  Type resultType = returnsToken ? i64 : i32;
  func::FuncOp callee =
      declare(name, llvm::to_vector(args.getTypes()), resultType);
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

namespace {

/// The message that carries values of `types` packed in order, as the
/// runtime describes it (pipe/Runtime/Comm.h): their common element type,
/// or bytes when they differ or are i1.
struct Message {
  int64_t count = 0;
  pipe_rt_dtype dtype = PIPE_RT_DTYPE_BYTES;
};

Message messageOf(ArrayRef<Type> types) {
  auto dtypeOf = [](Type element) {
    if (element.isF32())
      return PIPE_RT_DTYPE_F32;
    if (element.isF64())
      return PIPE_RT_DTYPE_F64;
    if (element.isInteger(32))
      return PIPE_RT_DTYPE_I32;
    if (element.isInteger(64) || element.isIndex())
      return PIPE_RT_DTYPE_I64;
    return PIPE_RT_DTYPE_BYTES;
  };
  Message message;
  int64_t bytes = 0;
  std::optional<pipe_rt_dtype> common;
  for (Type type : types) {
    auto tensor = cast<RankedTensorType>(type);
    Type element = tensor.getElementType();
    int64_t numel = tensor.getNumElements();
    message.count += numel;
    bytes += numel *
             (element.isInteger(1) ? 1 : element.getIntOrFloatBitWidth() / 8);
    pipe_rt_dtype dtype = dtypeOf(element);
    common = !common || *common == dtype ? dtype : PIPE_RT_DTYPE_BYTES;
  }
  message.dtype = common.value_or(PIPE_RT_DTYPE_BYTES);
  if (message.dtype == PIPE_RT_DTYPE_BYTES)
    message.count = bytes;
  return message;
}

bool isTransfer(Operation &op) { return isa<SendOp, RecvOp>(op); }

bool usesComm(Operation &op) {
  return isa<SendOp, RecvOp, ReduceGradOp, ReduceBucketOp>(op);
}

} // namespace

FailureOr<Value> ProgramEmitter::emitTransfer(Operation &op, ActionKind kind) {
  Location loc = op.getLoc();
  bool sending = isa<SendOp>(op);
  auto fields = [](auto t) {
    return std::make_tuple(t.getKind() == TransferKind::Gradient, t.getSrc(),
                           t.getDst(), (int64_t)t.getMicrobatch(),
                           (int64_t)t.getStep().value_or(0));
  };
  auto [gradient, srcName, dstName, mb, step] =
      sending ? fields(cast<SendOp>(op)) : fields(cast<RecvOp>(op));
  unsigned src = manifest.stageId(srcName), dst = manifest.stageId(dstName);
  // Activations travel along edge (src, dst), gradients back along it.
  ArrayRef<Type> types =
      gradient ? manifest.edgeTypes(dst, src) : manifest.edgeTypes(src, dst);
  if (types.empty())
    return op.emitOpError("moves values along no edge of the stage graph");
  Message message = messageOf(types);
  call(loc, sending ? "pipe_rt_comm_send_buffer" : "pipe_rt_comm_recv_buffer",
       llvm::to_vector(
           llvm::concat<Value>(withContext(loc, {gradient, src, dst, mb, step}),
                               ValueRange{bufferSlot})),
       /*returnsToken=*/false);
  Value buffer = loadBuffer(loc);
  int64_t peer = manifest.stageDevice(sending ? dst : src);
  Value args[] = {
      comm, buffer,
      arith::ConstantIntOp::create(builder, loc, builder.getI64Type(),
                                   message.count),
      arith::ConstantIntOp::create(builder, loc, builder.getI32Type(),
                                   message.dtype),
      arith::ConstantIntOp::create(builder, loc, builder.getI32Type(), peer)};
  return call(loc, getActionEntry(kind), args, /*returnsToken=*/true);
}

Value ProgramEmitter::loadBuffer(Location loc) {
  return LLVM::LoadOp::create(builder, loc, LLVM::LLVMPointerType::get(ctx),
                              bufferSlot);
}

LogicalResult ProgramEmitter::emitReduceGrad(ReduceGradOp op, ActionKind kind) {
  Location loc = op.getLoc();
  std::optional<unsigned> pid = manifest.paramId(op.getParam());
  if (!pid)
    return op.emitOpError("reduces ")
           << op.getParamAttr()
           << ", which no block instance of the graph reads";
  call(loc, "pipe_rt_comm_grad_buffer",
       llvm::to_vector(llvm::concat<Value>(
           withContext(loc, {*pid, (int64_t)op.getStep().value_or(0)}),
           ValueRange{bufferSlot})),
       /*returnsToken=*/false);
  Message message = messageOf(manifest.paramType(*pid));
  Value args[] = {comm, loadBuffer(loc),
                  arith::ConstantIntOp::create(
                      builder, loc, builder.getI64Type(), message.count),
                  arith::ConstantIntOp::create(
                      builder, loc, builder.getI32Type(), message.dtype)};
  call(loc, getActionEntry(kind), args, /*returnsToken=*/false);
  return success();
}

FailureOr<Value> ProgramEmitter::emitReduceBucket(ReduceBucketOp op,
                                                  ActionKind kind) {
  Location loc = op.getLoc();
  SmallVector<int32_t> ids;
  SmallVector<Type> types;
  for (auto ref : op.getParams().getAsRange<FlatSymbolRefAttr>()) {
    std::optional<unsigned> pid = manifest.paramId(ref.getValue());
    if (!pid)
      return op.emitOpError("reduces ")
             << ref << ", which no block instance of the graph reads";
    ids.push_back(*pid);
    types.push_back(manifest.paramType(*pid));
  }
  // The param ids, a constant array the call points at.
  std::string name = programName + "_bucket_" + std::to_string(numBuckets++);
  auto i32 = builder.getI32Type();
  auto arrayType = LLVM::LLVMArrayType::get(i32, ids.size());
  {
    OpBuilder b(ctx);
    b.setInsertionPointToEnd(module.getBody());
    LLVM::GlobalOp::create(
        b, loc, arrayType, /*isConstant=*/true, LLVM::Linkage::Internal, name,
        DenseElementsAttr::get(
            RankedTensorType::get({int64_t(ids.size())}, i32),
            ArrayRef<int32_t>(ids)));
  }
  Value paramIds = LLVM::AddressOfOp::create(
      builder, loc, LLVM::LLVMPointerType::get(ctx), name);
  call(loc, "pipe_rt_comm_bucket_buffer",
       ValueRange{context, paramIds,
                  arith::ConstantIntOp::create(builder, loc, i32, ids.size()),
                  arith::ConstantIntOp::create(builder, loc, i32,
                                               op.getStep().value_or(0)),
                  bufferSlot},
       /*returnsToken=*/false);
  Message message = messageOf(types);
  Value args[] = {
      comm, loadBuffer(loc),
      arith::ConstantIntOp::create(builder, loc, builder.getI64Type(),
                                   message.count),
      arith::ConstantIntOp::create(builder, loc, i32, message.dtype)};
  return call(loc, getActionEntry(kind), args, /*returnsToken=*/true);
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
        return SmallVector<int64_t>{
            stage(f.getStage()), (int64_t)f.getMicrobatch(),
            step(f.getStep()),   version(f.getVersion()),
            keep ? 1 : 0,        (int64_t)f.getPredict().value_or(0)};
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
      .Case([&](LoadOp l) -> Args {
        return SmallVector<int64_t>{stage(l.getStage()), step(l.getStep()),
                                    version(l.getVersion())};
      })
      .Case<PushGradOp, HostReduceOp, HostUpdateOp, ReleaseOp, UpdateOp>(
          [&](auto a) -> Args {
            return SmallVector<int64_t>{stage(a.getStage()), step(a.getStep())};
          })
      .Case<OffloadOp, PrefetchOp>([&](auto a) -> Args {
        return SmallVector<int64_t>{stage(a.getStage()),
                                    (int64_t)a.getMicrobatch(),
                                    step(a.getStep())};
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
  programName = name;
  numBuckets = 0;
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

  // Transfers and reductions go through the device's communicator; their
  // buffers come back through one slot.
  Block &actions = device.getBody().front();
  if (llvm::any_of(actions, usesComm)) {
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    comm = func::CallOp::create(builder, loc,
                                declare("pipe_rt_comm_of", {ptr}, ptr),
                                ValueRange{context})
               .getResult(0);
    bufferSlot = LLVM::AllocaOp::create(
        builder, loc, ptr, ptr,
        arith::ConstantIntOp::create(builder, loc, builder.getI64Type(), 1));
  }

  DenseMap<Value, Value> tokens;
  for (Operation &op : actions) {
    std::optional<ActionKind> kind = getActionKind(&op);
    if (!kind)
      return op.emitOpError("has no host lowering");
    if (auto wait = dyn_cast<WaitOp>(op)) {
      for (Value token : wait.getTokens())
        call(op.getLoc(), getActionEntry(*kind),
             ValueRange{context, tokens.lookup(token)}, false);
      continue;
    }
    if (isTransfer(op)) {
      // Transfers issued in a row form one group (NCCL needs the send and
      // recv of an exchange between two devices in one).
      bool grouped = (op.getPrevNode() && isTransfer(*op.getPrevNode())) ||
                     (op.getNextNode() && isTransfer(*op.getNextNode()));
      if (grouped && !(op.getPrevNode() && isTransfer(*op.getPrevNode())))
        call(op.getLoc(), "pipe_rt_comm_group_start", ValueRange{comm}, false);
      FailureOr<Value> token = emitTransfer(op, *kind);
      if (failed(token))
        return failure();
      tokens[op.getResult(0)] = *token;
      if (grouped && !(op.getNextNode() && isTransfer(*op.getNextNode())))
        call(op.getLoc(), "pipe_rt_comm_group_end", ValueRange{comm}, false);
      continue;
    }
    if (auto reduce = dyn_cast<ReduceGradOp>(op)) {
      if (failed(emitReduceGrad(reduce, *kind)))
        return failure();
      continue;
    }
    if (auto bucket = dyn_cast<ReduceBucketOp>(op)) {
      FailureOr<Value> token = emitReduceBucket(bucket, *kind);
      if (failed(token))
        return failure();
      tokens[bucket.getToken()] = *token;
      continue;
    }
    FailureOr<SmallVector<int64_t>> args =
        getArguments(op, schedule.getForwardOnly(), recomputed);
    if (failed(args))
      return failure();
    Value result = call(op.getLoc(), getActionEntry(*kind),
                        withContext(op.getLoc(), *args), producesToken(*kind));
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
  // A reserved prefix: a block named like a C library function (`exp`,
  // `log`, `tanh` at op granularity) would otherwise define that symbol,
  // which the libm call of an intrinsic binds to, and which the dynamic
  // linker resolves to libm's in a shared artifact.
  auto func = func::FuncOp::create(
      b, block.getLoc(), (kBlockFunctionPrefix + block.getSymName()).str(),
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
  func->setAttr(kPackedEntryAttr,
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
  LLVM::GlobalOp::create(
      b, module.getLoc(), b.getI64Type(), /*isConstant=*/true,
      LLVM::Linkage::External, "pipe_program_manifest_checksum",
      b.getI64IntegerAttr(int64_t(pipe_rt::manifestChecksum(text.c_str()))));
  LLVM::GlobalOp::create(b, module.getLoc(), b.getI32Type(),
                         /*isConstant=*/true, LLVM::Linkage::External,
                         "pipe_program_abi_version",
                         b.getI32IntegerAttr(kAbiVersion));
}
