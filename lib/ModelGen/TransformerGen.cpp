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

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Verifier.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstring>

using namespace mlir;
using namespace mlir::pipe::modelgen;

void mlir::pipe::modelgen::registerModelGenDialects(DialectRegistry &registry) {
  registry.insert<arith::ArithDialect, func::FuncDialect, linalg::LinalgDialect,
                  math::MathDialect, ml_program::MLProgramDialect,
                  tensor::TensorDialect, vector::VectorDialect>();
}

namespace {

/// SplitMix64: tiny, portable and fully specified, so that a seed gives the
/// same weights on every platform (std::normal_distribution does not).
class Rng {
public:
  explicit Rng(uint64_t seed) : state(seed) {}
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  /// Uniform in (0, 1].
  double uniform() { return (double)((next() >> 11) + 1) * 0x1.0p-53; }
  /// Standard normal (Box-Muller, one value per call for simplicity).
  double normal() {
    double u1 = uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

private:
  uint64_t state;
};

uint16_t toBF16Bits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  uint32_t lsb = (bits >> 16) & 1;
  bits += 0x7fffu + lsb; // round to nearest even
  return static_cast<uint16_t>(bits >> 16);
}

enum class Init { Normal, Ones, Zeros };

using BodyFn = llvm::function_ref<Value(OpBuilder &, Location, ValueRange)>;

class ModelBuilder {
public:
  ModelBuilder(MLIRContext &ctx, const TransformerConfig &cfg,
               const GenerateOptions &opts)
      : ctx(&ctx), cfg(cfg), opts(opts), b(&ctx), loc(UnknownLoc::get(&ctx)),
        rng(opts.seed) {
    ft = opts.bf16 ? Type(b.getBF16Type()) : Type(b.getF32Type());
    i64 = b.getI64Type();
    f64 = b.getF64Type();
    switch (cfg.family) {
    case ModelFamily::Bert:
      file = "pipe_gen_bert.py";
      break;
    case ModelFamily::Gpt2:
      file = "pipe_gen_gpt2.py";
      break;
    case ModelFamily::T5:
      file = "pipe_gen_t5.py";
      break;
    }
  }

  llvm::Expected<GeneratedModel> build();

private:
  //===--------------------------------------------------------------------===//
  // Plumbing
  //===--------------------------------------------------------------------===//

  /// torch-mlir records the Python source line of each op; layers built in a
  /// loop share lines. Reproduce that: one synthetic line per call site.
  void site(llvm::StringRef name) {
    auto it = siteLines.try_emplace(name, 10 + 2 * siteLines.size()).first;
    loc = FileLineColLoc::get(ctx, file, it->second, 0);
  }

  RankedTensorType tensorOf(llvm::ArrayRef<int64_t> shape, Type et = {}) {
    return RankedTensorType::get(shape, et ? et : ft);
  }
  static llvm::ArrayRef<int64_t> shapeOf(Value v) {
    return cast<RankedTensorType>(v.getType()).getShape();
  }
  static Type elemOf(Value v) {
    return cast<RankedTensorType>(v.getType()).getElementType();
  }

  /// Runs `fn` with the builder in the constant area at the top of the
  /// entry block (canonicalized torch-mlir output keeps constants there).
  template <typename Fn> Value inConstantArea(Fn &&fn) {
    OpBuilder::InsertionGuard guard(b);
    if (lastConstant)
      b.setInsertionPointAfter(lastConstant);
    else
      b.setInsertionPointToStart(entry);
    Value v = fn();
    lastConstant = v.getDefiningOp();
    return v;
  }

  Value scalar(TypedAttr attr) {
    auto it = scalarCache.find(attr);
    if (it != scalarCache.end())
      return it->second;
    Location l = loc;
    Value v = inConstantArea(
        [&] { return arith::ConstantOp::create(b, l, attr).getResult(); });
    scalarCache[attr] = v;
    return v;
  }
  Value cstF(double v, Type et = {}) {
    return scalar(b.getFloatAttr(et ? et : ft, v));
  }
  Value cstF(const llvm::APFloat &v, Type et = {}) {
    return scalar(b.getFloatAttr(et ? et : ft, v));
  }
  Value cstI(int64_t v, Type et) { return scalar(b.getIntegerAttr(et, v)); }
  const llvm::fltSemantics &sem() {
    return cast<FloatType>(ft).getFloatSemantics();
  }

  /// A weight: `arith.constant dense_resource<torch_tensor_..._torch.dtype>`.
  /// Pseudo-random data is keyed by (seed, name), not creation order.
  Value weight(llvm::StringRef name, llvm::ArrayRef<int64_t> shape, Init init);

  Value empty(llvm::ArrayRef<int64_t> shape, Type et = {}) {
    return tensor::EmptyOp::create(b, loc, shape, et ? et : ft);
  }
  Value filled(llvm::ArrayRef<int64_t> shape, Value value) {
    Value e = empty(shape, value.getType());
    return linalg::FillOp::create(b, loc, ValueRange{value}, ValueRange{e})
        .getResult(0);
  }

