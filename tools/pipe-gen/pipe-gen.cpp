//===- pipe-gen.cpp - Generate transformer models as linalg IR -----------===//
//
// Writes a BERT / GPT-2 / T5 forward-plus-loss function in torch-mlir's
// linalg-on-tensors form, from a preset and optional overrides:
//
//   pipe-gen --model=tiny-gpt -o tiny-gpt.mlir
//   pipe-gen --model=gpt2-xl --weights=none --print-param-count
//
// See docs/model-generator.md.
//
//===----------------------------------------------------------------------===//

#include "pipe/ModelGen/TransformerGen.h"
#include "pipe/Support/OutputFile.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <unistd.h>

using namespace mlir;
using namespace mlir::pipe::modelgen;
namespace cl = llvm::cl;

static cl::OptionCategory genCat("pipe-gen options");

static cl::opt<std::string>
    modelName("model", cl::desc("Preset to generate (see --list-presets)"),
              cl::value_desc("preset"), cl::cat(genCat));
static cl::opt<std::string> outputFile("o", cl::desc("Output file"),
                                       cl::value_desc("file"), cl::init("-"),
                                       cl::cat(genCat));

// Overrides of the preset's sizes.
static cl::opt<int64_t> optLayers("layers",
                                  cl::desc("Layers (encoder layers for T5)"),
                                  cl::cat(genCat));
static cl::opt<int64_t> optDecoderLayers("decoder-layers",
                                         cl::desc("T5 decoder layers"),
                                         cl::cat(genCat));
static cl::opt<int64_t> optDModel("d-model", cl::desc("Hidden size"),
                                  cl::cat(genCat));
static cl::opt<int64_t> optHeads("heads", cl::desc("Attention heads"),
                                 cl::cat(genCat));
static cl::opt<int64_t>
    optHeadDim("head-dim",
               cl::desc("Per-head size (T5 d_kv; others: d-model/heads)"),
               cl::cat(genCat));
static cl::opt<int64_t> optFF("ff", cl::desc("Feed-forward inner size"),
                              cl::cat(genCat));
static cl::opt<int64_t> optVocab("vocab", cl::desc("Vocabulary size"),
                                 cl::cat(genCat));
static cl::opt<int64_t>
    optMaxPos("max-positions",
              cl::desc("Learned position table size (BERT, GPT-2)"),
              cl::cat(genCat));
static cl::opt<int64_t> optSeq("seq", cl::desc("Sequence length"),
                               cl::cat(genCat));
static cl::opt<int64_t> optDecoderSeq("decoder-seq",
                                      cl::desc("T5 decoder sequence length"),
                                      cl::cat(genCat));
static cl::opt<int64_t> optBatch("batch", cl::desc("Batch size"),
                                 cl::cat(genCat));
static cl::opt<std::string>
    optGelu("gelu", cl::desc("GELU form: erf or tanh (default per family)"),
            cl::cat(genCat));
static cl::opt<bool> optLayerNormF64(
    "layernorm-f64",
    cl::desc("Accumulate layer-norm variance in f64 (default: on for BERT)"),
    cl::cat(genCat));
static cl::opt<bool> optPooler("pooler",
                               cl::desc("BERT pooler + NSP head (default on)"),
                               cl::cat(genCat));
static cl::opt<int64_t> optClasses(
    "classes",
    cl::desc("GPT-2: a sequence classifier over this many classes (a score "
             "head on the pooled final hidden states, see --pooling; "
             "returns logits, no loss)"),
    cl::cat(genCat));
static cl::opt<std::string> optPooling(
    "pooling",
    cl::desc("--classes: pool the last position (default) or the mean of "
             "all positions (last, mean)"),
    cl::cat(genCat));
static cl::opt<bool>
    optRelativeBias("relative-bias",
                    cl::desc("T5 relative position bias (default on)"),
                    cl::cat(genCat));

static cl::opt<std::string>
    optWeights("weights",
               cl::desc("Weight data: random, zero or none (shape only). "
                        "Default: random up to 64M parameters, else none"),
               cl::cat(genCat));
static cl::opt<uint64_t> optSeed("seed", cl::desc("Seed for random weights"),
                                 cl::init(0), cl::cat(genCat));
static cl::opt<double>
    optInitStd("init-std",
               cl::desc("Std of random matrices and embeddings (0.02)"),
               cl::init(0.02), cl::cat(genCat));
