//===- LowerToHost.cpp - Scheduled pipe IR to host code and a manifest ----===//
//
// The compiler half of the compiler/runtime split. Blocks become functions
// the runtime calls; each device's action list becomes a function of calls
// into the runtime; everything the runtime must know about the graph, the
// stages and the schedules is written into one manifest string through the
// shared writer of include/pipe/Runtime/ManifestSchema.h.
//
//===----------------------------------------------------------------------===//

#include "pipe/Autodiff/Autodiff.h"
#include "pipe/Conversion/Passes.h"
#include "pipe/Dialect/Pipe/IR/StageGraph.h"
#include "pipe/Dialect/Pipe/Transforms/IndexRanges.h"
#include "pipe/Dialect/Pipe/Transforms/ParamData.h"
#include "pipe/Dialect/Pipe/Transforms/ScheduleIR.h"
#include "pipe/Runtime/ManifestSchema.h"
#include "pipe/Runtime/Program.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::pipe {
#define GEN_PASS_DEF_PIPELOWERTOHOST
#include "pipe/Conversion/Passes.h.inc"
} // namespace mlir::pipe

using namespace mlir;
using namespace mlir::pipe;
using namespace mlir::pipe::autodiff;

namespace {

/// The runtime header is plain C: the compiler reads the ABI version the
/// runtime it targets was built with from the same definition.
constexpr int32_t kAbiVersion = PIPE_RT_ABI_VERSION;

/// Manifest spelling of an element type, or "" if the runtime has none.
StringRef dtypeName(Type type) {
  if (type.isF32())
    return "f32";
  if (type.isF64())
    return "f64";
  if (type.isInteger(64) || type.isIndex())
    return "i64";
  if (type.isInteger(32))
    return "i32";
  if (type.isInteger(1))
    return "i1";
  return "";
}

bool hasWhitespace(StringRef name) {
  return name.empty() || name.find_first_of(" \t\r\n") != StringRef::npos;
}

/// Numbering of everything the manifest names, built from one graph.
class ManifestBuilder {
public:
  ManifestBuilder(ModuleOp module, SymbolTable &symbols)
      : module(module), symbols(symbols) {}

  LogicalResult addGraph(GraphOp graph, const StageGraph &stages);
  LogicalResult addSchedule(ScheduleOp schedule, PlacementOp placement,
                            const StageGraph &stages, uint64_t capacity);

  std::string str() const { return writer.str(); }

  /// Stage id of a stage symbol, param id of a param symbol.
  unsigned stageId(StringRef name) const { return stageIds.lookup(name); }
  std::optional<unsigned> paramId(StringRef name) const {
    auto it = paramIds.find(name);
    if (it == paramIds.end())
      return std::nullopt;
    return it->second;
  }
  /// Every block whose function the runtime calls.
  ArrayRef<BlockOp> getFunctions() const { return functions; }
  static std::string symbolOf(BlockOp block) {
    return ("pipe_fn_" + block.getSymName()).str();
  }

private:
  FailureOr<unsigned> typeId(Operation *user, Type type);
  FailureOr<int> functionId(Operation *user, BlockOp block);

  ModuleOp module;
  SymbolTable &symbols;
  pipe_rt::ManifestWriter writer;
  llvm::MapVector<Type, unsigned> types;
  llvm::StringMap<unsigned> paramIds, stageIds;
  DenseMap<Value, unsigned> valueIds;
  SmallVector<BlockOp> functions;
  DenseMap<Operation *, int> functionIds;
  unsigned numSchedules = 0;
};

FailureOr<unsigned> ManifestBuilder::typeId(Operation *user, Type type) {
  auto it = types.find(type);
  if (it != types.end())
    return it->second;
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape() ||
      dtypeName(tensor.getElementType()).empty())
    return user->emitOpError("uses ")
           << type
           << ", which the runtime cannot hold (static tensors of f32, f64, "
              "i64, i32 or i1 only)";
  unsigned id = types.size();
  types[type] = id;
  writer.type(id, dtypeName(tensor.getElementType()).str(),
              tensor.getShape().vec());
  return id;
}

