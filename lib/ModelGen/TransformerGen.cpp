//===- TransformerGen.cpp - Transformer model generator -------------------===//
//
// Emits BERT / GPT-2 / T5 forward + loss functions in torch-mlir's
// linalg-on-tensors dialect mix. The point is to reproduce the idioms that
// downstream passes meet in real imported models (see
// docs/model-generator.md for the list), not to produce the fastest IR:
// ops are kept at torch's granularity (one generic per ATen op) on purpose.
//
//===----------------------------------------------------------------------===//

#include "pipe/ModelGen/TransformerGen.h"

#include "ModelBuilder.h"

#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::pipe::modelgen;
using namespace mlir::pipe::modelgen::detail;

void mlir::pipe::modelgen::registerModelGenDialects(DialectRegistry &registry) {
  registry.insert<arith::ArithDialect, func::FuncDialect, linalg::LinalgDialect,
                  math::MathDialect, ml_program::MLProgramDialect,
                  tensor::TensorDialect, vector::VectorDialect>();
}

//===----------------------------------------------------------------------===//
// Models
//===----------------------------------------------------------------------===//

Value ModelBuilder::buildBert(ValueRange args) {
  const int64_t d = cfg.dModel, s = cfg.seq, bsz = cfg.batch;
  const bool f64Var = cfg.layerNormF64;
  Value ids = args[0], labels = args[1];

  // Weights are created in separate statements: C++ leaves the order of
  // argument evaluation open, and creation order fixes resource keys.
  site("embeddings");
  Value wordE = weight("bert.embeddings.word_embeddings.weight", {cfg.vocab, d},
                       Init::Normal);
  Value posE = weight("bert.embeddings.position_embeddings.weight",
                      {cfg.maxPositions, d}, Init::Normal);
  Value typeE = weight("bert.embeddings.token_type_embeddings.weight",
                       {cfg.typeVocab, d}, Init::Normal);
  Value x = gather(wordE, ids);
  // token_type_ids default to the zero buffer of BertEmbeddings.
  Value typeIds = inConstantArea([&] {
    auto t = tensorOf({1, s}, i64);
    return arith::ConstantOp::create(
               b, loc, DenseElementsAttr::get(t, b.getI64IntegerAttr(0)))
        .getResult();
  });
  Value typeEmb = gather(typeE, typeIds);
  x = add(x, typeEmb);
  Value posEmb = gather(posE, positionIds(s));
  x = add(x, posEmb);
  site("embeddings.LayerNorm");
  x = layerNormWith("bert.embeddings.LayerNorm.", x, f64Var);

  for (int64_t layer = 0; layer < cfg.layers; ++layer) {
    std::string p = llvm::formatv("bert.encoder.layer.{0}.", layer).str();
    site("attention.self.query");
    Value q = linearT(p + "attention.self.query.", x, d, /*bias=*/true);
    site("attention.self.key");
    Value k = linearT(p + "attention.self.key.", x, d, /*bias=*/true);
    site("attention.self.value");
    Value v = linearT(p + "attention.self.value.", x, d, /*bias=*/true);
    Value a = attention(q, k, v, /*scale=*/true, /*causal=*/false, {});
    site("attention.output.dense");
    a = linearT(p + "attention.output.dense.", a, d, /*bias=*/true);
    site("attention.output.LayerNorm");
    Value res = add(a, x);
    x = layerNormWith(p + "attention.output.LayerNorm.", res, f64Var);
    site("intermediate.dense");
    Value hdn = linearMM(p + "intermediate.dense.", x, cfg.ff);
    site("intermediate.gelu");
    hdn = gelu(hdn, cfg.gelu);
    site("output.dense");
    hdn = linearMM(p + "output.dense.", hdn, d);
    site("output.LayerNorm");
    res = add(hdn, x);
    x = layerNormWith(p + "output.LayerNorm.", res, f64Var);
  }

  Value pooled;
  if (cfg.pooler) {
    // hidden_states[:, 0]: slice + collapse, then dense + tanh.
    site("pooler");
    Value first = tensor::ExtractSliceOp::create(
        b, loc, x, indexAttrs({0, 0, 0}), indexAttrs({bsz, 1, d}),
        indexAttrs({1, 1, 1}));
    first = collapse(first, {{0}, {1, 2}});
    pooled = linearMM("bert.pooler.dense.", first, d);
    pooled = unary(pooled, [](OpBuilder &nb, Location l, Value v) -> Value {
      return math::TanhOp::create(nb, l, v);
    });
  }

  // Pre-training heads (task head): MLM transform, decoder tied to the word
  // embedding (the same constant as the gather above), NSP classifier.
  taskHead = true;
  site("cls.predictions.transform");
  Value t = linearT("cls.predictions.transform.dense.", x, d, /*bias=*/true);
  t = gelu(t, cfg.gelu);
  t = layerNormWith("cls.predictions.transform.LayerNorm.", t, f64Var);
  site("cls.predictions.decoder");
  Value decBias = weight("cls.predictions.bias", {cfg.vocab}, Init::Zeros);
  Value logits = addBias(contractT(t, wordE), decBias);
  Value loss = crossEntropy3d(logits, labels);
  if (cfg.pooler) {
    site("cls.seq_relationship");
    Value nsp = linearMM("cls.seq_relationship.", pooled, 2);
    Value nspLoss = crossEntropy(nsp, args[2]);
    site("loss.total");
    loss = add(loss, nspLoss);
  }
  taskHead = false;
  return loss;
}