static cl::opt<bool> optAllRandom(
    "all-random",
    cl::desc("Random biases and norm scales too (for numerical checks)"),
    cl::cat(genCat));
static cl::opt<std::string> optDtype("dtype", cl::desc("f32 or bf16"),
                                     cl::init("f32"), cl::cat(genCat));
static cl::opt<bool> optAllowLarge(
    "allow-large-weights",
    cl::desc("Allow random/zero weight data for models over 64M parameters"),
    cl::cat(genCat));
static cl::opt<bool> optEmitMain(
    "emit-main",
    cl::desc("Add @main calling @forward on fixed inputs and printing the "
             "loss (vector.print), for mlir-runner"),
    cl::cat(genCat));

static cl::opt<bool> listPresets("list-presets",
                                 cl::desc("Print the preset names and exit"),
                                 cl::cat(genCat));
static cl::opt<bool>
    printParamCount("print-param-count",
                    cl::desc("Print parameter counts instead of IR"),
                    cl::cat(genCat));
static cl::opt<bool>
    listParams("list-params",
               cl::desc("Print each weight (name, shape, resource key) "
                        "instead of IR"),
               cl::cat(genCat));

static constexpr int64_t kLargeWeightLimit = 64ll << 20;

static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "pipe-gen") << message << "\n";
  return 1;
}