  Value generic(RankedTensorType outType, ValueRange ins,
                llvm::ArrayRef<AffineMap> inMaps, AffineMap outMap,
                llvm::ArrayRef<utils::IteratorType> iters, Value init,
                BodyFn body) {
    llvm::SmallVector<AffineMap> maps(inMaps.begin(), inMaps.end());
    maps.push_back(outMap);
    auto op = linalg::GenericOp::create(
        b, loc, TypeRange{outType}, ins, ValueRange{init}, maps, iters,
        [&](OpBuilder &nb, Location l, ValueRange args) {
          Value r = body(nb, l, args);
          linalg::YieldOp::create(nb, l, r);
        });
    return op.getResult(0);
  }

  /// Elementwise op with torch broadcasting: inputs right-aligned, size-1
  /// dimensions read at constant index 0 (as torch-mlir's maps do). The body
  /// sees the input elements only.
  Value elementwise(llvm::ArrayRef<Value> ins, Type outEt, BodyFn body);
  Value add(Value x, Value y) {
    return elementwise({x, y}, elemOf(x),
                       [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                         return arith::AddFOp::create(nb, l, a[0], a[1]);
                       });
  }
  Value addBias(Value x, Value bias) { return add(x, bias); }

  /// Reduction over the last dimension into a keepdim [..., 1] tensor (the
  /// output map ends in the constant 0, as torch-mlir emits). `combine`
  /// gets (input element, accumulator).
  Value reduceLast(Value x, Value init, BodyFn combine);
  /// Sum of a rank-1 tensor into a 0-d tensor.
  Value sumAll(Value x);

  /// Copies `x` so that result dim i is input dim perm[i] (torch permute /
  /// transpose: permuted input map, identity output map).
  Value permute(Value x, llvm::ArrayRef<int64_t> perm);
  Value collapse(Value x, llvm::ArrayRef<ReassociationIndices> groups) {
    return tensor::CollapseShapeOp::create(b, loc, x, groups);
  }
  Value expand(Value x, llvm::ArrayRef<int64_t> shape,
               llvm::ArrayRef<ReassociationIndices> groups) {
    return tensor::ExpandShapeOp::create(b, loc, tensorOf(shape, elemOf(x)), x,
                                         groups);
  }
  /// Groups collapsing the leading `rank - 1` dims of a tensor into one.
  static llvm::SmallVector<ReassociationIndices> leadingGroups(int64_t rank) {
    ReassociationIndices lead;
    for (int64_t i = 0; i + 1 < rank; ++i)
      lead.push_back(i);
    return {lead, {rank - 1}};
  }

  //===--------------------------------------------------------------------===//
  // Layers
  //===--------------------------------------------------------------------===//

  /// x @ W^T with W stored [out, in], as one linalg.generic contraction
  /// whose weight map is the permuted (d_out, d_k).
  Value contractT(Value x, Value w);
  /// torch's addmm route for nn.Linear: flatten to 2-D, materialise W^T with
  /// a generic transpose copy, linalg.matmul, restore the shape.
  Value matmulT(Value x, Value w, Value bias);
  /// GPT-2's Conv1D: weight stored [in, out], x @ W + b via linalg.matmul.
  Value conv1dRaw(Value x, Value w, Value bias);

  /// nn.Linear `<prefix>weight` [out, in] (+ `<prefix>bias`) as a generic
  /// contraction.
  Value linearT(const std::string &prefix, Value x, int64_t out, bool bias) {
    int64_t in = shapeOf(x).back();
    Value w = weight(prefix + "weight", {out, in}, Init::Normal);
    Value bv = bias ? weight(prefix + "bias", {out}, Init::Zeros) : Value();
    Value y = contractT(x, w);
    return bias ? addBias(y, bv) : y;
  }
  /// nn.Linear through the addmm route (matmulT).
  Value linearMM(const std::string &prefix, Value x, int64_t out) {
    int64_t in = shapeOf(x).back();
    Value w = weight(prefix + "weight", {out, in}, Init::Normal);
    Value bv = weight(prefix + "bias", {out}, Init::Zeros);
    return matmulT(x, w, bv);
  }
  /// GPT-2 Conv1D `<prefix>weight` [in, out] + `<prefix>bias`.
  Value conv1d(const std::string &prefix, Value x, int64_t out) {
    int64_t in = shapeOf(x).back();
    Value w = weight(prefix + "weight", {in, out}, Init::Normal);
    Value bv = weight(prefix + "bias", {out}, Init::Zeros);
    return conv1dRaw(x, w, bv);
  }
  Value layerNormWith(const std::string &prefix, Value x, bool f64Var) {
    int64_t d = shapeOf(x).back();
    Value g = weight(prefix + "weight", {d}, Init::Ones);
    Value bv = weight(prefix + "bias", {d}, Init::Zeros);
    return layerNorm(x, g, bv, f64Var);
  }
  llvm::SmallVector<OpFoldResult> indexAttrs(llvm::ArrayRef<int64_t> values) {
    llvm::SmallVector<OpFoldResult> r;
    for (int64_t v : values)
      r.push_back(b.getIndexAttr(v));
    return r;
  }
  Value gather(Value table, Value ids);
  Value positionIds(int64_t seq);
  Value layerNorm(Value x, Value gamma, Value beta, bool varianceInF64);
  Value rmsNorm(Value x, Value w);
  Value gelu(Value x, GeluApprox approx);
  Value unary(Value x,
              llvm::function_ref<Value(OpBuilder &, Location, Value)> fn) {
    return elementwise({x}, elemOf(x),
                       [&](OpBuilder &nb, Location l, ValueRange a) {
                         return fn(nb, l, a[0]);
                       });
  }
  struct ShiftedExp {
    Value shifted, exp, sum;
  };
  ShiftedExp shiftedExp(Value x);
  Value softmaxLast(Value x);
  /// Multi-head attention core on projected q [B,Sq,inner], k/v [B,Sk,inner].
  /// Returns merged heads [B,Sq,inner].
  Value attention(Value q, Value k, Value v, bool scale, bool causal,
                  Value bias);
  Value splitHeads(Value x, bool transposed);
  /// T5 relative position bias [1, H, Sq, Sk] gathered from `table`
  /// [buckets, H] by buckets computed in IR.
  Value relativeBias(Value table, int64_t sq, int64_t sk, bool bidirectional);
  /// Mean token cross-entropy of logits [N, C] against labels [N] (ignore
  /// index -100): log-softmax, a gather of the label's log-probability, mean.
  Value crossEntropy(Value logits, Value labels);
  Value crossEntropy3d(Value logits, Value labels);