Value ModelBuilder::buildGpt2(ValueRange args) {
  const int64_t d = cfg.dModel, s = cfg.seq, bsz = cfg.batch;
  Value ids = args[0];
  site("wte");
  Value wte = weight("transformer.wte.weight", {cfg.vocab, d}, Init::Normal);
  Value x = gather(wte, ids);
  site("wpe");
  Value wpe =
      weight("transformer.wpe.weight", {cfg.maxPositions, d}, Init::Normal);
  Value posEmb = gather(wpe, positionIds(s));
  x = add(x, posEmb);

  for (int64_t layer = 0; layer < cfg.layers; ++layer) {
    std::string p = llvm::formatv("transformer.h.{0}.", layer).str();
    site("ln_1");
    Value h = layerNormWith(p + "ln_1.", x, cfg.layerNormF64);
    site("attn.c_attn");
    Value qkv = conv1d(p + "attn.c_attn.", h, 3 * d);
    // qkv.split(d, dim=2)
    site("attn.split");
    auto slice = [&](int64_t part) -> Value {
      return tensor::ExtractSliceOp::create(
          b, loc, qkv, indexAttrs({0, 0, part * d}), indexAttrs({bsz, s, d}),
          indexAttrs({1, 1, 1}));
    };
    Value q = slice(0);
    Value k = slice(1);
    Value v = slice(2);
    Value a = attention(q, k, v, /*scale=*/true, /*causal=*/true, {});
    site("attn.c_proj");
    a = conv1d(p + "attn.c_proj.", a, d);
    site("attn.residual");
    x = add(a, x);
    site("ln_2");
    h = layerNormWith(p + "ln_2.", x, cfg.layerNormF64);
    site("mlp.c_fc");
    h = conv1d(p + "mlp.c_fc.", h, cfg.ff);
    site("mlp.act");
    h = gelu(h, cfg.gelu);
    site("mlp.c_proj");
    h = conv1d(p + "mlp.c_proj.", h, d);
    site("mlp.residual");
    x = add(h, x);
  }
  site("ln_f");
  x = layerNormWith("transformer.ln_f.", x, cfg.layerNormF64);
  if (cfg.classes > 0) {
    // hidden_states[:, -1] (every sequence is full length), or their mean
    // over the positions, through score.
    taskHead = true;
    site("score");
    Value pooled;
    if (cfg.pooling == ClassifierPooling::Last) {
      pooled = tensor::ExtractSliceOp::create(
          b, loc, x, indexAttrs({0, s - 1, 0}), indexAttrs({bsz, 1, d}),
          indexAttrs({1, 1, 1}));
      pooled = collapse(pooled, {{0}, {1, 2}});
    } else {
      AffineExpr bi = getAffineDimExpr(0, ctx), ji = getAffineDimExpr(1, ctx),
                 si = getAffineDimExpr(2, ctx);
      Value sum = generic(
          tensorOf({bsz, d}), {x}, {AffineMap::get(3, 0, {bi, si, ji}, ctx)},
          AffineMap::get(3, 0, {bi, ji}, ctx),
          {utils::IteratorType::parallel, utils::IteratorType::parallel,
           utils::IteratorType::reduction},
          filled({bsz, d}, cstF(0.0)),
          [](OpBuilder &nb, Location l, ValueRange a) -> Value {
            return arith::AddFOp::create(nb, l, a[0], a[1]);
          });
      Value inverse = cstF(1.0 / double(s));
      pooled = unary(sum, [&](OpBuilder &nb, Location l, Value v) -> Value {
        return arith::MulFOp::create(nb, l, v, inverse);
      });
    }
    Value logits = linearT("score.", pooled, cfg.classes, /*bias=*/false);
    taskHead = false;
    return logits;
  }
  // lm_head: tied to wte, no bias.
  site("lm_head");
  Value logits = contractT(x, wte);
  return crossEntropy3d(logits, args[1]);
}