FailureOr<int> ManifestBuilder::functionId(Operation *user, BlockOp block) {
  if (hasWhitespace(block.getSymName()))
    return user->emitOpError("block name '")
           << block.getSymName() << "' cannot be exported";
  auto known = functionIds.find(block);
  if (known != functionIds.end())
    return known->second;
  std::vector<int64_t> args, results;
  for (Type type : block.getArgumentTypes()) {
    FailureOr<unsigned> id = typeId(block, type);
    if (failed(id))
      return failure();
    args.push_back(*id);
  }
  for (Type type : block.getResultTypes()) {
    FailureOr<unsigned> id = typeId(block, type);
    if (failed(id))
      return failure();
    results.push_back(*id);
  }
  int id = functions.size();
  functions.push_back(block);
  functionIds[block] = id;
  writer.function(id, symbolOf(block), args, results);
  return id;
}

/// A manifest list of ids or indices.
template <typename Range> std::vector<int64_t> toList(const Range &range) {
  return std::vector<int64_t>(llvm::adl_begin(range), llvm::adl_end(range));
}

LogicalResult ManifestBuilder::addGraph(GraphOp graph,
                                        const StageGraph &stages) {
  // Parameters in module order.
  llvm::StringSet<> used;
  for (RunOp run : graph.getBody().getOps<RunOp>())
    for (Attribute ref : run.getParams())
      used.insert(cast<FlatSymbolRefAttr>(ref).getValue());
  for (ParamOp param : module.getOps<ParamOp>()) {
    if (!used.contains(param.getSymName()))
      continue;
    if (hasWhitespace(param.getSymName()))
      return param.emitOpError("name cannot be exported");
    FailureOr<unsigned> tid = typeId(param, param.getType());
    if (failed(tid))
      return failure();
    unsigned id = paramIds.size();
    paramIds[param.getSymName()] = id;
    bool trainable = !param.getFrozen() &&
                     isa<FloatType>(param.getTensorType().getElementType());
    writer.param(id, param.getSymName().str(), *tid, trainable);
  }

  auto addValue = [&](Operation *user, Value value) -> LogicalResult {
    FailureOr<unsigned> tid = typeId(user, value.getType());
    if (failed(tid))
      return failure();
    unsigned id = valueIds.size();
    valueIds[value] = id;
    writer.value(id, *tid);
    return success();
  };
  // The range of each integer input, which the data loader checks.
  if (failed(inferIndexRanges(graph, symbols)))
    return failure();
  for (BlockArgument arg : graph.getBody().front().getArguments()) {
    if (failed(addValue(graph, arg)))
      return failure();
    writer.input(arg.getArgNumber(), valueIds[arg]);
    FailureOr<std::optional<IndexRange>> range =
        getIndexRange(graph, arg.getArgNumber());
    if (failed(range))
      return failure();
    if (*range)
      writer.range(arg.getArgNumber(), (*range)->bound,
                   toList((*range)->exempt));
  }

  unsigned runId = 0;
  DenseMap<Operation *, unsigned> runIds;
  for (RunOp run : graph.getBody().getOps<RunOp>()) {
    auto block = symbols.lookup<BlockOp>(run.getCallee());
    if (!block)
      return run.emitOpError("'")
             << run.getCallee() << "' does not reference a pipe.block";
    if (hasWhitespace(run.getInstance()))
      return run.emitOpError("instance name cannot be exported");
    for (Value result : run.getResults())
      if (failed(addValue(run, result)))
        return failure();
    FailureOr<int> forward = functionId(run, block);
    if (failed(forward))
      return failure();
    int backward[2] = {-1, -1};
    static constexpr StringLiteral backwardAttrs[2] = {kBackwardInputAttr,
                                                       kBackwardWeightAttr};
    for (unsigned i = 0; i < 2; ++i) {
      auto ref = block->getAttrOfType<FlatSymbolRefAttr>(backwardAttrs[i]);
      if (!ref)
        continue;
      auto backwardBlock = symbols.lookup<BlockOp>(ref.getValue());
      if (!backwardBlock)
        return block.emitOpError("backward block ") << ref << " is missing";
      FailureOr<int> id = functionId(run, backwardBlock);
      if (failed(id))
        return failure();
      backward[i] = *id;
    }
    if (auto ref = block->getAttrOfType<FlatSymbolRefAttr>(kBackwardAttr)) {
      auto fusedBlock = symbols.lookup<BlockOp>(ref.getValue());
      if (!fusedBlock)
        return block.emitOpError("backward block ") << ref << " is missing";
      FailureOr<int> id = functionId(run, fusedBlock);
      if (failed(id))
        return failure();
      writer.fused(runId, *id);
    }
    pipe_rt::ManifestRun record;
    record.id = runId;
    record.name = run.getInstance().str();
    record.forward = *forward;
    record.bwdInput = backward[0];
    record.bwdWeight = backward[1];
    record.numSaved = getNumSavedResults(block);
    for (Attribute ref : run.getParams()) {
      std::optional<unsigned> pid =
          paramId(cast<FlatSymbolRefAttr>(ref).getValue());
      if (!pid)
        return run.emitOpError("binds unknown parameter ") << ref;
      record.params.push_back(*pid);
    }
    for (Value input : run.getInputs())
      record.inputs.push_back(valueIds.lookup(input));
    for (Value result : run.getResults().drop_back(record.numSaved))
      record.outputs.push_back(valueIds.lookup(result));
    record.diffInputs = toList(getDifferentiableInputs(block));
    record.diffResults = toList(getDifferentiableResults(block));
    record.diffParams = toList(getDifferentiableParams(block));
    writer.run(record);
    runIds[run] = runId++;
  }

  Operation *terminator = graph.getBody().front().getTerminator();
  if (terminator->getNumOperands() == 1) {
    Value loss = terminator->getOperand(0);
    auto type = cast<RankedTensorType>(loss.getType());
    if (type.getRank() == 0 && type.getElementType().isF32()) {
      double seed = 1.0;
      if (auto attr = graph.getResultAttrOfType<FloatAttr>(0, kLossSeedAttr))
        seed = attr.getValueAsDouble();
      writer.loss(valueIds.lookup(loss), seed);
    }
  }

  for (unsigned s = 0; s < stages.getNumStages(); ++s) {
    StageOp stage = stages.getStage(s);
    if (hasWhitespace(stage.getSymName()))
      return stage.emitOpError("name cannot be exported");
    stageIds[stage.getSymName()] = s;
    std::vector<int64_t> runs;
    for (RunOp run : graph.getBody().getOps<RunOp>())
      if (stages.getStageOf(run) == s)
        runs.push_back(runIds.lookup(run));
    writer.stage(s, stage.getSymName().str(), stage.getDevice(), runs);
    for (unsigned consumer : stages.getConsumers(s)) {
      std::vector<int64_t> values;
      for (Value v : stages.getCrossingValues(s, consumer))
        values.push_back(valueIds.lookup(v));
      writer.edge(s, consumer, values);
    }
  }
  return success();
}

