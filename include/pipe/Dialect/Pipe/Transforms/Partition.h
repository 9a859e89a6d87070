//===- Partition.h - What pipe-partition and pipe-place share --*- C++ -*-===//
//
// Both passes place a graph with a partitioner of the one registry
// (pipe/Partitioning/Partitioners.def); --pipe-place is --pipe-partition's
// balanced partitioner with the defaults a placement made before the
// schedule needs.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_DIALECT_PIPE_TRANSFORMS_PARTITION_H
#define PIPE_DIALECT_PIPE_TRANSFORMS_PARTITION_H

#include "pipe/Dialect/Pipe/Transforms/Passes.h"

namespace mlir::pipe {

/// What differs between the passes that call partitionGraph.
struct PartitionCaller {
  /// Prefix of the diagnostics.
  StringRef passName = "pipe-partition";
  /// pipe-place: the placement comes before the schedule, so it records no
  /// micro-batch count, memory is left to pipe-verify-schedule, and a block
  /// without #pipe.cost counts kDefaultBlockTime per phase.
  bool placementOnly = false;
};

/// Checks `options`, runs `options.algorithm` on `graph` and writes the
/// placement after it, with the reports `options` ask for. Emits an error
/// prefixed by the caller's pass name and fails when anything does.
LogicalResult partitionGraph(ModuleOp module, GraphOp graph,
                             const PipePartitionOptions &options,
                             const PartitionCaller &caller);

} // namespace mlir::pipe

#endif // PIPE_DIALECT_PIPE_TRANSFORMS_PARTITION_H
