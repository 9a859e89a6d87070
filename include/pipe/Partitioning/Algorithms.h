//===- Algorithms.h - Building blocks of the partitioners -------*- C++ -*-===//
//
// The steps the built-in partitioners are made of, public so that tests can
// check them one by one and new algorithms can reuse them.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_PARTITIONING_ALGORITHMS_H
#define PIPE_PARTITIONING_ALGORITHMS_H

#include "pipe/Partitioning/Evaluation.h"

namespace mlir::pipe::partitioning {

//===----------------------------------------------------------------------===//
// Seq: contiguous splits by dynamic programming
//===----------------------------------------------------------------------===//

/// The best contiguous split of the topological order into `numStages`
/// stages, stage k on device P - numStages + k (numbering does not matter
/// on homogeneous clusters, where seq renumbers to 0..numStages-1).
struct SeqSplit {
  unsigned numStages = 0;
  /// The dynamic program's objective: the largest per-device cost (with the
  /// communication to the neighbouring stages' devices) of the split.
  double bottleneckSeconds = 0;
  Partition partition;
};

/// For every stage count 1..P with a split that fits in memory, the split
/// minimising the bottleneck (ties: less communication, decided greedily).
/// O(n^2 P) time, O(n P) memory.
std::vector<SeqSplit> computeSeqSplits(const PartitionProblem &problem);

/// The smallest per-device memory (the same on every device) with which
/// some contiguous split into at most P stages fits; nullopt for an empty
/// graph.
std::optional<uint64_t>
computeMinContiguousMemory(const PartitionProblem &problem);

/// A bound no partition can beat: max(total / P, the largest single block's
/// memory), with each block's activations at one micro-batch in flight
/// (GPipe: m).
uint64_t computeMemoryLowerBound(const PartitionProblem &problem);

//===----------------------------------------------------------------------===//
// Mixed-Pipe steps
//===----------------------------------------------------------------------===//

/// Successive coarsenings of the graph. Each level is a grouping of the
/// nodes (group id per node, ids dense from 0) whose quotient graph is
/// acyclic, with at most `target` groups (fewer when zero-cost and
/// communication-bound merges already went below it; more when the graph
/// has fewer nodes).
struct CoarseLevel {
  unsigned target = 0;
  unsigned numGroups = 0;
  std::vector<unsigned> groupOf;
};

/// Coarsens in three phases (docs/partitioning.md): absorb zero-cost nodes,
/// merge communication-bound groups until each group's compute covers its
/// communication (never below the smallest target), then repeatedly merge
/// the smallest group into a neighbour, recording a level at each target.
/// Targets may come in any order.
std::vector<CoarseLevel> coarsen(const PartitionProblem &problem,
                                 llvm::ArrayRef<unsigned> targets);

/// Greedy best-fit: groups by decreasing compute, each to the device that
/// is least loaded after taking it among those with memory room, counting
/// activations as `activationsInFlight` micro-batches (0: from each group's
/// height in the quotient graph, capped at the device count). Returns the
/// device of every node, or nullopt when some group fits nowhere.
std::optional<std::vector<unsigned>>
assignGreedyBestFit(const PartitionProblem &problem, const CoarseLevel &level,
                    unsigned activationsInFlight);

/// Stages from a device assignment: nodes in topological order join a stage
/// of their device that holds one of their predecessors when that keeps the
/// stage graph acyclic, else open a new stage; then stages sharing a device
/// are merged whenever the stage graph stays acyclic. The result has an
/// acyclic stage graph; a device may host several non-adjacent stages.
Partition formStages(const PartitionProblem &problem,
                     llvm::ArrayRef<unsigned> deviceOfNode);

/// Local search on a device assignment: move a unit (a group of nodes, or
/// one node) that borders another device to that device, re-form stages,
/// keep the move when isBetter says so; repeat until no move improves or
/// `maxMoves` moves were made. Only units on the bottleneck devices (or on
/// devices over capacity when infeasible) are tried. `unitOf` gives the
/// unit of every node (identity for single nodes).
std::vector<unsigned> refineAssignment(const PartitionProblem &problem,
                                       std::vector<unsigned> deviceOfNode,
                                       llvm::ArrayRef<unsigned> unitOf,
                                       unsigned maxMoves);

/// The best partition over all device assignments (stages by formStages),
/// and the seq answer; fails when P^n exceeds `maxAssignments`.
llvm::Expected<Partition> solveExact(const PartitionProblem &problem,
                                     uint64_t maxAssignments = 4000000);

} // namespace mlir::pipe::partitioning

#endif // PIPE_PARTITIONING_ALGORITHMS_H
