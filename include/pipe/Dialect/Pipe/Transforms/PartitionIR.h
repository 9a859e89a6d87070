//===- PartitionIR.h - Partitioning problems from and to IR ---*- C++ -*-===//
//
// Connects the plain C++ partitioning model to the IR: block graphs from a
// `pipe.graph` with `#pipe.cost` blocks, and placements back into IR. The
// IR-free bridges (clusters from the device model, a StepTimeFn from the
// simulator) are pipe/Partitioning/FromDeviceModel.h and
// SimulatedStepTime.h.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_DIALECT_PIPE_TRANSFORMS_PARTITIONIR_H
#define PIPE_DIALECT_PIPE_TRANSFORMS_PARTITIONIR_H

#include "pipe/Dialect/Pipe/IR/Pipe.h"
#include "pipe/Partitioning/Evaluation.h"

#include "mlir/IR/Builders.h"

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

/// Writes `partition` as `pipe.placement @name graph @graph devices N` with
/// stages `@s0, @s1, ...` at the builder's insertion point, recording the
/// `microbatches` it was partitioned for (none when 0) and its data-parallel
/// `replicas`.
PlacementOp writePlacement(OpBuilder &builder, Location loc, StringRef name,
                           GraphOp graph, ArrayRef<RunOp> runs,
                           const Partition &partition, unsigned numDevices,
                           unsigned microbatches, unsigned replicas);

} // namespace mlir::pipe::partitioning

#endif // PIPE_DIALECT_PIPE_TRANSFORMS_PARTITIONIR_H