  Value buildBert(ValueRange args);
  Value buildGpt2(ValueRange args);
  Value buildT5(ValueRange args);
  void buildMain(func::FuncOp forward);

  MLIRContext *ctx;
  const TransformerConfig &cfg;
  const GenerateOptions &opts;
  OpBuilder b;
  Location loc;
  Rng rng;
  Type ft, i64, f64;
  llvm::StringRef file;
  llvm::StringMap<unsigned> siteLines;
  Block *entry = nullptr;
  Operation *lastConstant = nullptr;
  llvm::DenseMap<Attribute, Value> scalarCache;
  llvm::SmallVector<ParamInfo> params;
  /// Weights created while set belong to the loss head.
  bool taskHead = false;
};

} // namespace

//===----------------------------------------------------------------------===//
// Weights
//===----------------------------------------------------------------------===//

Value ModelBuilder::weight(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
                           Init init) {
  RankedTensorType type = tensorOf(shape);
  std::string key = "torch_tensor_";
  for (int64_t d : shape)
    key += std::to_string(d) + "_";
  key += opts.bf16 ? "torch.bfloat16" : "torch.float32";

  int64_t n = type.getNumElements();
  size_t elemBytes = opts.bf16 ? 2 : 4;
  DenseResourceElementsAttr attr;
  if (opts.weights == WeightInit::None) {
    // A handle without a blob: printed as a reference whose key is absent
    // from the dialect_resources section, like an elided dump.
    auto handle =
        DenseResourceElementsHandle::getManagerInterface(ctx).insert(key);
    attr = DenseResourceElementsAttr::get(type, handle);
  } else {
    // Alignment = element size; the printer writes it as the blob's first
    // four bytes ("0x04000000" for f32), as torch-mlir's dumps show.
    AsmResourceBlob blob =
        HeapAsmResourceBlob::allocate(n * elemBytes, elemBytes);
    llvm::MutableArrayRef<char> data = blob.getMutableData();
    // Each tensor draws from its own stream, keyed by its name, so adding a
    // tensor or reordering creation does not change the others' values.
    uint64_t h = 0xcbf29ce484222325ULL; // FNV-1a
    for (char c : name) {
      h ^= static_cast<unsigned char>(c);
      h *= 0x100000001b3ULL;
    }
    Rng local(h ^ (opts.seed * 0x9e3779b97f4a7c15ULL));
    for (int64_t i = 0; i < n; ++i) {
      float value = 0.0f;
      if (opts.weights == WeightInit::Random) {
        double noise = init == Init::Normal || opts.randomizeAll
                           ? opts.initStd * local.normal()
                           : 0.0;
        value = static_cast<float>((init == Init::Ones ? 1.0 : 0.0) + noise);
      }
      if (opts.bf16) {
        uint16_t bits = toBF16Bits(value);
        std::memcpy(data.data() + 2 * i, &bits, 2);
      } else {
        std::memcpy(data.data() + 4 * i, &value, 4);
      }
    }
    attr = DenseResourceElementsAttr::get(type, key, std::move(blob));
  }

  ParamInfo info;
  info.name = name.str();
  info.resourceKey = attr.getRawHandle().getKey().str();
  info.shape.assign(shape.begin(), shape.end());
  info.taskHead = taskHead;
  params.push_back(std::move(info));

  Location l = loc;
  return inConstantArea(
      [&] { return arith::ConstantOp::create(b, l, attr).getResult(); });
}

//===----------------------------------------------------------------------===//
// Generic building blocks
//===----------------------------------------------------------------------===//