Value ModelBuilder::buildT5(ValueRange args) {
  const int64_t d = cfg.dModel, inner = cfg.heads * cfg.getHeadDim();
  const int64_t s = cfg.seq, sd = cfg.getDecoderSeq();
  Value ids = args[0], labels = args[1], decIds = args[2];
  site("shared");
  Value shared = weight("shared.weight", {cfg.vocab, d}, Init::Normal);

  auto attentionBlock = [&](const std::string &p, Value xq, Value xkv,
                            bool causal, Value bias) {
    site("attention.q");
    Value q = linearT(p + "q.", xq, inner, /*bias=*/false);
    site("attention.k");
    Value k = linearT(p + "k.", xkv, inner, /*bias=*/false);
    site("attention.v");
    Value v = linearT(p + "v.", xkv, inner, /*bias=*/false);
    // T5 does not scale the scores (folded into the initialisation).
    Value a = attention(q, k, v, /*scale=*/false, causal, bias);
    site("attention.o");
    return linearT(p + "o.", a, d, /*bias=*/false);
  };
  auto ffnBlock = [&](const std::string &p, Value x) {
    site("DenseReluDense.wi");
    Value h = linearT(p + "wi.", x, cfg.ff, /*bias=*/false);
    site("DenseReluDense.relu");
    Value zero = cstF(0.0);
    h = unary(h, [&](OpBuilder &nb, Location l, Value v) -> Value {
      return arith::MaximumFOp::create(nb, l, v, zero);
    });
    site("DenseReluDense.wo");
    return linearT(p + "wo.", h, d, /*bias=*/false);
  };
  auto norm = [&](const std::string &name, Value x) {
    site("layer_norm");
    Value w = weight(name, {d}, Init::Ones);
    return rmsNorm(x, w);
  };
  auto biasTable = [&](llvm::StringRef stack) {
    return weight((stack +
                   ".block.0.layer.0.SelfAttention.relative_attention_bias."
                   "weight")
                      .str(),
                  {cfg.relBuckets, cfg.heads}, Init::Normal);
  };

  // Encoder. The position bias is computed once (parameters in block 0)
  // and added in every layer, as HF T5 passes it down the stack.
  site("encoder.embed_tokens");
  Value x = gather(shared, ids);
  Value encBias;
  if (cfg.relativeBias)
    encBias = relativeBias(biasTable("encoder"), s, s, /*bidirectional=*/true);
  for (int64_t layer = 0; layer < cfg.layers; ++layer) {
    std::string p = llvm::formatv("encoder.block.{0}.", layer).str();
    Value h = norm(p + "layer.0.layer_norm.weight", x);
    Value a =
        attentionBlock(p + "layer.0.SelfAttention.", h, h, false, encBias);
    x = add(x, a);
    h = norm(p + "layer.1.layer_norm.weight", x);
    Value f = ffnBlock(p + "layer.1.DenseReluDense.", h);
    x = add(x, f);
  }
  Value encOut = norm("encoder.final_layer_norm.weight", x);

  // Decoder: every layer's cross-attention reads the final encoder output.
  site("decoder.embed_tokens");
  Value y = gather(shared, decIds);
  Value decBias;
  if (cfg.relativeBias)
    decBias =
        relativeBias(biasTable("decoder"), sd, sd, /*bidirectional=*/false);
  for (int64_t layer = 0; layer < cfg.decoderLayers; ++layer) {
    std::string p = llvm::formatv("decoder.block.{0}.", layer).str();
    Value h = norm(p + "layer.0.layer_norm.weight", y);
    Value a = attentionBlock(p + "layer.0.SelfAttention.", h, h, true, decBias);
    y = add(y, a);
    h = norm(p + "layer.1.layer_norm.weight", y);
    Value c =
        attentionBlock(p + "layer.1.EncDecAttention.", h, encOut, false, {});
    y = add(y, c);
    h = norm(p + "layer.2.layer_norm.weight", y);
    Value f = ffnBlock(p + "layer.2.DenseReluDense.", h);
    y = add(y, f);
  }
  y = norm("decoder.final_layer_norm.weight", y);
  // Tied LM head: rescale by d_model^-0.5, then shared^T through torch's
  // addmm route (transpose copy + linalg.matmul).
  site("lm_head");
  Value scaleC = cstF(1.0 / std::sqrt(static_cast<double>(d)));
  y = unary(y, [&](OpBuilder &nb, Location l, Value v) -> Value {
    return arith::MulFOp::create(nb, l, v, scaleC);
  });
  Value logits = matmulT(y, shared, {});
  return crossEntropy3d(logits, labels);
}

