//===- PartitionIR.cpp - Partitioning problems from and to IR ------------===//

#include "pipe/Dialect/Pipe/Transforms/PartitionIR.h"

#include "pipe/Analysis/DeviceModel.h"
#include "pipe/Dialect/Pipe/Transforms/ScheduleIR.h"
#include "pipe/Scheduling/ScheduleGenerator.h"
#include "pipe/Scheduling/Simulator.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::pipe;
using namespace mlir::pipe::partitioning;

FailureOr<BlockGraph>
mlir::pipe::partitioning::buildBlockGraph(GraphOp graph,
                                          SmallVectorImpl<RunOp> &runs,
                                          bool allowUncosted) {
  BlockGraph result;
  llvm::DenseMap<StringAttr, unsigned> paramIndex;
  llvm::DenseMap<Operation *, unsigned> nodeOfRun;
  for (RunOp run : graph.getBody().getOps<RunOp>()) {
    auto block =
        SymbolTable::lookupNearestSymbolFrom<BlockOp>(run, run.getCalleeAttr());
    if (!block)
      return run.emitOpError("calls @")
             << run.getCallee() << ", which is not a pipe.block";
    CostAttr cost = block.getCostAttr();
    if (!cost && !allowUncosted)
      return run.emitOpError("runs block @")
             << block.getSymName()
             << ", which has no #pipe.cost; run --pipe-annotate-costs first";
    BlockNode node;
    node.name = run.getInstance().str();
    if (cost) {
      node.forwardFlops = cost.getForwardFlops();
      node.backwardInputFlops = cost.getBackwardInputFlops();
      node.backwardWeightFlops = cost.getBackwardWeightFlops();
      node.forwardSeconds = cost.getForwardTimeNs() * 1e-9;
      node.backwardSeconds = cost.getBackwardTimeNs() * 1e-9;
      node.savedBytes = cost.getSavedBytes();
    } else {
      // As the scheduler's pipeline counts such a block (ScheduleIR.h).
      node.forwardSeconds = kDefaultBlockTime;
      node.backwardSeconds = 2 * kDefaultBlockTime;
    }
    for (auto ref : run.getParams().getAsRange<FlatSymbolRefAttr>()) {
      auto [it, inserted] =
          paramIndex.try_emplace(ref.getAttr(), result.getNumParams());
      if (inserted) {
        auto param =
            SymbolTable::lookupNearestSymbolFrom<ParamOp>(run, ref.getAttr());
        if (!param)
          return run.emitOpError("binds @")
                 << ref.getValue() << ", which is not a pipe.param";
        result.addParam(ref.getValue(), getTypeBytes(param.getTensorType()),
                        !param.getFrozen());
      }
      node.params.push_back(it->second);
    }
    nodeOfRun[run] = result.addNode(std::move(node));
    runs.push_back(run);
  }
  for (RunOp run : runs) {
    unsigned producer = nodeOfRun[run];
    for (Value output : run.getOutputs()) {
      unsigned value = ~0u;
      for (Operation *user : output.getUsers()) {
        auto consumer = dyn_cast<RunOp>(user);
        if (!consumer)
          continue;
        if (value == ~0u)
          value = result.addValue(producer, getTypeBytes(output.getType()));
        result.addUse(value, nodeOfRun[consumer]);
      }
    }
  }
  if (llvm::Error err = result.finalize())
    return graph.emitOpError() << llvm::toString(std::move(err));
  return result;
}

ClusterInfo mlir::pipe::partitioning::buildClusterInfo(
    const ClusterModel &model, unsigned numDevices, StringRef dtype) {
  ClusterModel sized = model.getNumDevices() == numDevices
                           ? model
                           : model.withDeviceCount(numDevices);
  ClusterInfo cluster;
  for (const DeviceSpec &spec : sized.devices)
    cluster.devices.push_back(
        DeviceInfo{spec.name, spec.memoryBytes, 0, spec.getFlops(dtype)});
  unsigned n = cluster.size();
  cluster.bandwidth.assign(n * n, 0);
  cluster.latency.assign(n * n, 0);
  for (unsigned a = 0; a < n; ++a)
    for (unsigned b = 0; b < n; ++b) {
      if (a == b)
        continue;
      const LinkSpec &link = sized.getLink(a, b);
      cluster.bandwidth[a * n + b] = link.bandwidth;
      cluster.latency[a * n + b] = link.latency;
    }
  return cluster;
}

MachineModel
mlir::pipe::partitioning::buildMachineModel(const ClusterInfo &cluster) {
  MachineModel machine;
  machine.name = "partitioning";
  for (const DeviceInfo &d : cluster.devices) {
    MachineModel::Device device;
    device.memoryBytes = d.getUsableBytes();
    device.flops = d.flopsPerSecond;
    machine.devices.push_back(device);
  }
  unsigned n = cluster.size();
  if (n > 1) {
    machine.defaultLink = {cluster.getBandwidth(0, 1),
                           cluster.getLatency(0, 1)};
    for (unsigned a = 0; a < n; ++a)
      for (unsigned b = 0; b < n; ++b)
        if (a != b)
          machine.links[{a, b}] = {cluster.getBandwidth(a, b),
                                   cluster.getLatency(a, b)};
  }
  return machine;
}

