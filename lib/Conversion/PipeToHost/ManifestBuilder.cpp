//===- ManifestBuilder.cpp - The manifest of a scheduled pipe module ------===//
//
// Everything the runtime must know about the graph, the stages and the
// schedules, numbered and written into one manifest string through the
// shared writer of include/pipe/Runtime/ManifestSchema.h.
//
//===----------------------------------------------------------------------===//

#include "LowerToHost.h"

#include "pipe/Autodiff/Autodiff.h"
#include "pipe/Dialect/Pipe/Transforms/IndexRanges.h"
#include "pipe/Dialect/Pipe/Transforms/ScheduleIR.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::pipe;
using namespace mlir::pipe::autodiff;
using namespace mlir::pipe::host_lowering;

namespace {

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

/// A manifest list of ids or indices.
template <typename Range> std::vector<int64_t> toList(const Range &range) {
  return std::vector<int64_t>(llvm::adl_begin(range), llvm::adl_end(range));
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

} // namespace

FailureOr<unsigned> ManifestBuilder::typeId(Operation *user, Type type) {
  auto it = types.find(type);
  if (it != types.end())
    return it->second;
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape() ||
      dtypeName(tensor.getElementType()).empty())
    return user->emitOpError("uses ")
           << (tensor ? "" : "the scalar ") << type
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
    paramTypes.push_back(param.getType());
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
  if (terminator->getNumOperands() >= 1) {
    Value loss = terminator->getOperand(0);
    auto type = cast<RankedTensorType>(loss.getType());
    if (type.getRank() == 0 && type.getElementType().isF32()) {
      double seed = 1.0;
      if (auto attr = graph.getResultAttrOfType<FloatAttr>(0, kLossSeedAttr))
        seed = attr.getValueAsDouble();
      writer.loss(valueIds.lookup(loss), seed);
      for (unsigned i = 1; i < terminator->getNumOperands(); ++i) {
        auto name = graph.getResultAttrOfType<StringAttr>(i, kMetricAttr);
        if (!name)
          continue;
        if (!pipe_rt::isMetricName(name.str()))
          return graph.emitOpError("metric name '")
                 << name.getValue() << "' of result " << i
                 << " cannot be exported (letters, digits, '_', '-' and '.' "
                    "only)";
        writer.metric(valueIds.lookup(terminator->getOperand(i)), name.str());
      }
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
    stageDevices.push_back(stage.getDevice());
    for (unsigned consumer : stages.getConsumers(s)) {
      std::vector<int64_t> values;
      SmallVector<Type> &types = edges[{s, consumer}];
      for (Value v : stages.getCrossingValues(s, consumer)) {
        values.push_back(valueIds.lookup(v));
        types.push_back(v.getType());
      }
      writer.edge(s, consumer, values);
    }
  }
  return success();
}

LogicalResult ManifestBuilder::addSchedule(ScheduleOp schedule,
                                           PlacementOp placement,
                                           const StageGraph &stages,
                                           ArrayRef<uint64_t> capacities) {
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
  if (placement.getReplicas() > 1)
    writer.replicas(id, placement.getReplicas());
  // Whether an untagged transport (NCCL) can run it: the runtime refuses one
  // whose device pairs disagree on their transfers' order.
  FailureOr<Pipeline> pipeline = buildPipeline(
      placement, stages, MachineModel::makeIdeal(placement.getDevices()));
  if (failed(pipeline))
    return failure();
  FailureOr<Schedule> actions = readSchedule(schedule, *pipeline, stages);
  if (failed(actions))
    return failure();
  if (findPeerOrderMismatches(*pipeline, *actions).empty())
    writer.peerOrder(id);
  for (DeviceOp device : schedule.getBody().getOps<DeviceOp>())
    writer.device(id, device.getDevice(),
                  device.getDevice() < capacities.size()
                      ? capacities[device.getDevice()]
                      : 0,
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