/// The param ids read by each stage of `stages`.
SmallVector<llvm::SetVector<unsigned>>
paramsByStage(GraphOp graph, const StageGraph &stages,
              const ManifestBuilder &manifest) {
  SmallVector<llvm::SetVector<unsigned>> result(stages.getNumStages());
  for (RunOp run : graph.getBody().getOps<RunOp>())
    for (Attribute ref : run.getParams())
      if (auto pid = manifest.paramId(cast<FlatSymbolRefAttr>(ref).getValue()))
        result[stages.getStageOf(run)].insert(*pid);
  return result;
}

LogicalResult ManifestBuilder::addSchedule(ScheduleOp schedule,
                                           PlacementOp placement,
                                           const StageGraph &stages,
                                           uint64_t capacity) {
  if (hasWhitespace(schedule.getSymName()) || hasWhitespace(schedule.getKind()))
    return schedule.emitOpError("name or kind cannot be exported");
  unsigned id = numSchedules++;
  auto graph = symbols.lookup<GraphOp>(placement.getGraph());
  SmallVector<llvm::SetVector<unsigned>> stageParamIds =
      paramsByStage(graph, stages, *this);

  writer.schedule(id, schedule.getSymName().str(), schedule.getKind().str(),
                  placement.getDevices(), schedule.getMicrobatches(),
                  schedule.getSteps(), schedule.getForwardOnly());
  if (schedule.getWeightVersions())
    writer.versions(id);
  for (DeviceOp device : schedule.getBody().getOps<DeviceOp>())
    writer.device(id, device.getDevice(), capacity,
                  "pipe_device_" + std::to_string(id) + "_" +
                      std::to_string(device.getDevice()));

  llvm::SetVector<unsigned> psStages;
  for (DeviceOp device : schedule.getBody().getOps<DeviceOp>()) {
    // The last stage on this device to update a param owns its update, so
    // that tied parameters are updated once, after every contribution.
    DenseMap<unsigned, unsigned> owner;
    for (Operation &op : device.getBody().front()) {
      if (isa<LoadOp>(op))
        psStages.insert(stageId(cast<LoadOp>(op).getStage()));
      FlatSymbolRefAttr stage;
      if (auto update = dyn_cast<UpdateOp>(op))
        stage = update.getStageAttr();
      else if (auto update = dyn_cast<HostUpdateOp>(op))
        stage = update.getStageAttr();
      if (!stage)
        continue;
      unsigned s = stageId(stage.getValue());
      for (unsigned pid : stageParamIds[s])
        owner[pid] = s;
    }
    llvm::MapVector<unsigned, SmallVector<unsigned>> owned;
    for (unsigned s = 0; s < stages.getNumStages(); ++s)
      for (unsigned pid : stageParamIds[s])
        if (owner.count(pid) && owner[pid] == s)
          owned[s].push_back(pid);
    for (auto &[s, pids] : owned)
      writer.owns(id, s, toList(pids));
  }
  for (unsigned s : psStages)
    writer.ps(id, s);
  return success();
}