Value ModelBuilder::elementwise(llvm::ArrayRef<Value> ins, Type outEt,
                                BodyFn body) {
  int64_t rank = 0;
  for (Value v : ins)
    rank = std::max<int64_t>(rank, shapeOf(v).size());
  llvm::SmallVector<int64_t> outShape(rank, 1);
  for (Value v : ins) {
    llvm::ArrayRef<int64_t> s = shapeOf(v);
    int64_t off = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i)
      if (s[i] != 1)
        outShape[off + i] = s[i];
  }
  llvm::SmallVector<AffineMap> maps;
  for (Value v : ins) {
    llvm::ArrayRef<int64_t> s = shapeOf(v);
    int64_t off = rank - s.size();
    llvm::SmallVector<AffineExpr> exprs;
    for (size_t i = 0; i < s.size(); ++i)
      exprs.push_back(s[i] == 1 && outShape[off + i] != 1
                          ? getAffineConstantExpr(0, ctx)
                          : getAffineDimExpr(off + i, ctx));
    maps.push_back(AffineMap::get(rank, 0, exprs, ctx));
  }
  llvm::SmallVector<utils::IteratorType> iters(rank,
                                               utils::IteratorType::parallel);
  return generic(tensorOf(outShape, outEt), ins, maps,
                 AffineMap::getMultiDimIdentityMap(rank, ctx), iters,
                 empty(outShape, outEt),
                 [&](OpBuilder &nb, Location l, ValueRange args) {
                   return body(nb, l, args.drop_back());
                 });
}

Value ModelBuilder::reduceLast(Value x, Value init, BodyFn combine) {
  llvm::ArrayRef<int64_t> s = shapeOf(x);
  int64_t rank = s.size();
  llvm::SmallVector<int64_t> outShape(s.begin(), s.end());
  outShape.back() = 1;
  llvm::SmallVector<AffineExpr> outExprs;
  for (int64_t i = 0; i + 1 < rank; ++i)
    outExprs.push_back(getAffineDimExpr(i, ctx));
  outExprs.push_back(getAffineConstantExpr(0, ctx));
  llvm::SmallVector<utils::IteratorType> iters(rank,
                                               utils::IteratorType::parallel);
  iters.back() = utils::IteratorType::reduction;
  return generic(tensorOf(outShape, init.getType()), {x},
                 {AffineMap::getMultiDimIdentityMap(rank, ctx)},
                 AffineMap::get(rank, 0, outExprs, ctx), iters,
                 filled(outShape, init), combine);
}

Value ModelBuilder::sumAll(Value x) {
  assert(shapeOf(x).size() == 1 && "sumAll expects a rank-1 tensor");
  Type et = elemOf(x);
  return generic(tensorOf({}, et), {x},
                 {AffineMap::getMultiDimIdentityMap(1, ctx)},
                 AffineMap::get(1, 0, {}, ctx),
                 {utils::IteratorType::reduction}, filled({}, cstF(0.0, et)),
                 [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                   return arith::AddFOp::create(nb, l, a[0], a[1]);
                 });
}

Value ModelBuilder::permute(Value x, llvm::ArrayRef<int64_t> perm) {
  llvm::ArrayRef<int64_t> s = shapeOf(x);
  int64_t rank = s.size();
  llvm::SmallVector<int64_t> outShape(rank);
  llvm::SmallVector<AffineExpr> inExprs(rank);
  for (int64_t i = 0; i < rank; ++i) {
    outShape[i] = s[perm[i]];
    inExprs[perm[i]] = getAffineDimExpr(i, ctx);
  }
  llvm::SmallVector<utils::IteratorType> iters(rank,
                                               utils::IteratorType::parallel);
  return generic(tensorOf(outShape, elemOf(x)), {x},
                 {AffineMap::get(rank, 0, inExprs, ctx)},
                 AffineMap::getMultiDimIdentityMap(rank, ctx), iters,
                 empty(outShape, elemOf(x)),
                 [](OpBuilder &, Location, ValueRange a) { return a[0]; });
}

Value ModelBuilder::contractT(Value x, Value w) {
  llvm::ArrayRef<int64_t> s = shapeOf(x);
  int64_t rank = s.size();
  int64_t out = shapeOf(w)[0];
  // Iteration space: batch dims d0..d(r-2), d(r-1) = out, d(r) = k.
  int64_t nIter = rank + 1;
  llvm::SmallVector<AffineExpr> xExprs, outExprs;
  for (int64_t i = 0; i + 1 < rank; ++i) {
    xExprs.push_back(getAffineDimExpr(i, ctx));
    outExprs.push_back(getAffineDimExpr(i, ctx));
  }
  xExprs.push_back(getAffineDimExpr(rank, ctx));
  outExprs.push_back(getAffineDimExpr(rank - 1, ctx));
  AffineMap wMap = AffineMap::get(
      nIter, 0, {getAffineDimExpr(rank - 1, ctx), getAffineDimExpr(rank, ctx)},
      ctx);
  llvm::SmallVector<int64_t> outShape(s.begin(), s.end());
  outShape.back() = out;
  llvm::SmallVector<utils::IteratorType> iters(nIter,
                                               utils::IteratorType::parallel);
  iters.back() = utils::IteratorType::reduction;
  return generic(tensorOf(outShape), {x, w},
                 {AffineMap::get(nIter, 0, xExprs, ctx), wMap},
                 AffineMap::get(nIter, 0, outExprs, ctx), iters,
                 filled(outShape, cstF(0.0)),
                 [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                   Value p = arith::MulFOp::create(nb, l, a[0], a[1]);
                   return arith::AddFOp::create(nb, l, a[2], p);
                 });
}

