//===- TransformerConfig.cpp - Presets, checks and parameter counts -------===//
//
// The closed-form parameter counts here are the ground truth the generated
// IR is tested against; docs/model-generator.md derives each formula.
//
//===----------------------------------------------------------------------===//

#include "pipe/ModelGen/TransformerGen.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::pipe::modelgen;

int64_t TransformerConfig::getHeadDim() const {
  if (headDim > 0)
    return headDim;
  return heads > 0 ? dModel / heads : 0;
}

int64_t ParamInfo::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

//===----------------------------------------------------------------------===//
// Presets
//===----------------------------------------------------------------------===//

static TransformerConfig makeBert(llvm::StringRef name, int64_t layers,
                                  int64_t d, int64_t heads, int64_t ff,
                                  int64_t vocab, int64_t maxPos, int64_t seq,
                                  int64_t batch) {
  TransformerConfig c;
  c.name = name.str();
  c.family = ModelFamily::Bert;
  c.layers = layers;
  c.dModel = d;
  c.heads = heads;
  c.ff = ff;
  c.vocab = vocab;
  c.maxPositions = maxPos;
  c.typeVocab = 2;
  c.seq = seq;
  c.batch = batch;
  c.pooler = true;
  c.layerNormF64 = true;
  c.gelu = GeluApprox::Erf;
  c.normEps = 1e-12;
  return c;
}

static TransformerConfig makeGpt2(llvm::StringRef name, int64_t layers,
                                  int64_t d, int64_t heads, int64_t ff,
                                  int64_t vocab, int64_t ctx, int64_t seq,
                                  int64_t batch) {
  TransformerConfig c;
  c.name = name.str();
  c.family = ModelFamily::Gpt2;
  c.layers = layers;
  c.dModel = d;
  c.heads = heads;
  c.ff = ff;
  c.vocab = vocab;
  c.maxPositions = ctx;
  c.seq = seq;
  c.batch = batch;
  c.layerNormF64 = false;
  c.gelu = GeluApprox::Tanh;
  c.normEps = 1e-5;
  return c;
}

static TransformerConfig makeT5(llvm::StringRef name, int64_t layers, int64_t d,
                                int64_t heads, int64_t headDim, int64_t ff,
                                int64_t vocab, int64_t seq, int64_t decSeq,
                                int64_t batch) {
  TransformerConfig c;
  c.name = name.str();
  c.family = ModelFamily::T5;
  c.layers = layers;
  c.decoderLayers = layers;
  c.dModel = d;
  c.heads = heads;
  c.headDim = headDim;
  c.ff = ff;
  c.vocab = vocab;
  c.relBuckets = 32;
  c.relMaxDistance = 128;
  c.relativeBias = true;
  c.seq = seq;
  c.decoderSeq = decSeq;
  c.batch = batch;
  c.layerNormF64 = false;
  c.normEps = 1e-6;
  return c;
}

llvm::ArrayRef<llvm::StringRef> mlir::pipe::modelgen::getPresetNames() {
  static const llvm::StringRef names[] = {"tiny-bert", "tiny-gpt",   "tiny-t5",
                                          "bert-base", "bert-large", "gpt2",
                                          "gpt2-xl",   "t5-small",   "t5-3b"};
  return names;
}

std::optional<TransformerConfig>
mlir::pipe::modelgen::lookupPreset(llvm::StringRef name) {
  // Sequence and batch sizes of the large presets follow FTPipe's runs
  // (BERT seq 128; GPT-2 context 1024; T5 input 512, answer 4); the batch is
  // a per-step default that --batch overrides.
  if (name == "tiny-bert")
    return makeBert(name, 2, 32, 2, 64, 64, 64, 16, 2);
  if (name == "bert-base")
    return makeBert(name, 12, 768, 12, 3072, 30522, 512, 128, 8);
  if (name == "bert-large")
    return makeBert(name, 24, 1024, 16, 4096, 30522, 512, 128, 8);
  if (name == "tiny-gpt")
    return makeGpt2(name, 2, 32, 2, 64, 64, 64, 16, 2);
  if (name == "gpt2")
    return makeGpt2(name, 12, 768, 12, 3072, 50257, 1024, 1024, 1);
  if (name == "gpt2-xl")
    return makeGpt2(name, 48, 1600, 25, 6400, 50257, 1024, 1024, 1);
  if (name == "tiny-t5")
    return makeT5(name, 2, 32, 4, 8, 64, 64, 16, 8, 2);
  if (name == "t5-small")
    return makeT5(name, 6, 512, 8, 64, 2048, 32128, 512, 4, 4);
  if (name == "t5-3b")
    return makeT5(name, 24, 1024, 32, 128, 16384, 32128, 512, 4, 4);
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Checks
//===----------------------------------------------------------------------===//

static llvm::Error rangeError(llvm::StringRef field, int64_t value, int64_t lo,
                              int64_t hi) {
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      llvm::formatv("{0} = {1} is out of range: expected {2}..{3}", field,
                    value, lo, hi)
          .str());
}

