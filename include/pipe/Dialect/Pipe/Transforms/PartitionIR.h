//===- PartitionIR.h - Partitioning problems from and to IR ---*- C++ -*-===//
//
// Connects the plain C++ partitioning model to the rest of the project:
// block graphs from a `pipe.graph` with `#pipe.cost` blocks, clusters from
// the device model, placements back into IR, and a StepTimeFn that plays
// the chosen schedule kind in the discrete-event simulator of
// pipe/Scheduling.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_DIALECT_PIPE_TRANSFORMS_PARTITIONIR_H
#define PIPE_DIALECT_PIPE_TRANSFORMS_PARTITIONIR_H

#include "pipe/Dialect/Pipe/IR/Pipe.h"
#include "pipe/Partitioning/Evaluation.h"
#include "pipe/Scheduling/Pipeline.h"

#include "mlir/IR/Builders.h"

namespace mlir::pipe {
struct ClusterModel;
} // namespace mlir::pipe

namespace mlir::pipe::partitioning {

/// The block graph of `graph`: one node per `pipe.run` in program order
/// (appended to `runs`), costs from the callee's `#pipe.cost` (measured
/// times when present), parameters from the `pipe.param` symbols the runs
/// bind (frozen ones are not trainable; a symbol bound by several runs is
/// one shared parameter), one value per run result read by other runs,
/// sized by its static type. Emits an error on the first run whose symbols
/// do not resolve or, unless `allowUncosted` (then it takes
/// kDefaultBlockTime per phase), whose block has no cost.
FailureOr<BlockGraph> buildBlockGraph(GraphOp graph,
                                      SmallVectorImpl<RunOp> &runs,
                                      bool allowUncosted = false);

/// `numDevices` devices of `model` (copies of its device 0 when it has a
/// different count), FLOP rates for `dtype`, links as the model says.
ClusterInfo buildClusterInfo(const ClusterModel &model, unsigned numDevices,
                             StringRef dtype);

/// The same facts in the simulator's terms.
MachineModel buildMachineModel(const ClusterInfo &cluster);

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

/// Writes `partition` as `pipe.placement @name graph @graph devices N` with
/// stages `@s0, @s1, ...` at the builder's insertion point, recording the
/// `microbatches` it was partitioned for (none when 0).
PlacementOp writePlacement(OpBuilder &builder, Location loc, StringRef name,
                           GraphOp graph, ArrayRef<RunOp> runs,
                           const Partition &partition, unsigned numDevices,
                           unsigned microbatches);

} // namespace mlir::pipe::partitioning

#endif // PIPE_DIALECT_PIPE_TRANSFORMS_PARTITIONIR_H