Value ModelBuilder::matmulT(Value x, Value w, Value bias) {
  llvm::ArrayRef<int64_t> s = shapeOf(x);
  int64_t rank = s.size();
  int64_t out = shapeOf(w)[0];
  Value x2 = rank == 2 ? x : collapse(x, leadingGroups(rank));
  Value wt = permute(w, {1, 0});
  int64_t rows = shapeOf(x2)[0];
  Value acc = filled({rows, out}, cstF(0.0));
  Value y = linalg::MatmulOp::create(b, loc, TypeRange{tensorOf({rows, out})},
                                     ValueRange{x2, wt}, ValueRange{acc})
                .getResult(0);
  if (bias)
    y = addBias(y, bias);
  if (rank == 2)
    return y;
  llvm::SmallVector<int64_t> outShape(s.begin(), s.end());
  outShape.back() = out;
  return expand(y, outShape, leadingGroups(rank));
}

Value ModelBuilder::conv1dRaw(Value x, Value w, Value bias) {
  llvm::ArrayRef<int64_t> s = shapeOf(x);
  int64_t rank = s.size();
  int64_t out = shapeOf(w)[1];
  Value x2 = collapse(x, leadingGroups(rank));
  int64_t rows = shapeOf(x2)[0];
  Value acc = filled({rows, out}, cstF(0.0));
  Value y = linalg::MatmulOp::create(b, loc, TypeRange{tensorOf({rows, out})},
                                     ValueRange{x2, w}, ValueRange{acc})
                .getResult(0);
  y = addBias(y, bias);
  llvm::SmallVector<int64_t> outShape(s.begin(), s.end());
  outShape.back() = out;
  return expand(y, outShape, leadingGroups(rank));
}

Value ModelBuilder::gather(Value table, Value ids) {
  llvm::ArrayRef<int64_t> idShape = shapeOf(ids);
  int64_t rank = idShape.size();
  int64_t width = shapeOf(table)[1];
  llvm::SmallVector<int64_t> outShape(idShape.begin(), idShape.end());
  outShape.push_back(width);
  llvm::SmallVector<AffineExpr> idExprs;
  for (int64_t i = 0; i < rank; ++i)
    idExprs.push_back(getAffineDimExpr(i, ctx));
  llvm::SmallVector<utils::IteratorType> iters(rank + 1,
                                               utils::IteratorType::parallel);
  return generic(
      tensorOf(outShape, elemOf(table)), {ids},
      {AffineMap::get(rank + 1, 0, idExprs, ctx)},
      AffineMap::getMultiDimIdentityMap(rank + 1, ctx), iters,
      empty(outShape, elemOf(table)),
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value row = arith::IndexCastOp::create(nb, l, nb.getIndexType(), a[0]);
        Value col = linalg::IndexOp::create(nb, l, rank);
        return tensor::ExtractOp::create(nb, l, table, ValueRange{row, col});
      });
}

Value ModelBuilder::positionIds(int64_t seq) {
  // torch.arange(seq).unsqueeze(0): a generic that yields its own index.
  return generic(tensorOf({1, seq}, i64), {}, {},
                 AffineMap::getMultiDimIdentityMap(2, ctx),
                 {utils::IteratorType::parallel, utils::IteratorType::parallel},
                 empty({1, seq}, i64),
                 [&](OpBuilder &nb, Location l, ValueRange) -> Value {
                   Value i = linalg::IndexOp::create(nb, l, 1);
                   return arith::IndexCastOp::create(nb, l, i64, i);
                 });
}

Value ModelBuilder::layerNorm(Value x, Value gamma, Value beta,
                              bool varianceInF64) {
  int64_t d = shapeOf(x).back();
  Value sum = reduceLast(x, cstF(0.0),
                         [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                           return arith::AddFOp::create(nb, l, a[0], a[1]);
                         });
  Value dF = cstF(static_cast<double>(d));
  Value mean = unary(sum, [&](OpBuilder &nb, Location l, Value v) -> Value {
    return arith::DivFOp::create(nb, l, v, dF);
  });
  Value centered = elementwise(
      {x, mean}, ft, [](OpBuilder &nb, Location l, ValueRange a) -> Value {
        return arith::SubFOp::create(nb, l, a[0], a[1]);
      });
  Value var;
  if (varianceInF64) {
    // Accumulate the squared deviations in f64 (arith.extf in the body),
    // then divide and truncate back.
    Type f64Ty = f64;
    Value sq =
        reduceLast(centered, cstF(0.0, f64),
                   [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                     Value e = arith::ExtFOp::create(nb, l, f64Ty, a[0]);
                     Value p = arith::MulFOp::create(nb, l, e, e);
                     return arith::AddFOp::create(nb, l, a[1], p);
                   });
    Value dF64 = cstF(static_cast<double>(d), f64);
    Type et = ft;
    var = elementwise({sq}, ft,
                      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                        Value q = arith::DivFOp::create(nb, l, a[0], dF64);
                        return arith::TruncFOp::create(nb, l, et, q);
                      });
  } else {
    Value sq = reduceLast(centered, cstF(0.0),
                          [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                            Value p = arith::MulFOp::create(nb, l, a[0], a[0]);
                            return arith::AddFOp::create(nb, l, a[1], p);
                          });
    var = unary(sq, [&](OpBuilder &nb, Location l, Value v) -> Value {
      return arith::DivFOp::create(nb, l, v, dF);
    });
  }
  Value eps = cstF(cfg.normEps);
  Value rstd = unary(var, [&](OpBuilder &nb, Location l, Value v) -> Value {
    Value s = arith::AddFOp::create(nb, l, v, eps);
    return math::RsqrtOp::create(nb, l, s);
  });
  return elementwise({centered, rstd, gamma, beta}, ft,
                     [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                       Value n = arith::MulFOp::create(nb, l, a[0], a[1]);
                       Value g = arith::MulFOp::create(nb, l, n, a[2]);
                       return arith::AddFOp::create(nb, l, g, a[3]);
                     });
}

