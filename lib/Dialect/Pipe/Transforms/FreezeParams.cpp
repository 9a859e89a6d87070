//===- FreezeParams.cpp - Freezes parameters by name ----------------------===//
//
// Fine-tuning trains part of a model: this pass marks the parameters named
// by globs or regular expressions `frozen`, which pipe-differentiate then
// leaves out of the weight gradients and the runtime out of the optimizer.
//
//===----------------------------------------------------------------------===//

#include "pipe/Dialect/Pipe/Transforms/Passes.h"

#include "pipe/Support/NamePattern.h"

namespace mlir::pipe {
#define GEN_PASS_DEF_PIPEFREEZEPARAMS
#include "pipe/Dialect/Pipe/Transforms/Passes.h.inc"
} // namespace mlir::pipe

using namespace mlir;
using namespace mlir::pipe;

namespace {

struct FreezeParamsPass
    : public pipe::impl::PipeFreezeParamsBase<FreezeParamsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<NamePattern> parsed;
    for (const std::string &text : patterns) {
      llvm::Expected<NamePattern> pattern = NamePattern::parse(text);
      if (!pattern) {
        mlir::emitError(module.getLoc(), "pipe-freeze-params: ")
            << llvm::toString(pattern.takeError());
        return signalPassFailure();
      }
      parsed.push_back(std::move(*pattern));
    }

    SmallVector<bool> used(parsed.size(), false);
    for (ParamOp param : module.getOps<ParamOp>())
      for (auto [index, pattern] : llvm::enumerate(parsed))
        if (pattern.matches(param.getSymName())) {
          param.setFrozen(true);
          used[index] = true;
        }
    bool failed = false;
    for (auto [index, pattern] : llvm::enumerate(parsed)) {
      if (used[index])
        continue;
      InFlightDiagnostic diag =
          mlir::emitError(module.getLoc(), "pipe-freeze-params: '")
          << pattern.getText() << "' matches no parameter";
      auto params = module.getOps<ParamOp>();
      if (params.empty()) {
        diag << " (the module has none)";
      } else {
        diag << "; the parameters are ";
        unsigned shown = 0;
        for (ParamOp param : params) {
          if (shown == 8) {
            diag << ", ...";
            break;
          }
          diag << (shown++ ? ", " : "") << param.getSymName();
        }
      }
      failed = true;
    }
    if (failed)
      signalPassFailure();
  }
};

} // namespace
