//===- SimulatedStepTime.h - Step times from the simulator -----*- C++ -*-===//
//
// A StepTimeFn that plays the chosen schedule kind on a partition in the
// discrete-event simulator of pipe/Scheduling.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_PARTITIONING_SIMULATEDSTEPTIME_H
#define PIPE_PARTITIONING_SIMULATEDSTEPTIME_H

#include "pipe/Partitioning/Evaluation.h"
#include "pipe/Scheduling/Pipeline.h"

namespace mlir::pipe::partitioning {

/// The scheduler's view of a partition: stages with their summed costs,
/// stage edges with their bytes, parameters shared by several stages; with
/// `replicas` > 1 that many data-parallel copies, every trainable
/// parameter's gradient then reduced over them (as pipe-schedule does).
Pipeline buildPipeline(const PartitionProblem &problem,
                       const Partition &partition, const Evaluation &evaluation,
                       unsigned replicas = 1);

/// The simulated time per step of a `kind` schedule of the partition
/// (asynchronous kinds over `steps` overlapped steps) on `machine`, with the
/// pipeline copied `replicas` times (replica r runs device d as machine
/// device r * D + d) and the replicas' gradient all-reduces run as the
/// schedule runs them: in buckets of `reduceBucketBytes`, overlapping the
/// backward (ScheduleOptions::reduceBucketBytes). nullopt when the
/// generator or the simulator refuses the pipeline.
std::optional<double>
simulateStepTime(const PartitionProblem &problem, const Partition &partition,
                 const Evaluation &evaluation, const MachineModel &machine,
                 llvm::StringRef kind, unsigned steps, unsigned replicas = 1,
                 uint64_t reduceBucketBytes = uint64_t(25) << 20);

/// A StepTimeFn that generates a `kind` schedule (a name registered with
/// pipe/Scheduling: gpipe, 1f1b, pipedream-async, mixed, ...) for the
/// partition and returns the simulated time per step (asynchronous kinds
/// are simulated over `steps` overlapped steps). Returns nullopt when the
/// generator or the simulator refuses the pipeline.
StepTimeFn makeSimulatedStepTime(std::string kind, unsigned steps = 1);

} // namespace mlir::pipe::partitioning

#endif // PIPE_PARTITIONING_SIMULATEDSTEPTIME_H