Value ModelBuilder::rmsNorm(Value x, Value w) {
  // T5LayerNorm: variance = mean(x^2) (in f32 even for bf16 models), no
  // mean subtraction, no bias.
  int64_t d = shapeOf(x).back();
  Type f32 = b.getF32Type();
  bool widen = ft != f32;
  Value sq = reduceLast(x, cstF(0.0, f32),
                        [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                          Value e = a[0];
                          if (widen)
                            e = arith::ExtFOp::create(nb, l, f32, e);
                          Value p = arith::MulFOp::create(nb, l, e, e);
                          return arith::AddFOp::create(nb, l, a[1], p);
                        });
  Value dF = cstF(static_cast<double>(d), f32);
  Value eps = cstF(cfg.normEps, f32);
  Value rstd =
      elementwise({sq}, f32, [&](OpBuilder &nb, Location l, ValueRange a) {
        Value m = arith::DivFOp::create(nb, l, a[0], dF);
        Value s = arith::AddFOp::create(nb, l, m, eps);
        return math::RsqrtOp::create(nb, l, s).getResult();
      });
  Type et = ft;
  return elementwise({x, rstd, w}, ft,
                     [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                       Value r = a[1];
                       if (widen)
                         r = arith::TruncFOp::create(nb, l, et, r);
                       Value n = arith::MulFOp::create(nb, l, a[0], r);
                       return arith::MulFOp::create(nb, l, a[2], n);
                     });
}

Value ModelBuilder::gelu(Value x, GeluApprox approx) {
  Value half = cstF(0.5), one = cstF(1.0);
  if (approx == GeluApprox::Erf) {
    Value invSqrt2 = cstF(0.70710678118654752440);
    return unary(x, [&](OpBuilder &nb, Location l, Value v) -> Value {
      Value s = arith::MulFOp::create(nb, l, v, invSqrt2);
      Value e = math::ErfOp::create(nb, l, s);
      Value p = arith::AddFOp::create(nb, l, e, one);
      Value h = arith::MulFOp::create(nb, l, v, half);
      return arith::MulFOp::create(nb, l, h, p);
    });
  }
  Value k = cstF(0.7978845608028654), c = cstF(0.044715);
  return unary(x, [&](OpBuilder &nb, Location l, Value v) -> Value {
    Value v2 = arith::MulFOp::create(nb, l, v, v);
    Value v3 = arith::MulFOp::create(nb, l, v2, v);
    Value t = arith::MulFOp::create(nb, l, v3, c);
    Value inner = arith::AddFOp::create(nb, l, v, t);
    Value scaled = arith::MulFOp::create(nb, l, inner, k);
    Value th = math::TanhOp::create(nb, l, scaled);
    Value p = arith::AddFOp::create(nb, l, th, one);
    Value h = arith::MulFOp::create(nb, l, v, half);
    return arith::MulFOp::create(nb, l, h, p);
  });
}

/// The shared prefix of softmax and log-softmax over the last dimension, in
/// torch's decomposition order: x - amax(x), its exp, and the sum of that.
ModelBuilder::ShiftedExp ModelBuilder::shiftedExp(Value x) {
  Value negInf = cstF(llvm::APFloat::getInf(sem(), /*Negative=*/true));
  Value mx = reduceLast(x, negInf,
                        [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                          return arith::MaximumFOp::create(nb, l, a[0], a[1]);
                        });
  Value shifted = elementwise(
      {x, mx}, ft, [](OpBuilder &nb, Location l, ValueRange a) -> Value {
        return arith::SubFOp::create(nb, l, a[0], a[1]);
      });
  Value e = unary(shifted, [](OpBuilder &nb, Location l, Value v) -> Value {
    return math::ExpOp::create(nb, l, v);
  });
  Value sum = reduceLast(e, cstF(0.0),
                         [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                           return arith::AddFOp::create(nb, l, a[0], a[1]);
                         });
  return {shifted, e, sum};
}

Value ModelBuilder::softmaxLast(Value x) {
  // torch's _softmax decomposition: amax, sub, exp, sum, div.
  ShiftedExp se = shiftedExp(x);
  return elementwise({se.exp, se.sum}, ft,
                     [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                       return arith::DivFOp::create(nb, l, a[0], a[1]);
                     });
}

