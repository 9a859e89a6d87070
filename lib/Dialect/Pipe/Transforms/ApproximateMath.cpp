//===- ApproximateMath.cpp - Inline polynomial transcendental functions ---===//

#include "pipe/Dialect/Pipe/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::pipe {
#define GEN_PASS_DEF_PIPEAPPROXIMATEMATH
#include "pipe/Dialect/Pipe/Transforms/Passes.h.inc"
} // namespace mlir::pipe

using namespace mlir;

namespace {

struct ApproximateMathPass
    : public pipe::impl::PipeApproximateMathBase<ApproximateMathPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    // The upstream set with its f32 expansions (tanh, exp, expm1, log,
    // log1p, erf, atan, sin, cos, ...).
    populateMathPolynomialApproximationPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
