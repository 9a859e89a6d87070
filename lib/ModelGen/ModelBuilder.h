//===- ModelBuilder.h - Builds transformer IR op by op ---------*- C++ -*-===//
//
// The builder the transformer generator uses: weights, the torch-level ops
// (one linalg generic per ATen op, as torch-mlir emits them) and the three
// model families. Private to lib/ModelGen; layers are in ModelBuilder.cpp,
// the models in TransformerGen.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_LIB_MODELGEN_MODELBUILDER_H
#define PIPE_LIB_MODELGEN_MODELBUILDER_H

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

namespace mlir::pipe::modelgen::detail {


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

inline uint16_t toBF16Bits(float f) {
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


} // namespace mlir::pipe::modelgen::detail

#endif // PIPE_LIB_MODELGEN_MODELBUILDER_H
