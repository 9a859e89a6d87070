//===- SimulatedStepTime.cpp - Step times from the schedule simulator -----===//

#include "pipe/Partitioning/SimulatedStepTime.h"

#include "pipe/Partitioning/FromDeviceModel.h"
#include "pipe/Scheduling/ScheduleGenerator.h"
#include "pipe/Scheduling/Simulator.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::pipe;
using namespace mlir::pipe::partitioning;

Pipeline mlir::pipe::partitioning::buildPipeline(
    const PartitionProblem &problem, const Partition &partition,
    const Evaluation &evaluation, unsigned replicas) {
  const BlockGraph &graph = *problem.graph;
  Pipeline pipeline;
  pipeline.numDevices = problem.cluster.size();
  pipeline.replicas = replicas;
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
    PipelineStage &stage = pipeline.stages[partition.stageOf[v]];
    stage.forwardTime += problem.getForwardSeconds(v, stage.device);
    stage.backwardInputTime += problem.getBackwardInputSeconds(v, stage.device);
    stage.backwardWeightTime +=
        problem.getBackwardWeightSeconds(v, stage.device);
    // The fused backward: a node's split parts may have been measured apart
    // from (and cost more than) it.
    stage.fusedBackwardTime += problem.getBackwardSeconds(v, stage.device);
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
    if ((readers[p].size() < 2 && replicas == 1) ||
        !graph.getParam(p).trainable)
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

std::optional<double> mlir::pipe::partitioning::simulateStepTime(
    const PartitionProblem &problem, const Partition &partition,
    const Evaluation &evaluation, const MachineModel &machine, StringRef kind,
    unsigned steps, unsigned replicas, uint64_t reduceBucketBytes) {
  Pipeline pipeline = buildPipeline(problem, partition, evaluation, replicas);
  auto ignore = [](const llvm::Twine &) {};
  ScheduleOptions options;
  options.microbatches = problem.schedule.microbatches;
  options.steps = steps;
  options.stashWeights = problem.schedule.weightStashing;
  options.recompute = problem.schedule.recompute;
  options.reduceBucketBytes = reduceBucketBytes;
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
}

StepTimeFn mlir::pipe::partitioning::makeSimulatedStepTime(std::string kind,
                                                           unsigned steps) {
  return [kind, steps](const PartitionProblem &problem,
                       const Partition &partition,
                       const Evaluation &evaluation) -> std::optional<double> {
    return simulateStepTime(problem, partition, evaluation,
                            buildMachineModel(problem.cluster), kind, steps);
  };
}