Value ModelBuilder::splitHeads(Value x, bool transposed) {
  // [B,S,H*dh] -> expand [B,S,H,dh] -> permute [B,H,S,dh] (or [B,H,dh,S]
  // for K^T) -> collapse [B*H, S, dh].
  llvm::ArrayRef<int64_t> s = shapeOf(x);
  int64_t bsz = s[0], seq = s[1], h = cfg.heads, dh = cfg.getHeadDim();
  Value e = expand(x, {bsz, seq, h, dh}, {{0}, {1}, {2, 3}});
  Value p = permute(e, transposed ? llvm::ArrayRef<int64_t>{0, 2, 3, 1}
                                  : llvm::ArrayRef<int64_t>{0, 2, 1, 3});
  return collapse(p, {{0, 1}, {2}, {3}});
}

Value ModelBuilder::attention(Value q, Value k, Value v, bool scale,
                              bool causal, Value bias) {
  int64_t bsz = shapeOf(q)[0], sq = shapeOf(q)[1], sk = shapeOf(k)[1];
  int64_t h = cfg.heads, dh = cfg.getHeadDim();
  site("attention.scores");
  Value qh = splitHeads(q, /*transposed=*/false);
  Value kt = splitHeads(k, /*transposed=*/true);
  Value vh = splitHeads(v, /*transposed=*/false);
  Value acc = filled({bsz * h, sq, sk}, cstF(0.0));
  Value scores = linalg::BatchMatmulOp::create(
                     b, loc, TypeRange{tensorOf({bsz * h, sq, sk})},
                     ValueRange{qh, kt}, ValueRange{acc})
                     .getResult(0);
  scores = expand(scores, {bsz, h, sq, sk}, {{0, 1}, {2}, {3}});
  if (scale) {
    Value root = cstF(std::sqrt(static_cast<double>(dh)));
    scores = unary(scores, [&](OpBuilder &nb, Location l, Value s) -> Value {
      return arith::DivFOp::create(nb, l, s, root);
    });
  }
  if (bias)
    scores = add(scores, bias);
  if (causal) {
    // torch.where(key_pos <= query_pos, scores, finfo.min) on indices.
    site("attention.causal_mask");
    Value lowest = cstF(llvm::APFloat::getLargest(sem(), /*Negative=*/true));
    scores = unary(scores, [&](OpBuilder &nb, Location l, Value s) -> Value {
      Value qi = linalg::IndexOp::create(nb, l, 2);
      Value ki = linalg::IndexOp::create(nb, l, 3);
      Value future =
          arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ugt, ki, qi);
      return arith::SelectOp::create(nb, l, future, lowest, s);
    });
  }
  site("attention.softmax");
  Value probs = softmaxLast(scores);
  site("attention.context");
  probs = collapse(probs, {{0, 1}, {2}, {3}});
  Value acc2 = filled({bsz * h, sq, dh}, cstF(0.0));
  Value ctxv = linalg::BatchMatmulOp::create(
                   b, loc, TypeRange{tensorOf({bsz * h, sq, dh})},
                   ValueRange{probs, vh}, ValueRange{acc2})
                   .getResult(0);
  ctxv = expand(ctxv, {bsz, h, sq, dh}, {{0, 1}, {2}, {3}});
  ctxv = permute(ctxv, {0, 2, 1, 3});
  return collapse(ctxv, {{0}, {1}, {2, 3}});
}

