//===- OpGradientTest.cpp - Finite-difference checks of every op rule -----===//
//
// Each case is a block computing %out from random parameters; the loss is
// sum(out * w). Every case runs twice: with the operands as block parameters
// (weight-gradient path) and as data inputs from another block (input-
// gradient path), under different recompute policies.
//
//===----------------------------------------------------------------------===//

#include "GradCheck.h"

#include "gtest/gtest.h"

#include <map>

using namespace pipetest;

namespace {

struct Case {
  std::string name;
  OpCase op;
  std::map<std::string, InitSpec> init;
};

InitSpec positive() { return InitSpec{0.5, 1.5, 0}; }
InitSpec ids(int64_t n) { return InitSpec{0, 0, n}; }

const char *kZeroFill34 = R"mlir(
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x4xf32>
)mlir";

std::vector<Case> makeCases() {
  std::vector<Case> cases;
  auto add = [&](std::string name, OpCase op,
                 std::map<std::string, InitSpec> init = {}) {
    cases.push_back({std::move(name), std::move(op), std::move(init)});
  };

  add("matmul", {{{"a", "tensor<3x4xf32>"}, {"b", "tensor<4x5xf32>"}},
                 {},
                 "tensor<3x5xf32>",
                 2,
                 R"mlir(
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x5xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<3x5xf32>) -> tensor<3x5xf32>
  %out = linalg.matmul ins(%a, %b : tensor<3x4xf32>, tensor<4x5xf32>)
                       outs(%f : tensor<3x5xf32>) -> tensor<3x5xf32>)mlir"});

  add("batched_contraction_permuted_maps",
      {{{"a", "tensor<2x3x4xf32>"}, {"b", "tensor<2x5x4xf32>"}},
       {},
       "tensor<2x3x5xf32>",
       3,
       R"mlir(
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x3x5xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %out = linalg.generic {indexing_maps = [
      affine_map<(b, i, j, k) -> (b, i, k)>, affine_map<(b, i, j, k) -> (b, j, k)>,
      affine_map<(b, i, j, k) -> (b, i, j)>],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<2x3x4xf32>, tensor<2x5x4xf32>) outs(%f : tensor<2x3x5xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x3x5xf32>)mlir"});

  add("matmul_into_active_init_bias", {{{"a", "tensor<3x4xf32>"},
                                        {"b", "tensor<4x5xf32>"},
                                        {"c", "tensor<5xf32>"}},
                                       {},
                                       "tensor<3x5xf32>",
                                       2,
                                       R"mlir(
  %e = tensor.empty() : tensor<3x5xf32>
  %bias = linalg.broadcast ins(%c : tensor<5xf32>) outs(%e : tensor<3x5xf32>) dimensions = [0]
  %out = linalg.matmul ins(%a, %b : tensor<3x4xf32>, tensor<4x5xf32>)
                       outs(%bias : tensor<3x5xf32>) -> tensor<3x5xf32>)mlir"});

  add("transpose_broadcast",
      {{{"a", "tensor<3x4xf32>"}, {"v", "tensor<4xf32>"}},
       {},
       "tensor<4x3xf32>",
       2,
       R"mlir(
  %e = tensor.empty() : tensor<4x3xf32>
  %t = linalg.transpose ins(%a : tensor<3x4xf32>) outs(%e : tensor<4x3xf32>) permutation = [1, 0]
  %bc = linalg.broadcast ins(%v : tensor<4xf32>) outs(%e : tensor<4x3xf32>) dimensions = [1]
  %out = linalg.generic {indexing_maps = [#id2, #id2, #id2],
      iterator_types = ["parallel", "parallel"]}
      ins(%t, %bc : tensor<4x3xf32>, tensor<4x3xf32>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    %m2 = arith.mulf %m, %x : f32
    linalg.yield %m2 : f32
  } -> tensor<4x3xf32>)mlir"});

  add("arith_add_sub_mul_div_neg",
      {{{"a", "tensor<3x4xf32>"}, {"b", "tensor<3x4xf32>"}},
       {},
       "tensor<3x4xf32>",
       2,
       std::string(kZeroFill34) + R"mlir(
  %out = linalg.generic {indexing_maps = [#id2, #id2, #id2],
      iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : tensor<3x4xf32>, tensor<3x4xf32>) outs(%e : tensor<3x4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    %d = arith.subf %x, %y : f32
    %p = arith.mulf %s, %d : f32
    %q = arith.divf %p, %y : f32
    %n = arith.negf %x : f32
    %r = arith.addf %q, %n : f32
    linalg.yield %r : f32
  } -> tensor<3x4xf32>)mlir"},
      {{"b", positive()}});

  add("math_exp_log_tanh_log1p",
      {{{"a", "tensor<3x4xf32>"}, {"b", "tensor<3x4xf32>"}},
       {},
       "tensor<3x4xf32>",
       2,
       std::string(kZeroFill34) + R"mlir(
  %out = linalg.generic {indexing_maps = [#id2, #id2, #id2],
      iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : tensor<3x4xf32>, tensor<3x4xf32>) outs(%e : tensor<3x4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %ex = math.exp %x : f32
    %th = math.tanh %x : f32
    %lg = math.log %y : f32
    %l1 = math.log1p %y : f32
    %p = arith.mulf %ex, %th : f32
    %s = arith.addf %p, %lg : f32
    %r = arith.addf %s, %l1 : f32
    linalg.yield %r : f32
  } -> tensor<3x4xf32>)mlir"},
      {{"b", positive()}});

  add("gelu_erf", {{{"a", "tensor<3x4xf32>"}},
                   {},
                   "tensor<3x4xf32>",
                   2,
                   std::string(kZeroFill34) + R"mlir(
  %half = arith.constant 0.5 : f32
  %one = arith.constant 1.0 : f32
  %rs2 = arith.constant 0.70710678118654757 : f32
  %out = linalg.generic {indexing_maps = [#id2, #id2],
      iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<3x4xf32>) outs(%e : tensor<3x4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.mulf %x, %rs2 : f32
    %er = math.erf %s : f32
    %p = arith.addf %er, %one : f32
    %h = arith.mulf %x, %half : f32
    %r = arith.mulf %h, %p : f32
    linalg.yield %r : f32
  } -> tensor<3x4xf32>)mlir"});

  add("sigmoid_pattern", {{{"a", "tensor<3x4xf32>"}},
                          {},
                          "tensor<3x4xf32>",
                          2,
                          std::string(kZeroFill34) + R"mlir(
  %one = arith.constant 1.0 : f32
  %out = linalg.generic {indexing_maps = [#id2, #id2],
      iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<3x4xf32>) outs(%e : tensor<3x4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %n = arith.negf %x : f32
    %ex = math.exp %n : f32
    %d = arith.addf %ex, %one : f32
    %r = arith.divf %one, %d : f32
    linalg.yield %r : f32
  } -> tensor<3x4xf32>)mlir"});

  add("sqrt_rsqrt_powf_fpowi",
      {{{"a", "tensor<3x4xf32>"}, {"b", "tensor<3x4xf32>"}},
       {},
       "tensor<3x4xf32>",
       2,
       std::string(kZeroFill34) + R"mlir(
  %p25 = arith.constant 2.5 : f32
  %three = arith.constant 3 : i32
  %out = linalg.generic {indexing_maps = [#id2, #id2, #id2],
      iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : tensor<3x4xf32>, tensor<3x4xf32>) outs(%e : tensor<3x4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %sq = math.sqrt %y : f32
    %rs = math.rsqrt %y : f32
    %pw = math.powf %y, %p25 : f32
    %pi = math.fpowi %x, %three : f32, i32
    %s1 = arith.addf %sq, %rs : f32
    %s2 = arith.addf %pw, %pi : f32
    %r = arith.addf %s1, %s2 : f32
    linalg.yield %r : f32
  } -> tensor<3x4xf32>)mlir"},
      {{"b", positive()}});

  add("relu_max_min_select_cmpf",
      {{{"a", "tensor<3x4xf32>"}, {"b", "tensor<3x4xf32>"}},
       {},
       "tensor<3x4xf32>",
       2,
       std::string(kZeroFill34) + R"mlir(
  %c01 = arith.constant 0.1 : f32
  %out = linalg.generic {indexing_maps = [#id2, #id2, #id2],
      iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : tensor<3x4xf32>, tensor<3x4xf32>) outs(%e : tensor<3x4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %relu = arith.maximumf %x, %z : f32
    %mx = arith.maxnumf %x, %y : f32
    %mn = arith.minimumf %x, %y : f32
    %c = arith.cmpf ogt, %x, %c01 : f32
    %sq = arith.mulf %x, %x : f32
    %sel = arith.select %c, %sq, %y : f32
    %s1 = arith.addf %relu, %mx : f32
    %s2 = arith.addf %mn, %sel : f32
    %r = arith.addf %s1, %s2 : f32
    linalg.yield %r : f32
  } -> tensor<3x4xf32>)mlir"});

  add("abs_sin_cos", {{{"a", "tensor<3x4xf32>"}},
                      {},
                      "tensor<3x4xf32>",
                      2,
                      std::string(kZeroFill34) + R"mlir(
  %out = linalg.generic {indexing_maps = [#id2, #id2],
      iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<3x4xf32>) outs(%e : tensor<3x4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %ab = math.absf %x : f32
    %s = math.sin %x : f32
    %c = math.cos %x : f32
    %p = arith.mulf %s, %c : f32
    %r = arith.addf %p, %ab : f32
    linalg.yield %r : f32
  } -> tensor<3x4xf32>)mlir"});

  add("sum_reduction_keepdim_and_mean",
      {{{"a", "tensor<3x4xf32>"}}, {}, "tensor<3x1xf32>", 2, R"mlir(
  %z = arith.constant 0.0 : f32
  %n = arith.constant 4.0 : f32
  %e = tensor.empty() : tensor<3x1xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<3x1xf32>) -> tensor<3x1xf32>
  %sum = linalg.generic {indexing_maps = [#id2, #row],
      iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<3x4xf32>) outs(%f : tensor<3x1xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %sq = arith.mulf %x, %x : f32
    %s = arith.addf %acc, %sq : f32
    linalg.yield %s : f32
  } -> tensor<3x1xf32>
  %out = linalg.generic {indexing_maps = [#id2, #id2],
      iterator_types = ["parallel", "parallel"]}
      ins(%sum : tensor<3x1xf32>) outs(%e : tensor<3x1xf32>) {
  ^bb0(%x: f32, %o: f32):
    %m = arith.divf %x, %n : f32
    linalg.yield %m : f32
  } -> tensor<3x1xf32>)mlir"});

  add("max_reduction",
      {{{"a", "tensor<3x4xf32>"}}, {}, "tensor<3xf32>", 1, R"mlir(
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<3xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<3xf32>) -> tensor<3xf32>
  %out = linalg.generic {indexing_maps = [#id2, #rowv],
      iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<3x4xf32>) outs(%f : tensor<3xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %t = math.tanh %x : f32
    %m = arith.maximumf %acc, %t : f32
    linalg.yield %m : f32
  } -> tensor<3xf32>)mlir"});

  add("softmax_generic",
      {{{"a", "tensor<3x4xf32>"}}, {}, "tensor<3x4xf32>", 2, R"mlir(
  %z = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e1 = tensor.empty() : tensor<3x1xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<3x1xf32>) -> tensor<3x1xf32>
  %mx = linalg.generic {indexing_maps = [#id2, #row],
      iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<3x4xf32>) outs(%fm : tensor<3x1xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %m = arith.maximumf %acc, %x : f32
    linalg.yield %m : f32
  } -> tensor<3x1xf32>
  %e = tensor.empty() : tensor<3x4xf32>
  %ex = linalg.generic {indexing_maps = [#id2, #row, #id2],
      iterator_types = ["parallel", "parallel"]}
      ins(%a, %mx : tensor<3x4xf32>, tensor<3x1xf32>) outs(%e : tensor<3x4xf32>) {
  ^bb0(%x: f32, %m: f32, %o: f32):
    %d = arith.subf %x, %m : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<3x4xf32>
  %fs = linalg.fill ins(%z : f32) outs(%e1 : tensor<3x1xf32>) -> tensor<3x1xf32>
  %sum = linalg.generic {indexing_maps = [#id2, #row],
      iterator_types = ["parallel", "reduction"]}
      ins(%ex : tensor<3x4xf32>) outs(%fs : tensor<3x1xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<3x1xf32>
  %out = linalg.generic {indexing_maps = [#id2, #row, #id2],
      iterator_types = ["parallel", "parallel"]}
      ins(%ex, %sum : tensor<3x4xf32>, tensor<3x1xf32>) outs(%e : tensor<3x4xf32>) {
  ^bb0(%x: f32, %s: f32, %o: f32):
    %r = arith.divf %x, %s : f32
    linalg.yield %r : f32
  } -> tensor<3x4xf32>)mlir"});

  add("softmax_named_op",
      {{{"a", "tensor<3x4xf32>"}}, {}, "tensor<3x4xf32>", 2, R"mlir(
  %e = tensor.empty() : tensor<3x4xf32>
  %out = linalg.softmax dimension(1) ins(%a : tensor<3x4xf32>)
                        outs(%e : tensor<3x4xf32>) -> tensor<3x4xf32>)mlir"});

  add("layer_norm", {{{"x", "tensor<3x4xf32>"},
                      {"gamma", "tensor<4xf32>"},
                      {"bt", "tensor<4xf32>"}},
                     {},
                     "tensor<3x4xf32>",
                     2,
                     R"mlir(
  %z = arith.constant 0.0 : f32
  %n = arith.constant 4.0 : f32
  %eps = arith.constant 1.0e-05 : f32
  %e1 = tensor.empty() : tensor<3x1xf32>
  %f1 = linalg.fill ins(%z : f32) outs(%e1 : tensor<3x1xf32>) -> tensor<3x1xf32>
  %sum = linalg.generic {indexing_maps = [#id2, #row],
      iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<3x4xf32>) outs(%f1 : tensor<3x1xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %acc, %v : f32
    linalg.yield %s : f32
  } -> tensor<3x1xf32>
  %e = tensor.empty() : tensor<3x4xf32>
  %xc = linalg.generic {indexing_maps = [#id2, #row, #id2],
      iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : tensor<3x4xf32>, tensor<3x1xf32>) outs(%e : tensor<3x4xf32>) {
  ^bb0(%v: f32, %s: f32, %o: f32):
    %m = arith.divf %s, %n : f32
    %d = arith.subf %v, %m : f32
    linalg.yield %d : f32
  } -> tensor<3x4xf32>
  %var = linalg.generic {indexing_maps = [#id2, #row],
      iterator_types = ["parallel", "reduction"]}
      ins(%xc : tensor<3x4xf32>) outs(%f1 : tensor<3x1xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %sq = arith.mulf %v, %v : f32
    %s = arith.addf %acc, %sq : f32
    linalg.yield %s : f32
  } -> tensor<3x1xf32>
  %out = linalg.generic {indexing_maps = [#id2, #row, #col, #col, #id2],
      iterator_types = ["parallel", "parallel"]}
      ins(%xc, %var, %gamma, %bt : tensor<3x4xf32>, tensor<3x1xf32>, tensor<4xf32>, tensor<4xf32>)
      outs(%e : tensor<3x4xf32>) {
  ^bb0(%v: f32, %s: f32, %gg: f32, %bb: f32, %o: f32):
    %m = arith.divf %s, %n : f32
    %me = arith.addf %m, %eps : f32
    %r = math.rsqrt %me : f32
    %y = arith.mulf %v, %r : f32
    %yg = arith.mulf %y, %gg : f32
    %yb = arith.addf %yg, %bb : f32
    linalg.yield %yb : f32
  } -> tensor<3x4xf32>)mlir"});

  add("cross_entropy_with_labels",
      {{{"a", "tensor<3x5xf32>"}},
       {{"labels", "tensor<3xi64>"}},
       "tensor<f32>",
       0,
       R"mlir(
  %z = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %nrows = arith.constant 3.0 : f32
  %e1 = tensor.empty() : tensor<3xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<3xf32>) -> tensor<3xf32>
  %mx = linalg.generic {indexing_maps = [#id2, #rowv],
      iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<3x5xf32>) outs(%fm : tensor<3xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %m = arith.maximumf %acc, %x : f32
    linalg.yield %m : f32
  } -> tensor<3xf32>
  %fs = linalg.fill ins(%z : f32) outs(%e1 : tensor<3xf32>) -> tensor<3xf32>
  %se = linalg.generic {indexing_maps = [#id2, #rowv, #rowv],
      iterator_types = ["parallel", "reduction"]}
      ins(%a, %mx : tensor<3x5xf32>, tensor<3xf32>) outs(%fs : tensor<3xf32>) {
  ^bb0(%x: f32, %m: f32, %acc: f32):
    %d = arith.subf %x, %m : f32
    %ex = math.exp %d : f32
    %s = arith.addf %acc, %ex : f32
    linalg.yield %s : f32
  } -> tensor<3xf32>
  %e0 = tensor.empty() : tensor<f32>
  %f0 = linalg.fill ins(%z : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %nll = linalg.generic {indexing_maps = [#id2, #rowv, #rowv, #rowv, #scalar2],
      iterator_types = ["reduction", "reduction"]}
      ins(%a, %mx, %se, %labels : tensor<3x5xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xi64>)
      outs(%f0 : tensor<f32>) {
  ^bb0(%x: f32, %m: f32, %s: f32, %lab: i64, %acc: f32):
    %j = linalg.index 1 : index
    %li = arith.index_cast %lab : i64 to index
    %hit = arith.cmpi eq, %j, %li : index
    %d = arith.subf %x, %m : f32
    %ls = math.log %s : f32
    %lp = arith.subf %d, %ls : f32
    %nlp = arith.negf %lp : f32
    %v = arith.select %hit, %nlp, %z : f32
    %acc2 = arith.addf %acc, %v : f32
    linalg.yield %acc2 : f32
  } -> tensor<f32>
  %out = linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>],
      iterator_types = []} ins(%nll : tensor<f32>) outs(%e0 : tensor<f32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.divf %x, %nrows : f32
    linalg.yield %r : f32
  } -> tensor<f32>)mlir"},
      {{"labels", ids(5)}});

  add("embedding_gather",
      {{{"table", "tensor<6x4xf32>"}},
       {{"tok", "tensor<5xi64>"}},
       "tensor<5x4xf32>",
       2,
       R"mlir(
  %e = tensor.empty() : tensor<5x4xf32>
  %out = linalg.generic {indexing_maps = [#rowv, #id2],
      iterator_types = ["parallel", "parallel"]}
      ins(%tok : tensor<5xi64>) outs(%e : tensor<5x4xf32>) {
  ^bb0(%id: i64, %o: f32):
    %row = arith.index_cast %id : i64 to index
    %col = linalg.index 1 : index
    %v = tensor.extract %table[%row, %col] : tensor<6x4xf32>
    %v2 = arith.mulf %v, %v : f32
    linalg.yield %v2 : f32
  } -> tensor<5x4xf32>)mlir"},
      {{"tok", ids(6)}});

  // torch-mlir's lowering of aten.embedding_bag (mode sum): a reduction
  // over the indices whose payload yields select(in_bag, w + acc, acc);
  // the next offset's index is clamped here so that the last bag does not
  // read one past the offsets (torch-mlir extracts it unconditionally).
  add("embedding_bag_sum",
      {{{"table", "tensor<6x4xf32>"}},
       {{"idx", "tensor<5xi64>"}, {"off", "tensor<3xi64>"}},
       "tensor<3x4xf32>",
       2,
       R"mlir(
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<3x4xf32>) -> tensor<3x4xf32>
  %out = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1)>,
      affine_map<(d0, d1, d2) -> (d0)>, affine_map<(d0, d1, d2) -> (d0, d2)>],
      iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%idx, %off : tensor<5xi64>, tensor<3xi64>) outs(%f : tensor<3x4xf32>) {
  ^bb0(%in: i64, %o: i64, %acc: f32):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i64
    %c1 = arith.constant 1 : i64
    %n1 = arith.addi %ii, %c1 : i64
    %c2 = arith.constant 2 : i64
    %n1c = arith.minsi %n1, %c2 : i64
    %n1i = arith.index_cast %n1c : i64 to index
    %len = arith.constant 3 : i64
    %last = arith.cmpi eq, %len, %n1 : i64
    %nidx = arith.constant 5 : i64
    %nextv = tensor.extract %off[%n1i] : tensor<3xi64>
    %next = arith.select %last, %nidx, %nextv : i64
    %j = linalg.index 1 : index
    %ji = arith.index_cast %j : index to i64
    %lt = arith.cmpi slt, %o, %ji : i64
    %eq = arith.cmpi eq, %o, %ji : i64
    %le = arith.ori %lt, %eq : i1
    %before = arith.cmpi slt, %ji, %next : i64
    %inbag = arith.andi %le, %before : i1
    %row = arith.index_cast %in : i64 to index
    %k = linalg.index 2 : index
    %w = tensor.extract %table[%row, %k] : tensor<6x4xf32>
    %s = arith.addf %w, %acc : f32
    %r = arith.select %inbag, %s, %acc : f32
    linalg.yield %r : f32
  } -> tensor<3x4xf32>)mlir"},
      {{"idx", ids(6)}, {"off", ids(5)}});

  add("expand_collapse_shape",
      {{{"a", "tensor<6x4xf32>"}, {"b", "tensor<2x3x4xf32>"}},
       {},
       "tensor<6x4xf32>",
       2,
       R"mlir(
  %x = tensor.expand_shape %a [[0, 1], [2]] output_shape [2, 3, 4]
      : tensor<6x4xf32> into tensor<2x3x4xf32>
  %e = tensor.empty() : tensor<2x3x4xf32>
  %p = linalg.generic {indexing_maps = [#id3, #id3, #id3],
      iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %b : tensor<2x3x4xf32>, tensor<2x3x4xf32>) outs(%e : tensor<2x3x4xf32>) {
  ^bb0(%u: f32, %v: f32, %o: f32):
    %m = arith.mulf %u, %v : f32
    %m2 = arith.mulf %m, %u : f32
    linalg.yield %m2 : f32
  } -> tensor<2x3x4xf32>
  %out = tensor.collapse_shape %p [[0, 1], [2]] : tensor<2x3x4xf32> into tensor<6x4xf32>)mlir"});

  add("slices_concat_pad",
      {{{"a", "tensor<4x4xf32>"}, {"b", "tensor<4x4xf32>"}},
       {},
       "tensor<9x6xf32>",
       2,
       R"mlir(
  %z = arith.constant 0.0 : f32
  %s = tensor.extract_slice %a[1, 0] [2, 4] [1, 1] : tensor<4x4xf32> to tensor<2x4xf32>
  %row = tensor.extract_slice %b[3, 0] [1, 4] [1, 1] : tensor<4x4xf32> to tensor<4xf32>
  %e = tensor.empty() : tensor<2x4xf32>
  %sq = linalg.generic {indexing_maps = [#id2, #col, #id2],
      iterator_types = ["parallel", "parallel"]}
      ins(%s, %row : tensor<2x4xf32>, tensor<4xf32>) outs(%e : tensor<2x4xf32>) {
  ^bb0(%u: f32, %v: f32, %o: f32):
    %m = arith.mulf %u, %v : f32
    linalg.yield %m : f32
  } -> tensor<2x4xf32>
  %ins = tensor.insert_slice %sq into %b[0, 0] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<4x4xf32>
  %ins2 = tensor.insert_slice %row into %ins[2, 0] [1, 4] [1, 1] : tensor<4xf32> into tensor<4x4xf32>
  %cat = tensor.concat dim(0) %ins2, %s : (tensor<4x4xf32>, tensor<2x4xf32>) -> tensor<6x4xf32>
  %padded = tensor.pad %cat low[1, 0] high[2, 2] {
  ^bb0(%i: index, %j: index):
    tensor.yield %z : f32
  } : tensor<6x4xf32> to tensor<9x6xf32>
  %e2 = tensor.empty() : tensor<9x6xf32>
  %out = linalg.generic {indexing_maps = [#id2, #id2],
      iterator_types = ["parallel", "parallel"]}
      ins(%padded : tensor<9x6xf32>) outs(%e2 : tensor<9x6xf32>) {
  ^bb0(%u: f32, %o: f32):
    %m = arith.mulf %u, %u : f32
    linalg.yield %m : f32
  } -> tensor<9x6xf32>)mlir"});

  add("causal_mask_with_linalg_index",
      {{{"a", "tensor<4x4xf32>"}}, {}, "tensor<4x4xf32>", 2, R"mlir(
  %big = arith.constant -2.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %out = linalg.generic {indexing_maps = [#id2, #id2],
      iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%u: f32, %o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %keep = arith.cmpi ule, %j, %i : index
    %t = math.tanh %u : f32
    %r = arith.select %keep, %t, %big : f32
    linalg.yield %r : f32
  } -> tensor<4x4xf32>)mlir"});

  // torch-mlir's adaptive average pooling (TorchScript route): one
  // reduction yields the windows' sums and, as a second float result, each
  // window's size computed from linalg.index, which has no derivative.
  // Windows of a 3x3 map pooled to 2x2 overlap: rows [0, 2) and [1, 3).
  add("adaptive_avg_pool_with_count_result",
      {{{"a", "tensor<1x2x3x3xf32>"}}, {}, "tensor<1x2x2x2xf32>", 4, R"mlir(
  %z = arith.constant 0.0 : f32
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %kernel = tensor.empty() : tensor<2x2xi1>
  %es = tensor.empty() : tensor<1x2x2x2xf32>
  %fs = linalg.fill ins(%z : f32) outs(%es : tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %ec = tensor.empty() : tensor<2x2xf32>
  %pooled:2 = linalg.generic {indexing_maps = [
      affine_map<(n, c, i, j, p, q) -> (p, q)>,
      affine_map<(n, c, i, j, p, q) -> (n, c, i, j)>,
      affine_map<(n, c, i, j, p, q) -> (i, j)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel",
                        "reduction", "reduction"]}
      ins(%kernel : tensor<2x2xi1>) outs(%fs, %ec : tensor<1x2x2x2xf32>, tensor<2x2xf32>) {
  ^bb0(%in: i1, %acc: f32, %count: f32):
    %n = linalg.index 0 : index
    %ch = linalg.index 1 : index
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %p = linalg.index 4 : index
    %q = linalg.index 5 : index
    %i3 = arith.muli %i, %c3 : index
    %h0 = arith.floordivsi %i3, %c2 : index
    %i1 = arith.addi %i, %c1 : index
    %i13 = arith.muli %i1, %c3 : index
    %i13m = arith.subi %i13, %c1 : index
    %hl = arith.floordivsi %i13m, %c2 : index
    %h1 = arith.addi %hl, %c1 : index
    %j3 = arith.muli %j, %c3 : index
    %w0 = arith.floordivsi %j3, %c2 : index
    %j1 = arith.addi %j, %c1 : index
    %j13 = arith.muli %j1, %c3 : index
    %j13m = arith.subi %j13, %c1 : index
    %wl = arith.floordivsi %j13m, %c2 : index
    %w1 = arith.addi %wl, %c1 : index
    %h = arith.addi %h0, %p : index
    %w = arith.addi %w0, %q : index
    %x = tensor.extract %a[%n, %ch, %h, %w] : tensor<1x2x3x3xf32>
    %inh = arith.cmpi ult, %h, %h1 : index
    %xh = arith.select %inh, %x, %z : f32
    %inw = arith.cmpi ult, %w, %w1 : index
    %xw = arith.select %inw, %xh, %z : f32
    %sum = arith.addf %xw, %acc : f32
    %dh = arith.subi %h1, %h0 : index
    %dw = arith.subi %w1, %w0 : index
    %size = arith.muli %dh, %dw : index
    %size64 = arith.index_cast %size : index to i64
    %sizef = arith.sitofp %size64 : i64 to f32
    linalg.yield %sum, %sizef : f32, f32
  } -> (tensor<1x2x2x2xf32>, tensor<2x2xf32>)
  %out = linalg.generic {indexing_maps = [
      affine_map<(n, c, i, j) -> (i, j)>,
      affine_map<(n, c, i, j) -> (n, c, i, j)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%pooled#1 : tensor<2x2xf32>) outs(%pooled#0 : tensor<1x2x2x2xf32>) {
  ^bb0(%size: f32, %s: f32):
    %mean = arith.divf %s, %size : f32
    linalg.yield %mean : f32
  } -> tensor<1x2x2x2xf32>)mlir"});

  return cases;
}

// Readable test names in failures instead of byte dumps.
void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

struct OpGradient : public ::testing::TestWithParam<std::tuple<Case, bool>> {};

TEST_P(OpGradient, MatchesFiniteDifferences) {
  const Case &c = std::get<0>(GetParam());
  bool viaInputs = std::get<1>(GetParam());
  std::string source = buildOpModule(c.op, viaInputs);
  CompiledGraph graph(source, viaInputs ? "save-inputs" : "save-all");
  ASSERT_TRUE(graph.ok()) << graph.error() << "\nmodule:\n" << source;
  std::vector<HostTensor> params, inputs;
  uint64_t seed = 1;
  auto initFor = [&](const std::string &name) {
    auto it = c.init.find(name);
    return it == c.init.end() ? InitSpec() : it->second;
  };
  for (const ArgSpec &spec : graph.params())
    params.push_back(randomTensor(spec, initFor(spec.name), seed++));
  for (size_t k = 0; k < graph.inputs().size(); ++k)
    inputs.push_back(randomTensor(graph.inputs()[k],
                                  initFor(c.op.intInputs[k].first), seed++));
  GradCheckResult result = checkGradients(graph, params, inputs);
  EXPECT_LT(result.maxRelError, 1e-6)
      << result.report << "\ndifferentiated IR:\n"
      << graph.differentiatedIR();
}

INSTANTIATE_TEST_SUITE_P(
    Rules, OpGradient,
    ::testing::Combine(::testing::ValuesIn(makeCases()), ::testing::Bool()),
    [](const ::testing::TestParamInfo<OpGradient::ParamType> &info) {
      return std::get<0>(info.param).name +
             (std::get<1>(info.param) ? "_inputs" : "_weights");
    });

} // namespace
