//===- TransformerGen.h - Transformer model generator -----------*- C++ -*-===//
//
// Builds linalg-on-tensors IR for BERT-, GPT-2- and T5-style transformers
// ending in a cross-entropy loss, in the shape torch-mlir's FX importer
// prints for `output_type="linalg-on-tensors"`: weights as dense_resource
// constants (blobs optional), matmuls as permuted linalg.generic contractions
// as well as linalg.matmul / linalg.batch_matmul, head split/merge through
// expand_shape/collapse_shape and generic permutes, embedding lookups as
// generic gathers, and an `ml_program.global @global_seed`.
//
// The generator gives the compiler realistic inputs (the FTPipe models:
// BERT-Large, GPT2-XL, T5-3B) without PyTorch. See docs/model-generator.md.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_MODELGEN_TRANSFORMERGEN_H
#define PIPE_MODELGEN_TRANSFORMERGEN_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mlir {
class DialectRegistry;
class MLIRContext;

namespace pipe {
namespace modelgen {

/// The architecture family a configuration instantiates.
enum class ModelFamily {
  /// Post-LN encoder, GELU(erf), token+position+type embeddings, pooler;
  /// pre-training heads (MLM tied to the word embedding, NSP) for the loss.
  Bert,
  /// Pre-LN causal decoder, GELU(tanh), learned positions, final LN, LM head
  /// tied to the token embedding, Conv1D weights stored [in, out].
  Gpt2,
  /// Encoder-decoder, RMSNorm without bias, no biases, ReLU FFN, relative
  /// position bias, one embedding shared by both stacks and the LM head.
  T5,
};

enum class GeluApprox { Erf, Tanh };

/// How weight constants get their data.
enum class WeightInit {
  /// Deterministic pseudo-random data (normal, std 0.02, from --seed);
  /// norm scales are one, biases zero, as the reference models initialise.
  Random,
  /// All zeros.
  Zero,
  /// No data: the resource key is referenced but absent from the
  /// dialect_resources section (like an elided dump). Shape only.
  None,
};

/// How a sequence classifier reduces the positions' hidden states.
enum class ClassifierPooling { Last, Mean };

/// Everything that fixes the generated graph. Sizes are element counts.
struct TransformerConfig {
  std::string name = "custom";
  ModelFamily family = ModelFamily::Gpt2;
  /// Encoder layers (BERT, T5) or decoder layers (GPT-2).
  int64_t layers = 2;
  /// T5 decoder layers.
  int64_t decoderLayers = 0;
  int64_t dModel = 32;
  int64_t heads = 2;
  /// Per-head size. BERT and GPT-2 require dModel / heads (0 = derive); T5
  /// has an independent d_kv (inner attention size heads * headDim).
  int64_t headDim = 0;
  int64_t ff = 64;
  int64_t vocab = 64;
  /// Learned position table size (BERT, GPT-2).
  int64_t maxPositions = 64;
  /// BERT token-type vocabulary.
  int64_t typeVocab = 2;
  /// T5 relative attention: buckets and max distance; `relativeBias` off
  /// omits the bias (and its parameters) entirely.
  int64_t relBuckets = 32;
  int64_t relMaxDistance = 128;
  bool relativeBias = true;
  /// Input sequence, T5 decoder sequence (0 = seq), batch.
  int64_t seq = 16;
  int64_t decoderSeq = 0;
  int64_t batch = 2;
  /// BERT: pooler (dense + tanh on token 0) and with it the NSP head.
  bool pooler = true;
  /// GPT-2 as a sequence classifier when > 0 (Hugging Face's
  /// GPT2ForSequenceClassification): the pooled final hidden state through
  /// `score.weight` [classes, d] (no bias); the function takes the ids only
  /// and returns the logits [batch, classes], an inference graph a loss is
  /// attached to (pipe-attach-loss). 0: the language model, returning its
  /// loss.
  int64_t classes = 0;
  /// The classifier's pooling: the last position's hidden state (Hugging
  /// Face's, every sequence being full length) or the mean over positions.
  ClassifierPooling pooling = ClassifierPooling::Last;
  /// Layer norm variance accumulated in f64 (arith.extf in the reduction,
  /// as torch-mlir emits for some reductions). BERT only, default on.
  bool layerNormF64 = false;
  GeluApprox gelu = GeluApprox::Tanh;
  double normEps = 1e-5;

  int64_t getHeadDim() const;
  int64_t getDecoderSeq() const { return decoderSeq > 0 ? decoderSeq : seq; }
};

/// Parameter counts: elements of distinct weight tensors (tied weights once).
struct ParameterCount {
  /// The backbone, as the published model sizes count it. For T5 this
  /// includes the relative attention bias tables (`relativeBias`).
  int64_t model = 0;
  /// Parameters only the loss head adds (BERT: MLM transform, LN and output
  /// bias, NSP classifier). GPT-2 and T5 tie their LM head: zero.
  int64_t taskHead = 0;
  /// Portion of `model` in T5 relative attention bias tables.
  int64_t relativeBias = 0;
  int64_t total() const { return model + taskHead; }
};

/// Closed-form parameter count of a configuration (docs list the formulas).
ParameterCount countParameters(const TransformerConfig &config);

/// Names of the built-in presets, in a stable order.
llvm::ArrayRef<llvm::StringRef> getPresetNames();

/// The preset called `name`, or std::nullopt.
std::optional<TransformerConfig> lookupPreset(llvm::StringRef name);

/// Checks sizes and family-specific constraints; the error names the field.
llvm::Error verifyConfig(const TransformerConfig &config);

struct GenerateOptions {
  WeightInit weights = WeightInit::Random;
  uint64_t seed = 0;
  /// Standard deviation of random matrices and embeddings.
  double initStd = 0.02;
  /// Also draw biases (N(0, std)) and norm scales (1 + N(0, std)) at random
  /// instead of zeros and ones, so numerical checks exercise them.
  bool randomizeAll = false;
  /// Element type of weights and activations: f32 (default) or bf16.
  bool bf16 = false;
  /// Also emit `func.func @main()` that calls @forward on fixed inputs and
  /// prints the loss with vector.print (for mlir-runner checks).
  bool emitMain = false;
};

/// One weight tensor of a generated model.
struct ParamInfo {
  /// Hugging Face style parameter path ("encoder.layer.0.attention...").
  std::string name;
  /// The dense_resource key the constant references.
  std::string resourceKey;
  llvm::SmallVector<int64_t> shape;
  bool taskHead = false;
  int64_t numElements() const;
};

struct GeneratedModel {
  OwningOpRef<ModuleOp> module;
  llvm::SmallVector<ParamInfo> params;
};

/// Registers the dialects generated IR uses.
void registerModelGenDialects(DialectRegistry &registry);

/// Builds the model. The context must have the dialects of
/// registerModelGenDialects loaded or registered.
llvm::Expected<GeneratedModel>
generateTransformer(MLIRContext &context, const TransformerConfig &config,
                    const GenerateOptions &options);

/// Parameters as the IR shows them: arith.constant dense_resource ops,
/// counted once per distinct resource key.
struct ModuleParameterStats {
  int64_t tensors = 0;
  int64_t elements = 0;
  /// Distinct keys whose blob is absent (shape-only weights).
  int64_t missingBlobs = 0;
  /// Constant ops referencing a key another constant op already references.
  int64_t duplicateConstants = 0;
};
ModuleParameterStats countModuleParameters(ModuleOp module);

} // namespace modelgen
} // namespace pipe
} // namespace mlir

#endif // PIPE_MODELGEN_TRANSFORMERGEN_H
