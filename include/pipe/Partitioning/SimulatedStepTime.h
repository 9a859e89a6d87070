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
/// stage edges with their bytes, parameters shared by several stages.
Pipeline buildPipeline(const PartitionProblem &problem,
                       const Partition &partition,
                       const Evaluation &evaluation);

/// A StepTimeFn that generates a `kind` schedule (a name registered with
/// pipe/Scheduling: gpipe, 1f1b, pipedream-async, mixed, ...) for the
/// partition and returns the simulated time per step (asynchronous kinds
/// are simulated over `steps` overlapped steps). Returns nullopt when the
/// generator or the simulator refuses the pipeline.
StepTimeFn makeSimulatedStepTime(std::string kind, unsigned steps = 1);

} // namespace mlir::pipe::partitioning

#endif // PIPE_PARTITIONING_SIMULATEDSTEPTIME_H
