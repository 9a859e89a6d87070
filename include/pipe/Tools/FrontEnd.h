//===- FrontEnd.h - The compile tools' shared start -------------*- C++ -*-===//
//
// pipe-train, pipe-profile, pipe-compile and pipe-opt start alike: every
// upstream pass and dialect plus pipe's are registered, one context holds
// them for the whole run, and (pipe-train, pipe-profile) the model is read
// from an untrusted MODEL.mlir or generated from a pipe-gen preset, then
// ingested with the options the flags give. That start lives here, so that
// the tools cannot drift apart in what they accept or how they report it.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_TOOLS_FRONTEND_H
#define PIPE_TOOLS_FRONTEND_H

#include "pipe/ModelGen/TransformerGen.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class SourceMgr;
} // namespace llvm

namespace mlir {
class DialectRegistry;
class MLIRContext;
} // namespace mlir

namespace mlir::pipe {

struct IngestPipelineOptions;

/// Registers every pass a tool's pipelines or textual pass options can
/// name: upstream's, pipe's and pipe's conversions.
void registerCompilerPasses();

/// Adds every upstream dialect and extension, the pipe dialect and the
/// dialects of the generated models to `registry`.
void registerCompilerDialects(DialectRegistry &registry);

/// A context with the dialects of registerCompilerDialects loaded, which
/// prints no operation with its diagnostics (a diagnostic on the module
/// would otherwise print the whole model).
std::unique_ptr<MLIRContext> createCompilerContext();

/// Adjusts the configuration of a model about to be generated to a tool's
/// flags (sizes, batch) and checks it; false with `error` set refuses it.
using ConfigureGeneratedModel = llvm::function_ref<bool(
    modelgen::TransformerConfig &config, std::string &error)>;

/// The model a tool compiles. With a `modelPath`: that MODEL.mlir, read as
/// untrusted input (pipe/Support/InputGuard.h) with its diagnostics quoting
/// it through `sourceMgr`. Otherwise a transformer generated from the
/// pipe-gen preset `preset` (std::nullopt: a default TransformerConfig)
/// once `configure` has adjusted it. Null with `error` set when there is
/// none.
OwningOpRef<ModuleOp> loadModel(MLIRContext &context,
                                llvm::SourceMgr &sourceMgr, StringRef modelPath,
                                std::optional<StringRef> preset,
                                ConfigureGeneratedModel configure,
                                std::string &error);

/// Whether `module` has TOSA ops, which the tools that train or profile a
/// model lower to linalg themselves (importTosa; the input checks name
/// --pipe-import-tosa).
bool hasTosaOps(ModuleOp module);
LogicalResult importTosa(ModuleOp module);

/// What a tool's flags say about turning a MODEL.mlir into a trainable
/// graph (pipe-train's --loss, --loss-reduction, --loss-result, --metric,
/// --init,
/// --init-seed, --freeze). The defaults are the ingest pipeline's.
struct ModelIngestFlags {
  std::string loss, lossReduction = "mean";
  int64_t lossResult = 0;
  std::vector<std::string> metrics; // --metric, with --loss
  std::string init;
  int64_t initSeed = 0;
  bool liftSplats = false;
  std::vector<std::string> freeze;
};

/// The ingest pipelines' options (pipe/Pipelines/Pipelines.h) from `flags`,
/// with blocks at `granularity` and `numBlocks` of them at granularity
/// coarse. The options are typed, so that no flag's text can reach a
/// pipeline string.
void setIngestOptions(const ModelIngestFlags &flags, StringRef granularity,
                      int64_t numBlocks, IngestPipelineOptions &options);

} // namespace mlir::pipe

#endif // PIPE_TOOLS_FRONTEND_H
