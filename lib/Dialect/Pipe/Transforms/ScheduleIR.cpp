//===- ScheduleIR.cpp - Pipelines and schedules from and to IR ------------===//

#include "pipe/Dialect/Pipe/Transforms/ScheduleIR.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"

#include <string_view>

using namespace mlir;
using namespace mlir::pipe;

uint64_t mlir::pipe::getTypeBytes(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return 0;
  Type element = tensor.getElementType();
  uint64_t bits = element.isIntOrFloat() ? element.getIntOrFloatBitWidth() : 64;
  return tensor.getNumElements() * ((bits + 7) / 8);
}

// The table's mnemonics are the ops' own.
#define PIPE_ACTION(KIND, MNEMONIC, OP, ENTRY, COMPUTE, TOKEN)                 \
  static_assert(std::string_view(OP::getOperationName().data()) ==             \
                    "pipe." MNEMONIC,                                          \
                "Actions.def: " #OP " is not pipe." MNEMONIC);
#include "pipe/Support/Actions.def"

std::optional<ActionKind> mlir::pipe::getActionKind(Operation *op) {
#define PIPE_ACTION(KIND, MNEMONIC, OP, ENTRY, COMPUTE, TOKEN)                 \
  if (isa<OP>(op))                                                             \
    return ActionKind::KIND;
#include "pipe/Support/Actions.def"
  return std::nullopt;
}

StringRef mlir::pipe::getActionOpName(ActionKind kind) {
  switch (kind) {
#define PIPE_ACTION(KIND, MNEMONIC, OP, ENTRY, COMPUTE, TOKEN)                 \
  case ActionKind::KIND:                                                       \
    return OP::getOperationName();
#include "pipe/Support/Actions.def"
  }
  llvm_unreachable("ActionKind outside Actions.def");
}

/// The working memory of a stage's parts from its blocks' (in graph order):
/// a block's part runs on top of what the stage's earlier blocks of that
/// part left behind: a forward keeps its saved activations; a step's first
/// backward keeps each block's weight gradients (later ones add theirs in
/// place, so this bounds them), and the runtime frees a stage's saved
/// activations only when its whole backward ends. A block without a figure
/// (not measured, or its part allocates nothing, as an embedding's input
/// gradient) adds none.
static void setWorkingBytes(PipelineStage &stage, ArrayRef<CostAttr> costs) {
  auto compose = [&](auto working, auto left, bool reverse) -> uint64_t {
    int64_t held = 0, most = 0;
    for (unsigned i = 0; i < costs.size(); ++i) {
      CostAttr cost = costs[reverse ? costs.size() - 1 - i : i];
      if (working(cost))
        most = std::max(most, held + int64_t(working(cost)));
      held += left(cost);
    }
    return uint64_t(std::max<int64_t>(most, 0));
  };
  auto keeps = [](CostAttr c) { return int64_t(c.getSavedBytes()); };
  auto gradients = [](CostAttr c) { return int64_t(c.getParamBytes()); };
  auto nothing = [](CostAttr) { return int64_t(0); };
  stage.forwardWorkingBytes = compose(
      [](CostAttr c) { return c.getForwardWorkingBytes(); }, keeps, false);
  stage.recomputeWorkingBytes = compose(
      [](CostAttr c) { return c.getRecomputeWorkingBytes(); }, keeps, false);
  stage.backwardWorkingBytes = compose(
      [](CostAttr c) { return c.getBackwardWorkingBytes(); }, gradients, true);
  stage.backwardInputWorkingBytes =
      compose([](CostAttr c) { return c.getBackwardInputWorkingBytes(); },
              nothing, true);
  stage.backwardWeightWorkingBytes =
      compose([](CostAttr c) { return c.getBackwardWeightWorkingBytes(); },
              gradients, true);
}

FailureOr<Pipeline> mlir::pipe::buildPipeline(PlacementOp placement,
                                              const StageGraph &stages,
                                              const MachineModel &machine) {
  // The placement is a symbol table itself (of its stages): look up from
  // its parent.
  Operation *scope = placement->getParentOp();
  auto graph = scope ? SymbolTable::lookupNearestSymbolFrom<GraphOp>(
                           scope, placement.getGraphAttr())
                     : GraphOp();
  if (!graph)
    return placement.emitOpError("graph @")
           << placement.getGraph() << " does not resolve";
  if (SmallVector<unsigned> cycle = stages.findCycle(); !cycle.empty()) {
    InFlightDiagnostic diag =
        placement.emitOpError("induces a cyclic stage graph (");
    for (unsigned i = 0; i < cycle.size(); ++i)
      diag << (i ? " -> @" : "@") << stages.getStage(cycle[i]).getSymName();
    diag << "), which cannot be pipelined";
    return diag;
  }

  Pipeline pipeline;
  pipeline.numDevices = placement.getDevices();
  pipeline.replicas = placement.getReplicas();
  unsigned numStages = stages.getNumStages();
  for (unsigned s = 0; s < numStages; ++s) {
    PipelineStage stage;
    stage.name = stages.getStage(s).getSymName().str();
    stage.device = stages.getStage(s).getDevice();
    pipeline.stages.push_back(stage);
  }
  for (unsigned p = 0; p < numStages; ++p)
    for (unsigned c : stages.getConsumers(p)) {
      uint64_t bytes = 0;
      for (Value value : stages.getCrossingValues(p, c))
        bytes += getTypeBytes(value.getType());
      pipeline.edges.push_back({p, c, bytes});
      pipeline.stages[p].outputBytes += bytes;
      pipeline.stages[c].inputBytes += bytes;
    }

  // Parameters: each read once per stage; those read by several stages are
  // shared and reduced.
  llvm::MapVector<StringAttr, llvm::SetVector<unsigned>> readers;
  SmallVector<llvm::SetVector<Value>> graphInputs(numStages);
  SmallVector<SmallVector<CostAttr>> stageCosts(numStages);
  for (RunOp run : graph.getBody().getOps<RunOp>()) {
    unsigned s = stages.getStageOf(run);
    PipelineStage &stage = pipeline.stages[s];
    for (Value input : run.getInputs())
      if (isa<BlockArgument>(input))
        graphInputs[s].insert(input);
    for (auto ref : run.getParams().getAsRange<FlatSymbolRefAttr>())
      readers[ref.getAttr()].insert(s);

    auto block =
        SymbolTable::lookupNearestSymbolFrom<BlockOp>(run, run.getCalleeAttr());
    CostAttr cost = block ? block.getCostAttr() : CostAttr();
    const MachineModel::Device &device = machine.getDevice(stage.device);
    if (!cost) {
      stage.forwardTime += kDefaultBlockTime;
      stage.backwardInputTime += kDefaultBlockTime;
      stage.backwardWeightTime += kDefaultBlockTime;
      stage.fusedBackwardTime += 2 * kDefaultBlockTime;
      continue;
    }
    // Measured times where the profile gave them, else FLOPs and the
    // forward's bytes at the device's rates.
    double bytes = cost.getBytesAccessed();
    stage.forwardTime +=
        cost.getForwardTimeNs()
            ? cost.getForwardTimeNs() * 1e-9
            : device.getComputeTime(cost.getForwardFlops(), bytes);
    BackwardTimes backward = getBackwardTimes(
        cost.getBackwardTimeNs() * 1e-9, cost.getBackwardInputTimeNs() * 1e-9,
        cost.getBackwardWeightTimeNs() * 1e-9, cost.getBackwardInputFlops(),
        cost.getBackwardWeightFlops(), cost.getBackwardFlops(), bytes,
        device.getBackwardFlops(), device.getBackwardBandwidth());
    stage.backwardInputTime += backward.input;
    stage.backwardWeightTime += backward.weight;
    stage.fusedBackwardTime += backward.fused;
    stage.savedBytes += cost.getSavedBytes();
    stage.updateTime += cost.getUpdateTimeNs() * 1e-9;
    stageCosts[s].push_back(cost);
  }
  for (unsigned s = 0; s < numStages; ++s)
    setWorkingBytes(pipeline.stages[s], stageCosts[s]);
  for (unsigned s = 0; s < numStages; ++s)
    for (Value input : graphInputs[s])
      pipeline.stages[s].inputBytes += getTypeBytes(input.getType());

  for (auto &[name, users] : readers) {
    auto param = SymbolTable::lookupNearestSymbolFrom<ParamOp>(scope, name);
    if (!param)
      continue;
    uint64_t bytes = getTypeBytes(param.getTensorType());
    for (unsigned s : users) {
      pipeline.stages[s].paramBytes += bytes;
      pipeline.stages[s].paramCount += param.getTensorType().getNumElements();
    }
    // With data parallelism every trainable gradient is reduced over the
    // replicas, so each one gets its reduce_grad like a tied weight.
    if (users.size() > 1 || (pipeline.replicas > 1 && !param.getFrozen())) {
      SharedParam shared;
      shared.name = name.str();
      shared.bytes = bytes;
      shared.stages.assign(users.begin(), users.end());
      pipeline.sharedParams.push_back(shared);
    }
  }
  return pipeline;
}

FailureOr<PlacedPipeline> mlir::pipe::buildPlacedPipeline(PlacementOp placement,
                                                          GraphOp graph,
                                                          StringRef deviceModel,
                                                          Operation *diagOp) {
  FailureOr<StageGraph> stages = StageGraph::build(placement, graph);
  if (failed(stages))
    return failure();
  std::string error;
  FailureOr<MachineModel> machine = MachineModel::lookup(
      deviceModel, placement.getDevices() * placement.getReplicas(),
      [&](const Twine &m) { error = m.str(); });
  if (failed(machine)) {
    diagOp->emitError(error);
    return failure();
  }
  FailureOr<Pipeline> pipeline = buildPipeline(placement, *stages, *machine);
  if (failed(pipeline))
    return failure();
  return PlacedPipeline{std::move(*stages), std::move(*machine),
                        std::move(*pipeline)};
}

/// The index of `name` in `pipeline.sharedParams`, or -1.
static int findSharedParam(const Pipeline &pipeline, StringRef name) {
  for (unsigned p = 0; p < pipeline.sharedParams.size(); ++p)
    if (pipeline.sharedParams[p].name == name)
      return p;
  return -1;
}

FailureOr<Schedule> mlir::pipe::readSchedule(ScheduleOp op,
                                             const Pipeline &pipeline,
                                             const StageGraph &stages) {
  Schedule schedule;
  schedule.kind = op.getKind().str();
  schedule.microbatches = op.getMicrobatches();
  schedule.steps = op.getSteps();
  schedule.forwardOnly = op.getForwardOnly();
  schedule.keepsWeightVersions = op.getWeightVersions();
  schedule.devices.resize(pipeline.numDevices);
  auto stageIndex = [&](FlatSymbolRefAttr ref) -> int {
    if (!ref)
      return -1;
    std::optional<unsigned> index = stages.lookupStage(ref.getValue());
    return index ? (int)*index : -1;
  };
  for (DeviceOp device : op.getBody().getOps<DeviceOp>()) {
    unsigned d = device.getDevice();
    if (d >= pipeline.numDevices)
      return device.emitOpError("is device ")
             << d << ", but the placement has " << pipeline.numDevices;
    DenseMap<Value, int> tokens;
    for (Operation &nested : device.getBody().front()) {
      auto action = dyn_cast<ActionOpInterface>(&nested);
      if (!action)
        return nested.emitOpError("is not a schedule action");
      ScheduleAction a;
      a.op = &nested;
      a.stage = stageIndex(action.getLocalStage());
      if (std::optional<uint64_t> mb = action.getMicrobatchIndex())
        a.microbatch = *mb;
      a.step = action.getStepIndex();
      if (auto version = nested.getAttrOfType<IntegerAttr>("version"))
        a.version = version.getInt();
      if (auto forward = dyn_cast<ForwardOp>(nested))
        a.predict = int(forward.getPredict().value_or(0));
      std::optional<ActionKind> kind = getActionKind(&nested);
      if (!kind)
        return nested.emitOpError(
            "is an action the schedule tools do not know yet");
      a.kind = *kind;
      if (auto send = dyn_cast<SendOp>(nested)) {
        a.src = stageIndex(send.getSrcAttr());
        a.dst = stageIndex(send.getDstAttr());
        a.gradient = send.getKind() == TransferKind::Gradient;
      } else if (auto recv = dyn_cast<RecvOp>(nested)) {
        a.src = stageIndex(recv.getSrcAttr());
        a.dst = stageIndex(recv.getDstAttr());
        a.gradient = recv.getKind() == TransferKind::Gradient;
      } else if (auto reduce = dyn_cast<ReduceGradOp>(nested)) {
        a.param = findSharedParam(pipeline, reduce.getParam());
      } else if (auto bucket = dyn_cast<ReduceBucketOp>(nested)) {
        for (auto ref : bucket.getParams().getAsRange<FlatSymbolRefAttr>())
          a.params.push_back(findSharedParam(pipeline, ref.getValue()));
      } else if (auto wait = dyn_cast<WaitOp>(nested)) {
        for (Value token : wait.getTokens()) {
          auto it = tokens.find(token);
          if (it == tokens.end())
            return wait.emitOpError(
                "waits on a token produced outside its pipe.device");
          a.waits.push_back(it->second);
        }
      }
      for (Value result : nested.getResults())
        if (isa<TokenType>(result.getType())) {
          a.token = tokens.size();
          tokens[result] = a.token;
        }
      schedule.devices[d].push_back(std::move(a));
    }
  }
  return schedule;
}

ScheduleOp mlir::pipe::writeSchedule(OpBuilder &builder, Location loc,
                                     StringRef name, PlacementOp placement,
                                     const StageGraph &stages,
                                     const Pipeline &pipeline,
                                     const Schedule &schedule) {
  MLIRContext *context = builder.getContext();
  OpBuilder::InsertionGuard guard(builder);
  auto i64 = [&](int64_t value) { return builder.getI64IntegerAttr(value); };
  auto stageRef = [&](int s) {
    return FlatSymbolRefAttr::get(stages.getStage(s).getSymNameAttr());
  };

  OperationState state(loc, ScheduleOp::getOperationName());
  state.addAttribute("sym_name", builder.getStringAttr(name));
  state.addAttribute("placement",
                     FlatSymbolRefAttr::get(placement.getSymNameAttr()));
  state.addAttribute("kind", builder.getStringAttr(schedule.kind));
  state.addAttribute("microbatches", i64(schedule.microbatches));
  if (schedule.steps > 1)
    state.addAttribute("steps", i64(schedule.steps));
  if (schedule.forwardOnly)
    state.addAttribute("forward_only", builder.getUnitAttr());
  state.addRegion()->push_back(new Block());
  auto scheduleOp = cast<ScheduleOp>(builder.create(state));

  Type tokenType = TokenType::get(context);
  for (unsigned d = 0; d < schedule.devices.size(); ++d) {
    builder.setInsertionPointToEnd(&scheduleOp.getBody().front());
    OperationState deviceState(loc, DeviceOp::getOperationName());
    deviceState.addAttribute("device", i64(d));
    deviceState.addRegion()->push_back(new Block());
    Operation *device = builder.create(deviceState);
    builder.setInsertionPointToEnd(&device->getRegion(0).front());
    DenseMap<int, Value> tokens;
    for (const ScheduleAction &a : schedule.devices[d]) {
      OperationState op(loc, getActionOpName(a.kind));
      if (a.kind == ActionKind::Send || a.kind == ActionKind::Recv) {
        op.addAttribute("kind",
                        TransferKindAttr::get(
                            context, a.gradient ? TransferKind::Gradient
                                                : TransferKind::Activation));
        op.addAttribute("src", stageRef(a.src));
        op.addAttribute("dst", stageRef(a.dst));
        unsigned producer = a.gradient ? a.dst : a.src;
        unsigned consumer = a.gradient ? a.src : a.dst;
        SmallVector<Attribute> payload;
        for (Type type : stages.getCrossingTypes(producer, consumer))
          payload.push_back(TypeAttr::get(type));
        op.addAttribute("payload", builder.getArrayAttr(payload));
      } else if (a.kind == ActionKind::ReduceGrad) {
        op.addAttribute("param",
                        FlatSymbolRefAttr::get(
                            context, pipeline.sharedParams[a.param].name));
      } else if (a.kind == ActionKind::ReduceBucket) {
        SmallVector<Attribute> params;
        for (int p : a.params)
          params.push_back(
              FlatSymbolRefAttr::get(context, pipeline.sharedParams[p].name));
        op.addAttribute("params", builder.getArrayAttr(params));
      } else if (a.kind != ActionKind::Wait && a.stage >= 0) {
        op.addAttribute("stage", stageRef(a.stage));
      }
      if (a.microbatch >= 0)
        op.addAttribute("microbatch", i64(a.microbatch));
      if (a.version >= 0)
        op.addAttribute("version", i64(a.version));
      if (a.predict > 0)
        op.addAttribute("predict", i64(a.predict));
      if (a.step > 0)
        op.addAttribute("step", i64(a.step));
      for (int t : a.waits)
        op.addOperands(tokens.lookup(t));
      if (producesToken(a.kind))
        op.addTypes(tokenType);
      Operation *created = builder.create(op);
      if (a.token >= 0)
        tokens[a.token] = created->getResult(0);
    }
  }
  return scheduleOp;
}

void mlir::pipe::setScheduleTraits(ScheduleOp schedule,
                                   const ScheduleTraits &traits) {
  if (traits.keepsWeightVersions && !schedule.getForwardOnly())
    schedule.setWeightVersions(true);
  if (!traits.parameterServer)
    return;
  llvm::SetVector<StringAttr> loaded;
  schedule.walk(
      [&](LoadOp load) { loaded.insert(load.getStageAttr().getAttr()); });
  auto placement = SymbolTable::lookupNearestSymbolFrom<PlacementOp>(
      schedule, schedule.getPlacementAttr());
  SmallVector<Attribute> stages;
  for (StageOp stage : placement.getBody().getOps<StageOp>())
    if (loaded.contains(stage.getSymNameAttr()))
      stages.push_back(FlatSymbolRefAttr::get(stage.getSymNameAttr()));
  schedule.setPsStagesAttr(ArrayAttr::get(schedule.getContext(), stages));
}