void ModelBuilder::buildMain(func::FuncOp forward) {
  site("main");
  auto fnType = b.getFunctionType({}, {});
  auto mainFn = func::FuncOp::create(b, loc, "main", fnType);
  Block *body = mainFn.addEntryBlock();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(body);
  llvm::SmallVector<Value> args;
  unsigned argNo = 0;
  for (Type t : forward.getFunctionType().getInputs()) {
    auto tt = cast<RankedTensorType>(t);
    llvm::SmallVector<int64_t> values;
    llvm::ArrayRef<int64_t> shape = tt.getShape();
    int64_t cols = shape.size() == 2 ? shape[1] : 1;
    for (int64_t i = 0, e = tt.getNumElements(); i < e; ++i) {
      int64_t row = i / cols, col = i % cols;
      int64_t v;
      switch (argNo) {
      case 0:
        v = (row * 31 + col * 7 + 1) % cfg.vocab;
        break;
      case 1:
        v = (row * 17 + col * 5 + 3) % cfg.vocab;
        break;
      default:
        v = cfg.family == ModelFamily::Bert
                ? i % 2
                : (row * 13 + col * 3 + 2) % cfg.vocab;
        break;
      }
      values.push_back(v);
    }
    args.push_back(arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(tt, llvm::ArrayRef<int64_t>(values))));
    ++argNo;
  }
  Value loss = func::CallOp::create(b, loc, forward, args).getResult(0);
  Value scalarLoss = tensor::ExtractOp::create(b, loc, loss, ValueRange{});
  if (ft != b.getF32Type())
    scalarLoss = arith::ExtFOp::create(b, loc, b.getF32Type(), scalarLoss);
  vector::PrintOp::create(b, loc, scalarLoss);
  func::ReturnOp::create(b, loc);
}