/// Emits the device programs: straight-line calls with an early exit.
class ProgramEmitter {
public:
  ProgramEmitter(ModuleOp module, const ManifestBuilder &manifest)
      : module(module), manifest(manifest), ctx(module.getContext()),
        builder(ctx) {}

  LogicalResult emit(ScheduleOp schedule, unsigned scheduleId, DeviceOp device);

private:
  /// (stage, micro-batch, step) of every recompute of a device.
  using RecomputedSet = llvm::DenseSet<std::tuple<StringRef, int64_t, int64_t>>;
  /// The integer arguments of `op`'s runtime entry point after the context,
  /// in the order include/pipe/Runtime/Program.h declares them.
  FailureOr<SmallVector<int64_t>>
  getArguments(Operation &op, bool forwardOnly,
               const RecomputedSet &recomputed);
  func::FuncOp declare(StringRef name, ArrayRef<Type> args, Type result);
  /// Calls `name`; exits with its status unless it is zero (or, for token
  /// returning calls, positive). Returns the call's result.
  Value call(Location loc, StringRef name, ArrayRef<int64_t> ints,
             bool returnsToken, Value extra = {});

  ModuleOp module;
  const ManifestBuilder &manifest;
  MLIRContext *ctx;
  OpBuilder builder;
  Value context;
  Block *exit = nullptr;
  llvm::StringMap<func::FuncOp> declarations;
};

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
      .Case<LoadOp, PushGradOp, HostUpdateOp, ReleaseOp, UpdateOp>(
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

/// Writes the initial value of every param the manifest names into one
/// safetensors file, so the runtime reads a single weights file.
LogicalResult writeWeights(ModuleOp module, const ManifestBuilder &manifest,
                           StringRef path) {
  SafetensorsWriter writer;
  llvm::StringMap<std::unique_ptr<SafetensorsFile>> sources;
  for (ParamOp param : module.getOps<ParamOp>()) {
    if (!manifest.paramId(param.getSymName()))
      continue;
    RankedTensorType type = param.getTensorType();
    std::optional<SafetensorsDType> dtype =
        getSafetensorsDType(type.getElementType());
    if (!dtype)
      return param.emitOpError("has element type ")
             << type.getElementType() << ", which safetensors cannot hold";
    std::vector<char> storage;
    std::optional<ArrayRef<char>> bytes;
    if (std::optional<ElementsAttr> value = param.getInitialValue()) {
      bytes = getRawBytes(*value, storage);
      if (!bytes)
        return param.emitOpError("initial value bytes are not available "
                                 "(missing dense_resource blob?)");
    } else if (std::optional<StringRef> file = param.getExternalFile()) {
      auto &source = sources[*file];
      if (!source) {
        llvm::Expected<SafetensorsFile> opened = SafetensorsFile::open(*file);
        if (!opened)
          return param.emitOpError("cannot read its weights: ")
                 << llvm::toString(opened.takeError());
        source = std::make_unique<SafetensorsFile>(std::move(*opened));
      }
      const SafetensorsTensor *tensor = source->lookup(*param.getExternalKey());
      if (!tensor || tensor->dtype != *dtype ||
          ArrayRef<int64_t>(tensor->shape) != type.getShape())
        return param.emitOpError("external tensor '")
               << *param.getExternalKey() << "' of " << *file
               << (tensor ? " is " + describeTensor(*tensor)
                          : std::string(" is missing"))
               << ", expected " << type;
      bytes = tensor->data;
    } else {
      return param.emitOpError("has no initial value; lift it with values "
                               "(or bind it with --pipe-load-params) before "
                               "writing the weights file");
    }
    writer.addTensor(param.getSymName(), *dtype, type.getShape(), *bytes);
  }
  // The error names the file.
  if (llvm::Error err = writer.writeAtomically(path))
    return module.emitError() << llvm::toString(std::move(err));
  return success();
}

/// pipe.block -> func.func with read-only arguments and a C interface.
void convertBlock(BlockOp block) {
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

struct LowerToHostPass
    : public pipe::impl::PipeLowerToHostBase<LowerToHostPass> {
  using Base::Base;

  /// Every action becomes a call in one straight-line function per device,
  /// and the lowering's time on those grows faster than linearly (30k
  /// actions took 20 s of CPU before LLVM even started): 100000
  /// micro-batches would compile for many minutes before anything says so.
  LogicalResult checkCompileSize(ArrayRef<ScheduleOp> schedules) {
    if (maxActions == 0)
      return success();
    uint64_t actions = 0;
    for (ScheduleOp schedule : schedules)
      ScheduleOp(schedule).walk([&](Operation *op) {
        actions += isa_and_nonnull<DeviceOp>(op->getParentOp());
      });
    if (actions <= maxActions)
      return success();
    return ScheduleOp(schedules.front())
               .emitOpError("and the other schedules have ")
           << actions << " actions in all, more than the "
           << uint64_t(maxActions)
           << " this lowering accepts (max-actions; each action becomes host "
              "code): use fewer micro-batches or stages";
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<ScheduleOp> scheduleOps =
        llvm::to_vector(module.getOps<ScheduleOp>());
    if (scheduleOps.empty()) {
      // Point at the graph that lacks a schedule: an implicit module has no
      // line in the file.
      auto graphs = module.getOps<GraphOp>();
      Operation *where =
          graphs.empty() ? module.getOperation() : *graphs.begin();
      where->emitError("--pipe-lower-to-host needs a pipe.schedule; run "
                       "--pipe-schedule first");
      return signalPassFailure();
    }
    if (failed(checkCompileSize(scheduleOps)))
      return signalPassFailure();
    ManifestBuilder manifest(module, symbols);
    GraphOp graph;
    PlacementOp firstPlacement;
    std::optional<StageGraph> stages;
    SmallVector<std::pair<ScheduleOp, StageGraph>> scheduled;
    for (ScheduleOp schedule : scheduleOps) {
      auto placement = symbols.lookup<PlacementOp>(schedule.getPlacement());
      if (!placement) {
        schedule.emitOpError("references unknown placement ")
            << schedule.getPlacementAttr();
        return signalPassFailure();
      }
      auto placed = symbols.lookup<GraphOp>(placement.getGraph());
      if (!placed) {
        placement.emitOpError("references unknown graph ")
            << placement.getGraphAttr();
        return signalPassFailure();
      }
      FailureOr<StageGraph> built = StageGraph::build(placement, placed);
      if (failed(built))
        return signalPassFailure();
      if (!graph) {
        graph = placed;
        firstPlacement = placement;
        if (failed(manifest.addGraph(graph, *built)))
          return signalPassFailure();
      } else if (placed != graph) {
        schedule.emitOpError("places graph @")
            << placed.getSymName() << ", but an earlier schedule places @"
            << graph.getSymName() << "; one program runs one graph";
        return signalPassFailure();
      } else if (placement != firstPlacement &&
                 !samePlacement(placement, firstPlacement)) {
        schedule.emitOpError("uses placement @")
            << placement.getSymName() << ", which differs from @"
            << firstPlacement.getSymName()
            << "; the schedules of one program share their stages";
        return signalPassFailure();
      }
      if (!schedule.getForwardOnly() && failed(checkDifferentiated(graph)))
        return signalPassFailure();
      scheduled.push_back({schedule, std::move(*built)});
    }
    for (auto &[schedule, stageGraph] : scheduled) {
      auto placement = symbols.lookup<PlacementOp>(schedule.getPlacement());
      if (failed(manifest.addSchedule(schedule, placement, stageGraph,
                                      deviceMemoryBytes)))
        return signalPassFailure();
    }
    if (!weights.empty() && failed(writeWeights(module, manifest, weights)))
      return signalPassFailure();
    ProgramEmitter emitter(module, manifest);
    for (auto [id, entry] : llvm::enumerate(scheduled))
      for (DeviceOp device : entry.first.getBody().getOps<DeviceOp>())
        if (failed(emitter.emit(entry.first, id, device)))
          return signalPassFailure();

    // Only the functions the runtime calls survive.
    llvm::DenseSet<Operation *> called;
    for (BlockOp block : manifest.getFunctions())
      called.insert(block);
    for (BlockOp block : llvm::to_vector(module.getOps<BlockOp>())) {
      if (called.contains(block))
        convertBlock(block);
      else
        block.erase();
    }
    for (Operation &op : llvm::make_early_inc_range(module.getOps()))
      if (isa<ParamOp, GraphOp, PlacementOp, ScheduleOp>(op))
        op.erase();

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

  static bool samePlacement(PlacementOp a, PlacementOp b) {
    auto stagesA = llvm::to_vector(a.getBody().getOps<StageOp>());
    auto stagesB = llvm::to_vector(b.getBody().getOps<StageOp>());
    if (stagesA.size() != stagesB.size() || a.getDevices() != b.getDevices())
      return false;
    for (auto [x, y] : llvm::zip(stagesA, stagesB))
      if (x.getSymName() != y.getSymName() || x.getDevice() != y.getDevice() ||
          x.getBlocks() != y.getBlocks())
        return false;
    return true;
  }

  LogicalResult checkDifferentiated(GraphOp graph) {
    if (!graph.getNumResults() || !graph.getResultAttr(0, kLossSeedAttr))
      return graph.emitOpError("is scheduled for training but has no loss "
                               "marked with ")
             << kLossSeedAttr << "; run --pipe-differentiate first";
    return success();
  }
};

} // namespace
