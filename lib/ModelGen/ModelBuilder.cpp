//===- ModelBuilder.cpp - Weights and torch-level ops of the generator --===//
//
// Each helper emits what torch-mlir emits for one ATen op, so that the
// generated models exercise the idioms of real exports.
//
//===----------------------------------------------------------------------===//

#include "ModelBuilder.h"

using namespace mlir;
using namespace mlir::pipe::modelgen;
using namespace mlir::pipe::modelgen::detail;

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
  // Divided by max(count, 1): a micro-batch whose labels are all ignored
  // gives 0, not 0/0.
  site("loss.mean");
  Value total = sumAll(picked);
  Value count = sumAll(weights);
  return elementwise({total, count}, ft,
                     [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                       Value atLeastOne =
                           arith::MaximumFOp::create(nb, l, a[1], one);
                       return arith::DivFOp::create(nb, l, a[0], atLeastOne);
                     });
}

Value ModelBuilder::crossEntropy3d(Value logits, Value labels) {
  // logits.view(-1, V), labels.view(-1)
  site("loss.view");
  return crossEntropy(collapse(logits, {{0, 1}, {2}}),
                      collapse(labels, {{0, 1}}));
}