llvm::Expected<GeneratedModel> ModelBuilder::build() {
  if (llvm::Error err = verifyConfig(cfg))
    return std::move(err);

  GeneratedModel result;
  site("module");
  result.module = ModuleOp::create(loc);
  ModuleOp module = *result.module;
  b.setInsertionPointToEnd(module.getBody());

  // torch-mlir always declares the RNG seed global, used or not.
  auto seedType = tensorOf({}, i64);
  ml_program::GlobalOp::create(
      b, loc, "global_seed", seedType, /*is_mutable=*/true,
      DenseElementsAttr::get(seedType, b.getI64IntegerAttr(0)),
      b.getStringAttr("private"));

  llvm::SmallVector<Type> inputs = {tensorOf({cfg.batch, cfg.seq}, i64)};
  switch (cfg.family) {
  case ModelFamily::Bert:
    inputs.push_back(tensorOf({cfg.batch, cfg.seq}, i64));
    if (cfg.pooler)
      inputs.push_back(tensorOf({cfg.batch}, i64));
    break;
  case ModelFamily::Gpt2:
    if (cfg.classes == 0)
      inputs.push_back(tensorOf({cfg.batch, cfg.seq}, i64));
    break;
  case ModelFamily::T5:
    inputs.push_back(tensorOf({cfg.batch, cfg.getDecoderSeq()}, i64));
    inputs.push_back(tensorOf({cfg.batch, cfg.getDecoderSeq()}, i64));
    break;
  }
  if (cfg.classes > 0 && opts.emitMain)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "a main that prints the loss needs a model returning one; a "
        "classifier returns logits");
  Type resultType =
      cfg.classes > 0 ? tensorOf({cfg.batch, cfg.classes}) : tensorOf({});
  auto fn = func::FuncOp::create(b, loc, "forward",
                                 b.getFunctionType(inputs, {resultType}));
  entry = fn.addEntryBlock();
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(entry);
    Value loss;
    switch (cfg.family) {
    case ModelFamily::Bert:
      loss = buildBert(entry->getArguments());
      break;
    case ModelFamily::Gpt2:
      loss = buildGpt2(entry->getArguments());
      break;
    case ModelFamily::T5:
      loss = buildT5(entry->getArguments());
      break;
    }
    site("return");
    func::ReturnOp::create(b, loc, loss);
  }
  if (opts.emitMain)
    buildMain(fn);

  if (failed(verify(module)))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "internal error: generated IR for '" +
                                       cfg.name + "' does not verify");
  result.params = std::move(params);
  return std::move(result);
}

llvm::Expected<GeneratedModel>
mlir::pipe::modelgen::generateTransformer(MLIRContext &context,
                                          const TransformerConfig &config,
                                          const GenerateOptions &options) {
  DialectRegistry registry;
  registerModelGenDialects(registry);
  context.appendDialectRegistry(registry);
  context.loadAllAvailableDialects();
  ModelBuilder builder(context, config, options);
  return builder.build();
}

ModuleParameterStats
mlir::pipe::modelgen::countModuleParameters(ModuleOp module) {
  ModuleParameterStats stats;
  llvm::StringSet<> seen;
  module.walk([&](arith::ConstantOp op) {
    auto attr = dyn_cast<DenseResourceElementsAttr>(op.getValue());
    if (!attr)
      return;
    DenseResourceElementsHandle handle = attr.getRawHandle();
    if (!seen.insert(handle.getKey()).second) {
      ++stats.duplicateConstants;
      return;
    }
    ++stats.tensors;
    stats.elements += attr.getType().getNumElements();
    if (!handle.getBlob())
      ++stats.missingBlobs;
  });
  return stats;
}
