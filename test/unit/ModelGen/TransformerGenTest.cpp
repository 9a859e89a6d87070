//===- TransformerGenTest.cpp - Tests for the transformer generator ------===//

#include "pipe/ModelGen/TransformerGen.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::pipe::modelgen;

namespace {

TransformerConfig preset(llvm::StringRef name) {
  std::optional<TransformerConfig> c = lookupPreset(name);
  EXPECT_TRUE(c.has_value()) << name.str();
  return c ? *c : TransformerConfig();
}

GeneratedModel generate(MLIRContext &ctx, const TransformerConfig &cfg,
                        WeightInit weights = WeightInit::Random,
                        uint64_t seed = 0) {
  GenerateOptions opts;
  opts.weights = weights;
  opts.seed = seed;
  llvm::Expected<GeneratedModel> m = generateTransformer(ctx, cfg, opts);
  if (!m) {
    ADD_FAILURE() << llvm::toString(m.takeError());
    return {};
  }
  return std::move(*m);
}

std::string print(ModuleOp m) {
  std::string s;
  llvm::raw_string_ostream os(s);
  m.print(os);
  return s;
}

/// Uses of the arith.constant referencing resource `key`, and how many
/// constant ops reference it.
std::pair<int, int> usesOfKey(ModuleOp m, llvm::StringRef key) {
  int uses = 0, ops = 0;
  m.walk([&](arith::ConstantOp op) {
    auto attr = dyn_cast<DenseResourceElementsAttr>(op.getValue());
    if (!attr || attr.getRawHandle().getKey() != key)
      return;
    ++ops;
    uses += std::distance(op->use_begin(), op->use_end());
  });
  return {uses, ops};
}

// The published sizes (Hugging Face parameter counts of the base models,
// tied weights once; BERT without its pre-training heads).
TEST(TransformerConfig, PresetCountsMatchPublishedSizes) {
  EXPECT_EQ(countParameters(preset("bert-large")).model, 335141888);
  EXPECT_EQ(countParameters(preset("gpt2-xl")).model, 1557611200);
  EXPECT_EQ(countParameters(preset("t5-3b")).model, 2851598336);
  EXPECT_EQ(countParameters(preset("bert-base")).model, 109482240);
  EXPECT_EQ(countParameters(preset("gpt2")).model, 124439808);
  EXPECT_EQ(countParameters(preset("t5-small")).model, 60506624);
  // T5's relative attention bias tables: 32 buckets x heads, two stacks.
  EXPECT_EQ(countParameters(preset("t5-3b")).relativeBias, 2 * 32 * 32);
  // GPT-2 and T5 tie their LM heads: no task-head parameters.
  EXPECT_EQ(countParameters(preset("gpt2-xl")).taskHead, 0);
  EXPECT_EQ(countParameters(preset("t5-3b")).taskHead, 0);
  // BERT: MLM transform (d^2 + d), its LayerNorm (2d), output bias (V), NSP
  // (2d + 2).
  EXPECT_EQ(countParameters(preset("bert-large")).taskHead,
            1024 * 1024 + 1024 + 2048 + 30522 + 2048 + 2);
}

TEST(TransformerConfig, AllPresetsVerify) {
  for (llvm::StringRef name : getPresetNames()) {
    llvm::Error err = verifyConfig(preset(name));
    EXPECT_FALSE(static_cast<bool>(err))
        << name.str() << ": " << llvm::toString(std::move(err));
  }
  EXPECT_FALSE(lookupPreset("no-such-model").has_value());
}

TEST(TransformerConfig, RejectsBadConfigs) {
  auto message = [](const TransformerConfig &c) {
    llvm::Error err = verifyConfig(c);
    return err ? llvm::toString(std::move(err)) : std::string();
  };
  TransformerConfig c = preset("tiny-gpt");
  c.heads = 3;
  EXPECT_NE(message(c).find("not divisible by heads"), std::string::npos);
  c = preset("tiny-gpt");
  c.seq = c.maxPositions + 1;
  EXPECT_NE(message(c).find("max-positions"), std::string::npos);
  c = preset("tiny-bert");
  c.layers = 0;
  EXPECT_NE(message(c).find("layers = 0"), std::string::npos);
  c = preset("tiny-t5");
  c.decoderLayers = 0;
  EXPECT_NE(message(c).find("decoder-layers"), std::string::npos);
  c = preset("tiny-t5");
  c.relBuckets = 7;
  EXPECT_FALSE(message(c).empty());
}

class TinyModels : public ::testing::TestWithParam<const char *> {};

// Counting the IR's distinct dense_resource constants gives the closed-form
// count (backbone + task head), with every tied weight counted once.
TEST_P(TinyModels, IRParameterCountMatchesFormula) {
  MLIRContext ctx;
  TransformerConfig cfg = preset(GetParam());
  GeneratedModel m = generate(ctx, cfg);
  ASSERT_TRUE(m.module);
  ParameterCount expected = countParameters(cfg);
  ModuleParameterStats stats = countModuleParameters(*m.module);
  EXPECT_EQ(stats.elements, expected.total());
  EXPECT_EQ(stats.duplicateConstants, 0);
  EXPECT_EQ(stats.missingBlobs, 0);
  EXPECT_EQ(stats.tensors, static_cast<int64_t>(m.params.size()));

  int64_t head = 0, all = 0;
  llvm::StringSet<> names;
  for (const ParamInfo &p : m.params) {
    all += p.numElements();
    if (p.taskHead)
      head += p.numElements();
    EXPECT_TRUE(names.insert(p.name).second) << "duplicate " << p.name;
  }
  EXPECT_EQ(all, expected.total());
  EXPECT_EQ(head, expected.taskHead);
}

// The tied embedding is one constant with a use per consumer: gather + LM
// head (BERT, GPT-2), or both gathers + LM head (T5).
TEST_P(TinyModels, TiedEmbeddingIsOneConstantUsedSeveralTimes) {
  MLIRContext ctx;
  TransformerConfig cfg = preset(GetParam());
  GeneratedModel m = generate(ctx, cfg);
  ASSERT_TRUE(m.module);
  ASSERT_FALSE(m.params.empty());
  const ParamInfo &embedding = m.params.front();
  EXPECT_EQ(embedding.shape,
            (llvm::SmallVector<int64_t>{cfg.vocab, cfg.dModel}));
  auto [uses, ops] = usesOfKey(*m.module, embedding.resourceKey);
  EXPECT_EQ(ops, 1);
  EXPECT_EQ(uses, cfg.family == ModelFamily::T5 ? 3 : 2);
}

// Printed IR parses back and verifies; the printed form is deterministic
// for a seed and changes with it.
TEST_P(TinyModels, RoundTripsAndIsDeterministic) {
  TransformerConfig cfg = preset(GetParam());
  // Resource keys are uniqued per context: generate in fresh contexts.
  MLIRContext ctx2, ctx3;
  std::string textA = print(*generate(ctx2, cfg, WeightInit::Random, 7).module);
  std::string textB = print(*generate(ctx3, cfg, WeightInit::Random, 7).module);
  EXPECT_EQ(textA, textB);
  MLIRContext ctx4;
  std::string textC = print(*generate(ctx4, cfg, WeightInit::Random, 8).module);
  EXPECT_NE(textA, textC);

  MLIRContext parseCtx;
  DialectRegistry registry;
  registerModelGenDialects(registry);
  parseCtx.appendDialectRegistry(registry);
  OwningOpRef<ModuleOp> parsed =
      parseSourceString<ModuleOp>(textA, ParserConfig(&parseCtx));
  ASSERT_TRUE(parsed);
  ModuleParameterStats stats = countModuleParameters(*parsed);
  EXPECT_EQ(stats.elements, countParameters(cfg).total());
  EXPECT_EQ(stats.missingBlobs, 0);
}

TEST_P(TinyModels, ShapeOnlyWeightsHaveNoBlobs) {
  MLIRContext ctx;
  TransformerConfig cfg = preset(GetParam());
  GeneratedModel m = generate(ctx, cfg, WeightInit::None);
  ASSERT_TRUE(m.module);
  ModuleParameterStats stats = countModuleParameters(*m.module);
  EXPECT_EQ(stats.missingBlobs, stats.tensors);
  EXPECT_EQ(stats.elements, countParameters(cfg).total());
  EXPECT_EQ(print(*m.module).find("dialect_resources"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(ModelGen, TinyModels,
                         ::testing::Values("tiny-bert", "tiny-gpt", "tiny-t5"));

// A full-size model, shape only: the IR's constants add up to the published
// size (plus BERT's pre-training heads).
TEST(TransformerGen, BertLargeShapeOnlyCount) {
  MLIRContext ctx;
  TransformerConfig cfg = preset("bert-large");
  GeneratedModel m = generate(ctx, cfg, WeightInit::None);
  ASSERT_TRUE(m.module);
  ModuleParameterStats stats = countModuleParameters(*m.module);
  ParameterCount expected = countParameters(cfg);
  EXPECT_EQ(stats.elements, expected.total());
  EXPECT_EQ(stats.elements - expected.taskHead, 335141888);
}

TEST(TransformerGen, ForwardSignature) {
  MLIRContext ctx;
  TransformerConfig cfg = preset("tiny-t5");
  GeneratedModel m = generate(ctx, cfg);
  ASSERT_TRUE(m.module);
  auto fn = m.module->lookupSymbol<func::FuncOp>("forward");
  ASSERT_TRUE(fn);
  FunctionType type = fn.getFunctionType();
  ASSERT_EQ(type.getNumInputs(), 3u);
  EXPECT_EQ(cast<RankedTensorType>(type.getInput(1)).getShape(),
            (llvm::ArrayRef<int64_t>{cfg.batch, cfg.getDecoderSeq()}));
  ASSERT_EQ(type.getNumResults(), 1u);
  EXPECT_EQ(cast<RankedTensorType>(type.getResult(0)).getRank(), 0);
}

} // namespace
