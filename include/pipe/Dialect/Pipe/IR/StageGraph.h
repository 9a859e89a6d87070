//===- StageGraph.h - Data flow between the stages of a placement -*- C++
//-*-===//
//
// The stage graph is derived, never stored: it follows from a placement and
// the block graph it places. Verifiers, schedule generators, the simulator
// and the back ends all read it through this class.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_DIALECT_PIPE_IR_STAGEGRAPH_H
#define PIPE_DIALECT_PIPE_IR_STAGEGRAPH_H

#include "pipe/Dialect/Pipe/IR/Pipe.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::pipe {

class StageGraph {
public:
  /// Builds the stage graph of `placement` over `graph`. On an inconsistent
  /// placement (unknown or doubly placed instances, unplaced instances) emits
  /// a diagnostic on `placement` and fails. Cycles are not an error here: see
  /// findCycle().
  static FailureOr<StageGraph> build(PlacementOp placement, GraphOp graph);

  unsigned getNumStages() const { return stages.size(); }
  StageOp getStage(unsigned index) const { return stages[index]; }
  std::optional<unsigned> lookupStage(StringRef name) const;
  unsigned getStageOf(RunOp run) const { return stageOfRun.lookup(run); }

  /// Values produced in stage `producer` and read in stage `consumer`.
  ArrayRef<Value> getCrossingValues(unsigned producer, unsigned consumer) const;
  SmallVector<Type> getCrossingTypes(unsigned producer,
                                     unsigned consumer) const;
  /// Stages that read values produced in `stage`, and the reverse.
  SmallVector<unsigned> getConsumers(unsigned stage) const;
  SmallVector<unsigned> getProducers(unsigned stage) const;

  /// A cycle of stage indices (first repeated at the end), or empty.
  SmallVector<unsigned> findCycle() const;
  /// Stage indices in a topological order; requires an acyclic graph.
  SmallVector<unsigned> topologicalOrder() const;

private:
  SmallVector<StageOp> stages;
  llvm::StringMap<unsigned> stageIndex;
  DenseMap<Operation *, unsigned> stageOfRun;
  llvm::MapVector<std::pair<unsigned, unsigned>, llvm::SetVector<Value>> edges;
};

} // namespace mlir::pipe

#endif // PIPE_DIALECT_PIPE_IR_STAGEGRAPH_H