Value ModelBuilder::relativeBias(Value table, int64_t sq, int64_t sk,
                                 bool bidirectional) {
  site(bidirectional ? "encoder.relative_position_bucket"
                     : "decoder.relative_position_bucket");
  int64_t numBuckets = cfg.relBuckets;
  int64_t base = bidirectional ? numBuckets / 2 : numBuckets;
  int64_t maxExact = base / 2;
  double logRange =
      std::log(static_cast<double>(cfg.relMaxDistance) / maxExact);
  Type f32 = b.getF32Type();
  Value c0 = cstI(0, i64), c1 = cstI(1, i64), cHalf = cstI(base, i64),
        cExact = cstI(maxExact, i64), cLast = cstI(base - 1, i64);
  Value fExact = cstF(static_cast<double>(maxExact), f32);
  Value fLogRange = cstF(logRange, f32);
  Value fSpan = cstF(static_cast<double>(base - maxExact), f32);
  // bucket(i, j) from relative = j - i, as T5's _relative_position_bucket.
  Value buckets = generic(
      tensorOf({sq, sk}, i64), {}, {},
      AffineMap::getMultiDimIdentityMap(2, ctx),
      {utils::IteratorType::parallel, utils::IteratorType::parallel},
      empty({sq, sk}, i64),
      [&](OpBuilder &nb, Location l, ValueRange) -> Value {
        Value qi = arith::IndexCastOp::create(
            nb, l, i64, linalg::IndexOp::create(nb, l, 0));
        Value ki = arith::IndexCastOp::create(
            nb, l, i64, linalg::IndexOp::create(nb, l, 1));
        Value rel = arith::SubIOp::create(nb, l, ki, qi);
        Value neg = arith::SubIOp::create(nb, l, c0, rel);
        Value offset = c0, n;
        if (bidirectional) {
          Value positive =
              arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sgt, rel, c0);
          offset = arith::SelectOp::create(nb, l, positive, cHalf, c0);
          n = arith::MaxSIOp::create(nb, l, rel, neg); // |rel|
        } else {
          n = arith::MaxSIOp::create(nb, l, neg, c0); // -min(rel, 0)
        }
        Value small =
            arith::CmpIOp::create(nb, l, arith::CmpIPredicate::slt, n, cExact);
        // log() of 0 is masked by `small`; clamp to keep the cast defined.
        Value nClamped = arith::MaxSIOp::create(nb, l, n, c1);
        Value nf = arith::SIToFPOp::create(nb, l, f32, nClamped);
        Value ratio = arith::DivFOp::create(nb, l, nf, fExact);
        Value lg = math::LogOp::create(nb, l, ratio);
        Value t = arith::DivFOp::create(nb, l, lg, fLogRange);
        Value t2 = arith::MulFOp::create(nb, l, t, fSpan);
        Value ti = arith::FPToSIOp::create(nb, l, i64, t2);
        Value large = arith::AddIOp::create(nb, l, ti, cExact);
        large = arith::MinSIOp::create(nb, l, large, cLast);
        Value pick = arith::SelectOp::create(nb, l, small, n, large);
        return arith::AddIOp::create(nb, l, offset, pick);
      });
  site(bidirectional ? "encoder.relative_attention_bias"
                     : "decoder.relative_attention_bias");
  int64_t h = cfg.heads;
  AffineMap bucketMap = AffineMap::get(
      4, 0, {getAffineDimExpr(2, ctx), getAffineDimExpr(3, ctx)}, ctx);
  return generic(
      tensorOf({1, h, sq, sk}), {buckets}, {bucketMap},
      AffineMap::getMultiDimIdentityMap(4, ctx),
      llvm::SmallVector<utils::IteratorType>(4, utils::IteratorType::parallel),
      empty({1, h, sq, sk}),
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value row = arith::IndexCastOp::create(nb, l, nb.getIndexType(), a[0]);
        Value head = linalg::IndexOp::create(nb, l, 1);
        return tensor::ExtractOp::create(nb, l, table, ValueRange{row, head});
      });
}

Value ModelBuilder::crossEntropy(Value logits, Value labels) {
  site("loss.log_softmax");
  int64_t n = shapeOf(logits)[0];
  ShiftedExp se = shiftedExp(logits);
  Value shifted = se.shifted;
  Value lse = unary(se.sum, [](OpBuilder &nb, Location l, Value v) -> Value {
    return math::LogOp::create(nb, l, v);
  });
  Value logp = elementwise(
      {shifted, lse}, ft, [](OpBuilder &nb, Location l, ValueRange a) -> Value {
        return arith::SubFOp::create(nb, l, a[0], a[1]);
      });

  // nll_loss: -logp[i, label[i]] where label != ignore_index (-100).
  site("loss.nll");
  Value ignore = cstI(-100, i64);
  Value zeroI = cstI(0, i64);
  Value zero = cstF(0.0), one = cstF(1.0);
  AffineMap id1 = AffineMap::getMultiDimIdentityMap(1, ctx);
  Value picked = generic(
      tensorOf({n}), {labels}, {id1}, id1, {utils::IteratorType::parallel},
      empty({n}), [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value valid = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ne,
                                            a[0], ignore);
        Value safe = arith::SelectOp::create(nb, l, valid, a[0], zeroI);
        Value col = arith::IndexCastOp::create(nb, l, nb.getIndexType(), safe);
        Value row = linalg::IndexOp::create(nb, l, 0);
        Value lp = tensor::ExtractOp::create(nb, l, logp, ValueRange{row, col});
        Value neg = arith::NegFOp::create(nb, l, lp);
        return arith::SelectOp::create(nb, l, valid, neg, zero);
      });
  Value weights = generic(
      tensorOf({n}), {labels}, {id1}, id1, {utils::IteratorType::parallel},
      empty({n}), [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value valid = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ne,
                                            a[0], ignore);
        return arith::SelectOp::create(nb, l, valid, one, zero);
      });
  site("loss.mean");
  Value total = sumAll(picked);
  Value count = sumAll(weights);
  return elementwise({total, count}, ft,
                     [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                       return arith::DivFOp::create(nb, l, a[0], a[1]);
                     });
}

Value ModelBuilder::crossEntropy3d(Value logits, Value labels) {
  // logits.view(-1, V), labels.view(-1)
  site("loss.view");
  return crossEntropy(collapse(logits, {{0, 1}, {2}}),
                      collapse(labels, {{0, 1}}));
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
  Value ids = args[0], labels = args[1];
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
  // lm_head: tied to wte, no bias.
  site("lm_head");
  Value logits = contractT(x, wte);
  return crossEntropy3d(logits, labels);
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
    inputs.push_back(tensorOf({cfg.batch, cfg.seq}, i64));
    break;
  case ModelFamily::T5:
    inputs.push_back(tensorOf({cfg.batch, cfg.getDecoderSeq()}, i64));
    inputs.push_back(tensorOf({cfg.batch, cfg.getDecoderSeq()}, i64));
    break;
  }
  auto fn = func::FuncOp::create(b, loc, "forward",
                                 b.getFunctionType(inputs, {tensorOf({})}));
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