llvm::Error mlir::pipe::modelgen::verifyConfig(const TransformerConfig &c) {
  // The bounds keep every tensor size and the parameter total well inside
  // int64 (largest product: batch * heads * seq * seq <= 2^60).
  struct Field {
    llvm::StringRef name;
    int64_t value, lo, hi;
  };
  const int64_t big = int64_t(1) << 22;
  llvm::SmallVector<Field> fields = {
      {"layers", c.layers, 1, 4096}, {"d-model", c.dModel, 1, big},
      {"heads", c.heads, 1, 4096},   {"ff", c.ff, 1, big},
      {"vocab", c.vocab, 2, big},    {"seq", c.seq, 1, 65536},
      {"batch", c.batch, 1, 65536},
  };
  if (c.family != ModelFamily::T5)
    fields.push_back({"max-positions", c.maxPositions, 1, big});
  if (c.family == ModelFamily::Bert)
    fields.push_back({"type-vocab", c.typeVocab, 1, big});
  if (c.classes != 0) {
    if (c.family != ModelFamily::Gpt2)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "classes: only the GPT-2 family has a sequence-classification head");
    fields.push_back({"classes", c.classes, 2, big});
  }
  if (c.family == ModelFamily::T5) {
    fields.push_back({"decoder-layers", c.decoderLayers, 1, 4096});
    fields.push_back({"head-dim", c.getHeadDim(), 1, big});
    fields.push_back({"decoder-seq", c.getDecoderSeq(), 1, 65536});
    if (c.relativeBias) {
      fields.push_back({"relative-buckets", c.relBuckets, 4, 4096});
      fields.push_back({"relative-max-distance", c.relMaxDistance,
                        c.relBuckets / 2 + 1, 1 << 20});
    }
  }
  for (const Field &f : fields)
    if (f.value < f.lo || f.value > f.hi)
      return rangeError(f.name, f.value, f.lo, f.hi);

  if (c.family != ModelFamily::T5) {
    if (c.dModel % c.heads != 0)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          llvm::formatv("d-model = {0} is not divisible by heads = {1}",
                        c.dModel, c.heads)
              .str());
    if (c.headDim > 0 && c.headDim != c.dModel / c.heads)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          llvm::formatv("head-dim = {0} must be d-model / heads = {1} for "
                        "this model family",
                        c.headDim, c.dModel / c.heads)
              .str());
    if (c.seq > c.maxPositions)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          llvm::formatv("seq = {0} exceeds max-positions = {1} (the learned "
                        "position table)",
                        c.seq, c.maxPositions)
              .str());
  }
  if (c.family == ModelFamily::T5 && c.relativeBias && c.relBuckets % 2 != 0)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("relative-buckets = {0} must be even", c.relBuckets)
            .str());
  if (!(c.normEps > 0.0) || c.normEps > 1.0)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("norm epsilon {0} must be in (0, 1]", c.normEps).str());
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Parameter counts
//===----------------------------------------------------------------------===//

ParameterCount
mlir::pipe::modelgen::countParameters(const TransformerConfig &c) {
  ParameterCount r;
  const int64_t d = c.dModel, ff = c.ff, v = c.vocab;
  switch (c.family) {
  case ModelFamily::Bert: {
    // Word, position and token-type tables plus the embedding LayerNorm.
    int64_t embeddings = v * d + c.maxPositions * d + c.typeVocab * d + 2 * d;
    // Q, K, V, O (weight + bias), two LayerNorms, FFN in and out.
    int64_t layer =
        4 * (d * d + d) + 2 * d + (d * ff + ff) + (ff * d + d) + 2 * d;
    int64_t pooler = c.pooler ? d * d + d : 0;
    r.model = embeddings + c.layers * layer + pooler;
    // MLM: transform dense + LayerNorm + output bias (decoder weight tied to
    // the word embedding). NSP: 2-way classifier on the pooled output.
    r.taskHead = (d * d + d) + 2 * d + v + (c.pooler ? 2 * d + 2 : 0);
    return r;
  }
  case ModelFamily::Gpt2: {
    int64_t embeddings = v * d + c.maxPositions * d;
    // ln_1, c_attn (d x 3d + 3d), attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj.
    int64_t layer = 2 * d + (3 * d * d + 3 * d) + (d * d + d) + 2 * d +
                    (d * ff + ff) + (ff * d + d);
    r.model = embeddings + c.layers * layer + 2 * d; // + ln_f
    // LM head tied to wte; a classifier's score has no bias.
    r.taskHead = c.classes * d;
    return r;
  }
  case ModelFamily::T5: {
    int64_t inner = c.heads * c.getHeadDim();
    int64_t attention = 4 * d * inner; // q, k, v: [inner, d]; o: [d, inner]
    int64_t ffn = 2 * d * ff;          // wi [ff, d], wo [d, ff]
    int64_t encLayer = attention + d + ffn + d;
    int64_t decLayer = 2 * attention + 3 * d + ffn;
    r.relativeBias = c.relativeBias ? 2 * c.relBuckets * c.heads : 0;
    r.model = v * d + c.layers * encLayer + d + c.decoderLayers * decLayer + d +
              r.relativeBias;
    r.taskHead = 0; // LM head tied to the shared embedding
    return r;
  }
  }
  return r;
}