Pipeline
mlir::pipe::partitioning::buildPipeline(const PartitionProblem &problem,
                                        const Partition &partition,
                                        const Evaluation &evaluation) {
  const BlockGraph &graph = *problem.graph;
  Pipeline pipeline;
  pipeline.numDevices = problem.cluster.size();
  unsigned numStages = partition.getNumStages();
  for (unsigned s = 0; s < numStages; ++s) {
    PipelineStage stage;
    stage.name = "s" + std::to_string(s);
    stage.device = partition.deviceOf[s];
    stage.savedBytes = evaluation.stages[s].savedBytes;
    stage.paramBytes = evaluation.stages[s].paramBytes;
    stage.paramCount = stage.paramBytes / 4;
    pipeline.stages.push_back(stage);
  }
  for (unsigned v = 0; v < graph.getNumNodes(); ++v) {
    const BlockNode &node = graph.getNode(v);
    PipelineStage &stage = pipeline.stages[partition.stageOf[v]];
    double rate = problem.cluster.devices[stage.device].flopsPerSecond;
    stage.forwardTime += problem.getForwardSeconds(v, stage.device);
    double flops = node.backwardInputFlops + node.backwardWeightFlops;
    double total = problem.getBackwardSeconds(v, stage.device);
    double inputShare = flops > 0 ? node.backwardInputFlops / flops : 1.0;
    if (node.backwardSeconds <= 0 && rate > 0) {
      stage.backwardInputTime += node.backwardInputFlops / rate;
      stage.backwardWeightTime += node.backwardWeightFlops / rate;
    } else {
      stage.backwardInputTime += total * inputShare;
      stage.backwardWeightTime += total * (1 - inputShare);
    }
  }
  for (auto [edge, bytes] :
       llvm::zip(evaluation.stageEdges, evaluation.stageEdgeBytes)) {
    pipeline.edges.push_back({edge.first, edge.second, bytes});
    pipeline.stages[edge.first].outputBytes += bytes;
    pipeline.stages[edge.second].inputBytes += bytes;
  }
  std::vector<SmallVector<unsigned>> readers(graph.getNumParams());
  for (unsigned v = 0; v < graph.getNumNodes(); ++v)
    for (unsigned p : graph.getNode(v).params)
      if (!llvm::is_contained(readers[p], partition.stageOf[v]))
        readers[p].push_back(partition.stageOf[v]);
  for (unsigned p = 0; p < graph.getNumParams(); ++p) {
    if (readers[p].size() < 2 || !graph.getParam(p).trainable)
      continue;
    SharedParam shared;
    shared.name = graph.getParam(p).name;
    shared.bytes = graph.getParam(p).bytes;
    shared.stages.assign(readers[p].begin(), readers[p].end());
    llvm::sort(shared.stages);
    pipeline.sharedParams.push_back(std::move(shared));
  }
  return pipeline;
}

StepTimeFn mlir::pipe::partitioning::makeSimulatedStepTime(std::string kind,
                                                           unsigned steps) {
  return
      [kind, steps](const PartitionProblem &problem, const Partition &partition,
                    const Evaluation &evaluation) -> std::optional<double> {
        Pipeline pipeline = buildPipeline(problem, partition, evaluation);
        MachineModel machine = buildMachineModel(problem.cluster);
        auto ignore = [](const llvm::Twine &) {};
        ScheduleOptions options;
        options.microbatches = problem.schedule.microbatches;
        options.steps = steps;
        options.stashWeights = problem.schedule.weightStashing;
        options.recompute = problem.schedule.recompute;
        FailureOr<Schedule> schedule =
            generateSchedule(kind, pipeline, options, ignore);
        if (failed(schedule))
          return std::nullopt;
        SimulationOptions simOptions;
        simOptions.recordTrace = false;
        FailureOr<SimulationReport> report =
            simulate(pipeline, *schedule, machine, simOptions, ignore);
        if (failed(report) || !(report->stepTime > 0))
          return std::nullopt;
        return report->stepTime;
      };
}

PlacementOp mlir::pipe::partitioning::writePlacement(
    OpBuilder &builder, Location loc, StringRef name, GraphOp graph,
    ArrayRef<RunOp> runs, const Partition &partition, unsigned numDevices,
    unsigned microbatches) {
  auto placement =
      PlacementOp::create(builder, loc, builder.getStringAttr(name),
                          FlatSymbolRefAttr::get(graph.getSymNameAttr()),
                          builder.getI64IntegerAttr(numDevices),
                          microbatches ? builder.getI64IntegerAttr(microbatches)
                                       : IntegerAttr(),
                          builder.getI64IntegerAttr(1));
  Block *body = new Block();
  placement.getBody().push_back(body);
  OpBuilder inner = OpBuilder::atBlockEnd(body);
  std::vector<SmallVector<Attribute>> blocks(partition.getNumStages());
  for (auto [node, run] : llvm::enumerate(runs))
    blocks[partition.stageOf[node]].push_back(RunOp(run).getInstanceAttr());
  for (unsigned s = 0; s < partition.getNumStages(); ++s)
    StageOp::create(inner, loc, inner.getStringAttr("s" + std::to_string(s)),
                    inner.getI64IntegerAttr(partition.deviceOf[s]),
                    inner.getArrayAttr(blocks[s]));
  return placement;
}
