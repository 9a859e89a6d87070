//===- FrontEnd.cpp - The compile tools' shared start ---------------------===//

#include "pipe/Tools/FrontEnd.h"

#include "pipe/Conversion/Passes.h"
#include "pipe/Dialect/Pipe/IR/Pipe.h"
#include "pipe/Dialect/Pipe/Transforms/Passes.h"
#include "pipe/Pipelines/Pipelines.h"
#include "pipe/Support/InputGuard.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"

using namespace mlir;
namespace modelgen = mlir::pipe::modelgen;

void mlir::pipe::registerCompilerPasses() {
  registerAllPasses();
  registerPipePasses();
  registerPipeConversionPasses();
}

void mlir::pipe::registerCompilerDialects(DialectRegistry &registry) {
  registerAllDialects(registry);
  registerAllExtensions(registry);
  modelgen::registerModelGenDialects(registry);
  registry.insert<PipeDialect>();
}

std::unique_ptr<MLIRContext> mlir::pipe::createCompilerContext() {
  DialectRegistry registry;
  registerCompilerDialects(registry);
  auto context = std::make_unique<MLIRContext>(registry);
  context->loadAllAvailableDialects();
  context->printOpOnDiagnostic(false);
  return context;
}

OwningOpRef<ModuleOp>
mlir::pipe::loadModel(MLIRContext &context, llvm::SourceMgr &sourceMgr,
                      StringRef modelPath, std::optional<StringRef> preset,
                      ConfigureGeneratedModel configure, std::string &error) {
  if (!modelPath.empty()) {
    auto module =
        parseUntrustedFile(modelPath, context, sourceMgr, InputLimits());
    if (!module)
      error = ("cannot read the model " + modelPath + " (see above)").str();
    return module;
  }
  modelgen::TransformerConfig config;
  if (preset) {
    std::optional<modelgen::TransformerConfig> found =
        modelgen::lookupPreset(*preset);
    if (!found) {
      error =
          ("unknown preset '" + *preset + "' (pipe-gen --list-presets)").str();
      return nullptr;
    }
    config = *found;
  }
  if (!configure(config, error))
    return nullptr;
  auto generated = modelgen::generateTransformer(context, config,
                                                 modelgen::GenerateOptions());
  if (!generated) {
    error = llvm::toString(generated.takeError());
    return nullptr;
  }
  return std::move(generated->module);
}

bool mlir::pipe::hasTosaOps(ModuleOp module) {
  bool found = false;
  module.walk([&](Operation *op) {
    found = op->getName().getDialectNamespace() == "tosa";
    return found ? WalkResult::interrupt() : WalkResult::advance();
  });
  return found;
}

LogicalResult mlir::pipe::importTosa(ModuleOp module) {
  PassManager pm(module.getContext());
  pm.addPass(createPipeImportTosa());
  return pm.run(module);
}

void mlir::pipe::setIngestOptions(const ModelIngestFlags &flags,
                                  StringRef granularity, int64_t numBlocks,
                                  IngestPipelineOptions &options) {
  options.loss = flags.loss;
  options.lossReduction = flags.lossReduction;
  options.lossResult = unsigned(flags.lossResult);
  options.metrics = ArrayRef<std::string>(flags.metrics);
  options.init = flags.init;
  options.initSeed = uint64_t(flags.initSeed);
  options.liftSplats = flags.liftSplats;
  options.freeze = ArrayRef<std::string>(flags.freeze);
  options.granularity = granularity.str();
  options.numBlocks = numBlocks;
}