static std::string presetList() { return llvm::join(getPresetNames(), ", "); }

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // --mlir-print-debuginfo (synthetic file:line locations), resource eliding.
  registerAsmPrinterCLOptions();
  cl::HideUnrelatedOptions(genCat);
  cl::ParseCommandLineOptions(argc, argv,
                              "pipe-gen: transformer models as linalg IR\n");

  if (listPresets) {
    for (llvm::StringRef name : getPresetNames())
      llvm::outs() << name << "\n";
    return 0;
  }
  if (modelName.empty())
    return fail("missing --model=<preset>; presets: " + presetList());
  std::optional<TransformerConfig> preset = lookupPreset(modelName);
  if (!preset)
    return fail("unknown model '" + modelName + "'; presets: " + presetList());
  TransformerConfig cfg = *preset;

  auto override = [](cl::opt<int64_t> &opt, int64_t &field) {
    if (opt.getNumOccurrences())
      field = opt;
  };
  override(optLayers, cfg.layers);
  override(optDModel, cfg.dModel);
  override(optHeads, cfg.heads);
  override(optHeadDim, cfg.headDim);
  override(optFF, cfg.ff);
  override(optVocab, cfg.vocab);
  override(optMaxPos, cfg.maxPositions);
  override(optSeq, cfg.seq);
  override(optDecoderSeq, cfg.decoderSeq);
  override(optBatch, cfg.batch);
  if (optDecoderLayers.getNumOccurrences()) {
    if (cfg.family != ModelFamily::T5)
      return fail("--decoder-layers applies to T5 models only");
    cfg.decoderLayers = optDecoderLayers;
  }
  if (optDecoderSeq.getNumOccurrences() && cfg.family != ModelFamily::T5)
    return fail("--decoder-seq applies to T5 models only");
  if (cfg.family != ModelFamily::T5 && optHeadDim.getNumOccurrences() == 0 &&
      (optDModel.getNumOccurrences() || optHeads.getNumOccurrences()))
    cfg.headDim = 0; // re-derive d-model / heads
  if (optGelu.getNumOccurrences()) {
    if (optGelu == "erf")
      cfg.gelu = GeluApprox::Erf;
    else if (optGelu == "tanh")
      cfg.gelu = GeluApprox::Tanh;
    else
      return fail("--gelu must be 'erf' or 'tanh', got '" + optGelu + "'");
  }
  if (optLayerNormF64.getNumOccurrences())
    cfg.layerNormF64 = optLayerNormF64;
  if (optPooler.getNumOccurrences()) {
    if (cfg.family != ModelFamily::Bert)
      return fail("--pooler applies to BERT models only");
    cfg.pooler = optPooler;
  }
  if (optClasses.getNumOccurrences()) {
    if (cfg.family != ModelFamily::Gpt2)
      return fail("--classes applies to GPT-2 models only");
    cfg.classes = optClasses;
  }
  if (optPooling.getNumOccurrences()) {
    if (cfg.classes == 0)
      return fail("--pooling applies to a classifier (--classes)");
    if (optPooling != "last" && optPooling != "mean")
      return fail("--pooling must be 'last' or 'mean', got '" + optPooling +
                  "'");
    cfg.pooling = optPooling == "mean" ? ClassifierPooling::Mean
                                       : ClassifierPooling::Last;
  }
  if (optRelativeBias.getNumOccurrences()) {
    if (cfg.family != ModelFamily::T5)
      return fail("--relative-bias applies to T5 models only");
    cfg.relativeBias = optRelativeBias;
  }
  if (optLayerNormF64.getNumOccurrences() && cfg.family == ModelFamily::T5)
    return fail("--layernorm-f64 does not apply to T5 (RMSNorm in f32)");
  if (llvm::Error err = verifyConfig(cfg))
    return fail("invalid configuration for '" + modelName +
                "': " + llvm::toString(std::move(err)));

  ParameterCount count = countParameters(cfg);
  if (printParamCount) {
    llvm::outs() << llvm::formatv(
        "model: {0}\nparameters: {1}\ntask-head parameters: {2}\n"
        "relative-bias parameters (included above): {3}\ntotal: {4}\n",
        cfg.name, count.model, count.taskHead, count.relativeBias,
        count.total());
    return 0;
  }

  GenerateOptions opts;
  opts.seed = optSeed;
  opts.emitMain = optEmitMain;
  opts.randomizeAll = optAllRandom;
  opts.initStd = optInitStd;
  if (!(opts.initStd >= 0.0) || opts.initStd > 100.0)
    return fail("--init-std = " + llvm::formatv("{0:e2}", opts.initStd).str() +
                " must be in [0, 100]");
  if (optDtype == "bf16")
    opts.bf16 = true;
  else if (optDtype != "f32")
    return fail("--dtype must be 'f32' or 'bf16', got '" + optDtype + "'");
  if (!optWeights.getNumOccurrences())
    opts.weights = count.total() <= kLargeWeightLimit ? WeightInit::Random
                                                      : WeightInit::None;
  else if (optWeights == "random")
    opts.weights = WeightInit::Random;
  else if (optWeights == "zero")
    opts.weights = WeightInit::Zero;
  else if (optWeights == "none")
    opts.weights = WeightInit::None;
  else
    return fail("--weights must be 'random', 'zero' or 'none', got '" +
                optWeights + "'");
  if (opts.weights != WeightInit::None && count.total() > kLargeWeightLimit &&
      !optAllowLarge)
    return fail(llvm::formatv("'{0}' has {1} parameters: inline weight data "
                              "would be about {2} GB of text; use "
                              "--weights=none (shape only) or pass "
                              "--allow-large-weights",
                              cfg.name, count.total(),
                              count.total() * (opts.bf16 ? 4 : 8) / 1000000000)
                    .str());
  // The values are made in memory before they are written: more than the
  // machine holds would end in an abort for memory, not an error.
  uint64_t memory =
      uint64_t(sysconf(_SC_PHYS_PAGES)) * uint64_t(sysconf(_SC_PAGESIZE));
  uint64_t weightBytes = count.total() * (opts.bf16 ? 2 : 4);
  if (opts.weights != WeightInit::None && weightBytes > memory / 2)
    return fail(llvm::formatv("'{0}' has {1} parameters: their values take "
                              "{2} GB, more than half of this machine's {3} "
                              "GB of memory; use --weights=none (shape only)",
                              cfg.name, count.total(), weightBytes / 1000000000,
                              memory / 1000000000)
                    .str());

  MLIRContext context;
  llvm::Expected<GeneratedModel> model =
      generateTransformer(context, cfg, opts);
  if (!model)
    return fail(llvm::toString(model.takeError()));

  llvm::Error written = pipe::writeOutputFile(outputFile, [&](raw_ostream &os) {
    if (listParams) {
      for (const ParamInfo &p : model->params) {
        os << p.name << " [";
        llvm::interleave(p.shape, os, "x");
        os << "] " << p.resourceKey << (p.taskHead ? " task-head" : "")
           << "\n";
      }
    } else {
      model->module->print(os, OpPrintingFlags());
      os << "\n";
    }
  });
  if (written)
    return fail(llvm::toString(std::move(written)));
  return 0;
}
