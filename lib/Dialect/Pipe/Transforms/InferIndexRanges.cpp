//===- InferIndexRanges.cpp - Records the ranges of integer graph inputs --===//

#include "pipe/Dialect/Pipe/Transforms/IndexRanges.h"
#include "pipe/Dialect/Pipe/Transforms/Passes.h"

namespace mlir::pipe {
#define GEN_PASS_DEF_PIPEINFERINDEXRANGES
#include "pipe/Dialect/Pipe/Transforms/Passes.h.inc"
} // namespace mlir::pipe

using namespace mlir;
using namespace mlir::pipe;

namespace {
struct InferIndexRangesPass
    : public pipe::impl::PipeInferIndexRangesBase<InferIndexRangesPass> {
  using Base::Base;

  void runOnOperation() override {
    SymbolTable symbols(getOperation());
    for (GraphOp graph : getOperation().getOps<GraphOp>())
      if (failed(inferIndexRanges(graph, symbols)))
        return signalPassFailure();
  }
};
} // namespace
