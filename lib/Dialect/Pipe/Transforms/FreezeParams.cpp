//===- FreezeParams.cpp - Freezes parameters by name ----------------------===//
//
// Fine-tuning trains part of a model: this pass marks the parameters named
// by globs or regular expressions `frozen`, which pipe-differentiate then
// leaves out of the weight gradients and the runtime out of the optimizer.
//
//===----------------------------------------------------------------------===//

#include "pipe/Dialect/Pipe/Transforms/Passes.h"

#include "llvm/Support/GlobPattern.h"
#include "llvm/Support/Regex.h"

#include <variant>

namespace mlir::pipe {
#define GEN_PASS_DEF_PIPEFREEZEPARAMS
#include "pipe/Dialect/Pipe/Transforms/Passes.h.inc"
} // namespace mlir::pipe

using namespace mlir;
using namespace mlir::pipe;

namespace {

/// One `patterns` entry: a glob on the whole name or `re:` and a regex
/// searched anywhere in it.
struct NamePattern {
  std::string text;
  std::variant<llvm::GlobPattern, std::unique_ptr<llvm::Regex>> matcher;

  bool matches(StringRef name) const {
    if (auto *glob = std::get_if<llvm::GlobPattern>(&matcher))
      return glob->match(name);
    return std::get<std::unique_ptr<llvm::Regex>>(matcher)->match(name);
  }
};

struct FreezeParamsPass
    : public pipe::impl::PipeFreezeParamsBase<FreezeParamsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<NamePattern> parsed;
    for (const std::string &text : patterns) {
      StringRef body(text);
      if (body.consume_front("re:")) {
        auto regex = std::make_unique<llvm::Regex>(body);
        std::string error;
        if (!regex->isValid(error)) {
          module.emitError("pipe-freeze-params: invalid regular expression '")
              << body << "': " << error;
          return signalPassFailure();
        }
        parsed.push_back({text, std::move(regex)});
        continue;
      }
      llvm::Expected<llvm::GlobPattern> glob = llvm::GlobPattern::create(body);
      if (!glob) {
        module.emitError("pipe-freeze-params: invalid glob '")
            << body << "': " << llvm::toString(glob.takeError());
        return signalPassFailure();
      }
      parsed.push_back({text, std::move(*glob)});
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
      InFlightDiagnostic diag = module.emitError("pipe-freeze-params: '")
                                << pattern.text << "' matches no parameter";
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
