//===- Placement.h - Placement algorithms and their registry ----*- C++ -*-===//
//
// A placement algorithm groups the block instances of a graph into stages
// and binds stages to devices. The simple one here ("balanced": contiguous
// stages balanced by cost, round-robin over devices) is what pipe-place uses
// by default; real partitioners register beside it.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_SCHEDULING_PLACEMENT_H
#define PIPE_SCHEDULING_PLACEMENT_H

#include "pipe/Scheduling/Pipeline.h"

#include <functional>
#include <memory>

namespace mlir::pipe {

struct PlacementProblem {
  /// Cost (forward + backward time) of each block instance, in graph order.
  SmallVector<double> blockCosts;
  unsigned numDevices = 1;
  unsigned stagesPerDevice = 1;
};

struct PlacementResult {
  /// For each block instance, its stage; stages are numbered from 0.
  SmallVector<unsigned> stageOfBlock;
  /// For each stage, its device.
  SmallVector<unsigned> deviceOfStage;
};

class PlacementAlgorithm {
public:
  virtual ~PlacementAlgorithm();
  virtual llvm::StringRef getName() const = 0;
  virtual FailureOr<PlacementResult> place(const PlacementProblem &problem,
                                           ScheduleDiagFn diag) const = 0;
};

using PlacementAlgorithmFactory =
    std::function<std::unique_ptr<PlacementAlgorithm>()>;
bool registerPlacementAlgorithm(llvm::StringRef name,
                                PlacementAlgorithmFactory factory);
std::unique_ptr<PlacementAlgorithm>
createPlacementAlgorithm(llvm::StringRef name);
SmallVector<std::string> getPlacementAlgorithmNames();

} // namespace mlir::pipe

#endif // PIPE_SCHEDULING_PLACEMENT_H
