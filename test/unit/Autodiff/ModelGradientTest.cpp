//===- ModelGradientTest.cpp - Finite-difference checks of whole blocks ---===//
//
// A tiny pre-norm transformer layer (layer norm, causal multi-head attention
// with reshapes into heads, GELU MLP, residuals) and a tiny language model
// (embedding, a hidden block, an LM head tied to the embedding table and a
// cross-entropy loss), each under the three recompute policies.
//
//===----------------------------------------------------------------------===//

#include "GradCheck.h"

#include "pipe/Analysis/CostModel.h"
#include "pipe/Autodiff/Autodiff.h"
#include "pipe/Conversion/Passes.h"
#include "pipe/Dialect/Pipe/IR/Pipe.h"
#include "pipe/Dialect/Pipe/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"

#include <cmath>
#include <cstdlib>

using namespace pipetest;

namespace {

/// Layer norm over the last dimension of a rows x d tensor.
std::string layerNorm(const std::string &p, const std::string &in,
                      const std::string &gamma, const std::string &beta,
                      int rows, int d) {
  std::string t =
      "tensor<" + std::to_string(rows) + "x" + std::to_string(d) + "xf32>";
  std::string t1 = "tensor<" + std::to_string(rows) + "x1xf32>";
  std::string n = std::to_string(d) + ".0";
  return R"(
  %)" + p +
         R"(n = arith.constant )" + n + R"( : f32
  %)" + p +
         R"(e1 = tensor.empty() : )" + t1 + R"(
  %)" + p +
         R"(f1 = linalg.fill ins(%zero : f32) outs(%)" + p + R"(e1 : )" + t1 +
         R"() -> )" + t1 + R"(
  %)" + p +
         R"(sum = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%)" +
         in + R"( : )" + t + R"() outs(%)" + p + R"(f1 : )" + t1 + R"() {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %acc, %v : f32
    linalg.yield %s : f32
  } -> )" +
         t1 + R"(
  %)" + p +
         R"(e = tensor.empty() : )" + t + R"(
  %)" + p +
         R"(xc = linalg.generic {indexing_maps = [#id2, #row, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%)" +
         in + R"(, %)" + p + R"(sum : )" + t + ", " + t1 + R"() outs(%)" + p +
         R"(e : )" + t + R"() {
  ^bb0(%v: f32, %s: f32, %o: f32):
    %m = arith.divf %s, %)" +
         p + R"(n : f32
    %dd = arith.subf %v, %m : f32
    linalg.yield %dd : f32
  } -> )" +
         t + R"(
  %)" + p +
         R"(var = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%)" +
         p + R"(xc : )" + t + R"() outs(%)" + p + R"(f1 : )" + t1 + R"() {
  ^bb0(%v: f32, %acc: f32):
    %sq = arith.mulf %v, %v : f32
    %s = arith.addf %acc, %sq : f32
    linalg.yield %s : f32
  } -> )" +
         t1 + R"(
  %)" + p +
         R"(out = linalg.generic {indexing_maps = [#id2, #row, #col, #col, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%)" +
         p + R"(xc, %)" + p + R"(var, %)" + gamma + ", %" + beta + " : " + t +
         ", " + t1 + ", tensor<" + std::to_string(d) + "xf32>, tensor<" +
         std::to_string(d) + R"(xf32>) outs(%)" + p + R"(e : )" + t + R"() {
  ^bb0(%v: f32, %s: f32, %gg: f32, %bb: f32, %o: f32):
    %m = arith.divf %s, %)" +
         p + R"(n : f32
    %me = arith.addf %m, %eps : f32
    %r = math.rsqrt %me : f32
    %y = arith.mulf %v, %r : f32
    %yg = arith.mulf %y, %gg : f32
    %yb = arith.addf %yg, %bb : f32
    linalg.yield %yb : f32
  } -> )" +
         t + "\n";
}

/// out = in @ w (+ bias) for in: rows x k, w: k x n.
std::string matmul(const std::string &out, const std::string &in,
                   const std::string &w, int rows, int k, int n,
                   const std::string &bias = "") {
  std::string to =
      "tensor<" + std::to_string(rows) + "x" + std::to_string(n) + "xf32>";
  std::string ti =
      "tensor<" + std::to_string(rows) + "x" + std::to_string(k) + "xf32>";
  std::string tw =
      "tensor<" + std::to_string(k) + "x" + std::to_string(n) + "xf32>";
  std::string s = "  %" + out + "_e = tensor.empty() : " + to + "\n";
  if (bias.empty())
    s += "  %" + out + "_i = linalg.fill ins(%zero : f32) outs(%" + out +
         "_e : " + to + ") -> " + to + "\n";
  else
    s += "  %" + out + "_i = linalg.broadcast ins(%" + bias + " : tensor<" +
         std::to_string(n) + "xf32>) outs(%" + out + "_e : " + to +
         ") dimensions = [0]\n";
  s += "  %" + out + " = linalg.matmul ins(%" + in + ", %" + w + " : " + ti +
       ", " + tw + ") outs(%" + out + "_i : " + to + ") -> " + to + "\n";
  return s;
}

std::string transformerModule() {
  std::string m = kMapAliases;
  m += R"mlir(
#q4 = affine_map<(h, i, j, k) -> (i, h, k)>
#k4 = affine_map<(h, i, j, k) -> (j, h, k)>
#s4 = affine_map<(h, i, j, k) -> (h, i, j)>
#p4 = affine_map<(i, h, k, j) -> (h, i, j)>
#v4 = affine_map<(i, h, k, j) -> (j, h, k)>
#c4 = affine_map<(i, h, k, j) -> (i, h, k)>
#hij = affine_map<(h, i, j) -> (h, i, j)>
#hi0 = affine_map<(h, i, j) -> (h, i, 0)>
pipe.param @x : tensor<4x8xf32>
pipe.param @ln1_g : tensor<8xf32>
pipe.param @ln1_b : tensor<8xf32>
pipe.param @wq : tensor<8x8xf32>
pipe.param @wk : tensor<8x8xf32>
pipe.param @wv : tensor<8x8xf32>
pipe.param @wo : tensor<8x8xf32>
pipe.param @ln2_g : tensor<8xf32>
pipe.param @ln2_b : tensor<8xf32>
pipe.param @w1 : tensor<8x16xf32>
pipe.param @b1 : tensor<16xf32>
pipe.param @w2 : tensor<16x8xf32>
pipe.param @b2 : tensor<8xf32>
pipe.param @wloss : tensor<4x8xf32>

pipe.block @src params(%x: tensor<4x8xf32>) () -> tensor<4x8xf32> {
  pipe.return %x : tensor<4x8xf32>
}

pipe.block @layer params(%ln1_g: tensor<8xf32>, %ln1_b: tensor<8xf32>,
    %wq: tensor<8x8xf32>, %wk: tensor<8x8xf32>, %wv: tensor<8x8xf32>,
    %wo: tensor<8x8xf32>, %ln2_g: tensor<8xf32>, %ln2_b: tensor<8xf32>,
    %w1: tensor<8x16xf32>, %b1: tensor<16xf32>, %w2: tensor<16x8xf32>,
    %b2: tensor<8xf32>) (%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %eps = arith.constant 1.0e-05 : f32
  %scale = arith.constant 0.5 : f32
  %masked = arith.constant -1.0e+04 : f32
  %ninf = arith.constant 0xFF800000 : f32
)mlir";
  m += layerNorm("a", "x", "ln1_g", "ln1_b", 4, 8);
  m += matmul("qm", "aout", "wq", 4, 8, 8);
  m += matmul("km", "aout", "wk", 4, 8, 8);
  m += matmul("vm", "aout", "wv", 4, 8, 8);
  m += R"mlir(
  %q3 = tensor.expand_shape %qm [[0], [1, 2]] output_shape [4, 2, 4] : tensor<4x8xf32> into tensor<4x2x4xf32>
  %k3 = tensor.expand_shape %km [[0], [1, 2]] output_shape [4, 2, 4] : tensor<4x8xf32> into tensor<4x2x4xf32>
  %v3 = tensor.expand_shape %vm [[0], [1, 2]] output_shape [4, 2, 4] : tensor<4x8xf32> into tensor<4x2x4xf32>
  %se = tensor.empty() : tensor<2x4x4xf32>
  %sf = linalg.fill ins(%zero : f32) outs(%se : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %scores = linalg.generic {indexing_maps = [#q4, #k4, #s4],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q3, %k3 : tensor<4x2x4xf32>, tensor<4x2x4xf32>) outs(%sf : tensor<2x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %ps = arith.mulf %p, %scale : f32
    %s = arith.addf %acc, %ps : f32
    linalg.yield %s : f32
  } -> tensor<2x4x4xf32>
  %causal = linalg.generic {indexing_maps = [#hij, #hij], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%scores : tensor<2x4x4xf32>) outs(%se : tensor<2x4x4xf32>) {
  ^bb0(%s: f32, %o: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %keep = arith.cmpi ule, %j, %i : index
    %r = arith.select %keep, %s, %masked : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %mxe = tensor.empty() : tensor<2x4x1xf32>
  %mf = linalg.fill ins(%ninf : f32) outs(%mxe : tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
  %mx = linalg.generic {indexing_maps = [#hij, #hi0], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%causal : tensor<2x4x4xf32>) outs(%mf : tensor<2x4x1xf32>) {
  ^bb0(%s: f32, %acc: f32):
    %r = arith.maximumf %acc, %s : f32
    linalg.yield %r : f32
  } -> tensor<2x4x1xf32>
  %ex = linalg.generic {indexing_maps = [#hij, #hi0, #hij], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%causal, %mx : tensor<2x4x4xf32>, tensor<2x4x1xf32>) outs(%se : tensor<2x4x4xf32>) {
  ^bb0(%s: f32, %m: f32, %o: f32):
    %d = arith.subf %s, %m : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %zf = linalg.fill ins(%zero : f32) outs(%mxe : tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
  %den = linalg.generic {indexing_maps = [#hij, #hi0], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%ex : tensor<2x4x4xf32>) outs(%zf : tensor<2x4x1xf32>) {
  ^bb0(%s: f32, %acc: f32):
    %r = arith.addf %acc, %s : f32
    linalg.yield %r : f32
  } -> tensor<2x4x1xf32>
  %probs = linalg.generic {indexing_maps = [#hij, #hi0, #hij], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ex, %den : tensor<2x4x4xf32>, tensor<2x4x1xf32>) outs(%se : tensor<2x4x4xf32>) {
  ^bb0(%s: f32, %d: f32, %o: f32):
    %r = arith.divf %s, %d : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %ce = tensor.empty() : tensor<4x2x4xf32>
  %cf = linalg.fill ins(%zero : f32) outs(%ce : tensor<4x2x4xf32>) -> tensor<4x2x4xf32>
  %ctx = linalg.generic {indexing_maps = [#p4, #v4, #c4],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%probs, %v3 : tensor<2x4x4xf32>, tensor<4x2x4xf32>) outs(%cf : tensor<4x2x4xf32>) {
  ^bb0(%p: f32, %vv: f32, %acc: f32):
    %m = arith.mulf %p, %vv : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x2x4xf32>
  %ctx2 = tensor.collapse_shape %ctx [[0], [1, 2]] : tensor<4x2x4xf32> into tensor<4x8xf32>
)mlir";
  m += matmul("att", "ctx2", "wo", 4, 8, 8);
  m += R"mlir(
  %re = tensor.empty() : tensor<4x8xf32>
  %r1 = linalg.add ins(%x, %att : tensor<4x8xf32>, tensor<4x8xf32>) outs(%re : tensor<4x8xf32>) -> tensor<4x8xf32>
)mlir";
  m += layerNorm("b", "r1", "ln2_g", "ln2_b", 4, 8);
  m += matmul("h", "bout", "w1", 4, 8, 16, "b1");
  m += R"mlir(
  %half = arith.constant 0.5 : f32
  %one = arith.constant 1.0 : f32
  %rs2 = arith.constant 0.70710678118654757 : f32
  %ge = tensor.empty() : tensor<4x16xf32>
  %gelu = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<4x16xf32>) outs(%ge : tensor<4x16xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = arith.mulf %v, %rs2 : f32
    %er = math.erf %s : f32
    %p = arith.addf %er, %one : f32
    %hv = arith.mulf %v, %half : f32
    %r = arith.mulf %hv, %p : f32
    linalg.yield %r : f32
  } -> tensor<4x16xf32>
)mlir";
  m += matmul("f", "gelu", "w2", 4, 16, 8, "b2");
  m += R"mlir(
  %out = linalg.add ins(%r1, %f : tensor<4x8xf32>, tensor<4x8xf32>) outs(%re : tensor<4x8xf32>) -> tensor<4x8xf32>
  pipe.return %out : tensor<4x8xf32>
}

pipe.block @loss params(%w: tensor<4x8xf32>) (%y: tensor<4x8xf32>) -> tensor<f32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %r = linalg.generic {indexing_maps = [#id2, #id2, #scalar2], iterator_types = ["reduction", "reduction"]}
      ins(%y, %w : tensor<4x8xf32>, tensor<4x8xf32>) outs(%i : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  pipe.return %r : tensor<f32>
}

pipe.graph @g() -> tensor<f32> {
  %x = pipe.run "src" @src() params [@x] : () -> tensor<4x8xf32>
  %y = pipe.run "layer" @layer(%x) params [@ln1_g, @ln1_b, @wq, @wk, @wv, @wo,
      @ln2_g, @ln2_b, @w1, @b1, @w2, @b2] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %l = pipe.run "loss" @loss(%y) params [@wloss] : (tensor<4x8xf32>) -> tensor<f32>
  pipe.return %l : tensor<f32>
}
)mlir";
  return m;
}

std::string languageModelModule() {
  std::string m = kMapAliases;
  m += R"mlir(
#hv = affine_map<(i, v, j) -> (i, j)>
#tv = affine_map<(i, v, j) -> (v, j)>
#lv = affine_map<(i, v, j) -> (i, v)>
pipe.param @wte : tensor<10x8xf32>
pipe.param @w : tensor<8x8xf32>

// Embedding lookup (torch-mlir's index_select form).
pipe.block @embed params(%t: tensor<10x8xf32>) (%ids: tensor<4xi64>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#rowv, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<4xi64>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%id: i64, %o: f32):
    %row = arith.index_cast %id : i64 to index
    %col = linalg.index 1 : index
    %v = tensor.extract %t[%row, %col] : tensor<10x8xf32>
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  pipe.return %r : tensor<4x8xf32>
}

pipe.block @mid params(%w: tensor<8x8xf32>) (%h: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %mm = linalg.matmul ins(%h, %w : tensor<4x8xf32>, tensor<8x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %h : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %t = math.tanh %a : f32
    %s = arith.addf %t, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  pipe.return %r : tensor<4x8xf32>
}

// LM head tied to the embedding table, then mean cross-entropy.
pipe.block @head params(%t: tensor<10x8xf32>) (%h: tensor<4x8xf32>, %labels: tensor<4xi64>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %nrows = arith.constant 4.0 : f32
  %le = tensor.empty() : tensor<4x10xf32>
  %lf = linalg.fill ins(%zero : f32) outs(%le : tensor<4x10xf32>) -> tensor<4x10xf32>
  %logits = linalg.generic {indexing_maps = [#hv, #tv, #lv], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%h, %t : tensor<4x8xf32>, tensor<10x8xf32>) outs(%lf : tensor<4x10xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x10xf32>
  %e1 = tensor.empty() : tensor<4xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %mx = linalg.generic {indexing_maps = [#id2, #rowv], iterator_types = ["parallel", "reduction"]}
      ins(%logits : tensor<4x10xf32>) outs(%fm : tensor<4xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %m = arith.maximumf %acc, %x : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %se = linalg.generic {indexing_maps = [#id2, #rowv, #rowv], iterator_types = ["parallel", "reduction"]}
      ins(%logits, %mx : tensor<4x10xf32>, tensor<4xf32>) outs(%fs : tensor<4xf32>) {
  ^bb0(%x: f32, %m: f32, %acc: f32):
    %d = arith.subf %x, %m : f32
    %ex = math.exp %d : f32
    %s = arith.addf %acc, %ex : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %e0 = tensor.empty() : tensor<f32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %nll = linalg.generic {indexing_maps = [#id2, #rowv, #rowv, #rowv, #scalar2],
      iterator_types = ["reduction", "reduction"]}
      ins(%logits, %mx, %se, %labels : tensor<4x10xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi64>)
      outs(%f0 : tensor<f32>) {
  ^bb0(%x: f32, %m: f32, %s: f32, %lab: i64, %acc: f32):
    %j = linalg.index 1 : index
    %li = arith.index_cast %lab : i64 to index
    %hit = arith.cmpi eq, %j, %li : index
    %d = arith.subf %x, %m : f32
    %ls = math.log %s : f32
    %lp = arith.subf %d, %ls : f32
    %nlp = arith.negf %lp : f32
    %v = arith.select %hit, %nlp, %zero : f32
    %acc2 = arith.addf %acc, %v : f32
    linalg.yield %acc2 : f32
  } -> tensor<f32>
  %mean = linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>],
      iterator_types = []} ins(%nll : tensor<f32>) outs(%e0 : tensor<f32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.divf %x, %nrows : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  pipe.return %mean : tensor<f32>
}

pipe.graph @g(%ids: tensor<4xi64>, %labels: tensor<4xi64>) -> tensor<f32> {
  %h = pipe.run "embed" @embed(%ids) params [@wte] : (tensor<4xi64>) -> tensor<4x8xf32>
  %m = pipe.run "mid" @mid(%h) params [@w] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %l = pipe.run "head" @head(%m, %labels) params [@wte] : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32>
  pipe.return %l : tensor<f32>
}
)mlir";
  return m;
}

void checkModel(const std::string &source, const std::string &policy,
                int64_t vocab) {
  CompiledGraph graph(source, policy);
  ASSERT_TRUE(graph.ok()) << graph.error();
  std::vector<HostTensor> params, inputs;
  uint64_t seed = 11;
  for (const ArgSpec &spec : graph.params())
    params.push_back(randomTensor(spec, InitSpec{-0.8, 0.8, 0}, seed++));
  for (const ArgSpec &spec : graph.inputs())
    inputs.push_back(randomTensor(spec, InitSpec{0, 0, vocab}, seed++));
  GradCheckResult result = checkGradients(graph, params, inputs);
  EXPECT_LT(result.maxRelError, 1e-6)
      << result.report << "\ndifferentiated IR:\n"
      << graph.differentiatedIR();
  if (std::getenv("PIPE_GRADCHECK_VERBOSE"))
    llvm::errs() << result.report;
}

class ModelGradient : public ::testing::TestWithParam<std::string> {};

TEST_P(ModelGradient, TransformerLayer) {
  checkModel(transformerModule(), GetParam(), 0);
}

TEST_P(ModelGradient, EmbeddingTiedHeadCrossEntropy) {
  checkModel(languageModelModule(), GetParam(), 10);
}

INSTANTIATE_TEST_SUITE_P(Policies, ModelGradient,
                         ::testing::Values("save-all", "save-inputs",
                                           "recompute"),
                         [](const ::testing::TestParamInfo<std::string> &info) {
                           std::string name = info.param;
                           for (char &c : name)
                             if (c == '-')
                               c = '_';
                           return name;
                         });

//===----------------------------------------------------------------------===//
// pipe-differentiate's re-annotated costs vs the analytic cost model
//===----------------------------------------------------------------------===//

const char *kMatmulModule = R"mlir(
pipe.param @w : tensor<8x16xf32>
pipe.param @v : tensor<4x16xf32>
pipe.block @mm params(%w: tensor<8x16xf32>) (%x: tensor<4x8xf32>) -> tensor<4x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %y = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%f : tensor<4x16xf32>) -> tensor<4x16xf32>
  pipe.return %y : tensor<4x16xf32>
}
pipe.block @loss params(%v: tensor<4x16xf32>) (%y: tensor<4x16xf32>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]}
      ins(%y, %v : tensor<4x16xf32>, tensor<4x16xf32>) outs(%i : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  pipe.return %r : tensor<f32>
}
pipe.graph @g(%x: tensor<4x8xf32>) -> tensor<f32> {
  %y = pipe.run "mm" @mm(%x) params [@w] : (tensor<4x8xf32>) -> tensor<4x16xf32>
  %l = pipe.run "loss" @loss(%y) params [@v] : (tensor<4x16xf32>) -> tensor<f32>
  pipe.return %l : tensor<f32>
}
)mlir";

/// The same block's figures from the cost model and from pipe-differentiate.
struct CostPair {
  mlir::pipe::BlockCost model;
  uint64_t savedBytes = 0, inputFlops = 0, weightFlops = 0;
  std::string diffIR;
};

bool costPair(const std::string &source, llvm::StringRef blockName,
              const std::string &policy, CostPair &out, std::string &error) {
  using namespace mlir;
  DialectRegistry registry;
  registerAllDialects(registry);
  registry.insert<pipe::PipeDialect>();
  MLIRContext context(registry);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &context);
  if (!module) {
    error = "parse failed";
    return false;
  }
  auto block = module->lookupSymbol<pipe::BlockOp>(blockName);
  pipe::CostOptions options;
  options.recompute = policy == "save-all" ? pipe::RecomputePolicy::SaveAll
                                           : pipe::RecomputePolicy::Recompute;
  FailureOr<pipe::BlockCost> model = pipe::estimateBlockCost(block, options);
  if (failed(model)) {
    error = "cost model failed";
    return false;
  }
  out.model = *model;
  pipe::registerPipePasses();
  pipe::registerPipeConversionPasses();
  auto pm = PassManager::on<ModuleOp>(&context);
  if (failed(parsePassPipeline("pipe-differentiate{recompute=" + policy + "}",
                               pm)) ||
      failed(pm.run(*module))) {
    error = "pipe-differentiate failed";
    return false;
  }
  block = module->lookupSymbol<pipe::BlockOp>(blockName);
  auto flopsOf = [&](llvm::StringRef attr) -> uint64_t {
    auto ref = block->getAttrOfType<FlatSymbolRefAttr>(attr);
    if (!ref)
      return 0;
    auto bwd = module->lookupSymbol<pipe::BlockOp>(ref.getValue());
    auto flops = bwd->getAttrOfType<IntegerAttr>(pipe::autodiff::kFlopsAttr);
    return flops ? flops.getInt() : 0;
  };
  out.inputFlops = flopsOf(pipe::autodiff::kBackwardInputAttr);
  out.weightFlops = flopsOf(pipe::autodiff::kBackwardWeightAttr);
  auto saved =
      block->getAttrOfType<IntegerAttr>(pipe::autodiff::kSavedBytesAttr);
  out.savedBytes = saved ? saved.getInt() : 0;
  llvm::raw_string_ostream os(out.diffIR);
  module->print(os);
  return true;
}

void printPair(const char *what, const std::string &policy, const CostPair &p) {
  llvm::errs() << what << " " << policy << ": saved bytes model "
               << p.model.savedBytes << " autodiff " << p.savedBytes
               << "; bwd-input FLOPs model " << p.model.backwardInputFlops
               << " autodiff " << p.inputFlops << "; bwd-weight FLOPs model "
               << p.model.backwardWeightFlops << " autodiff " << p.weightFlops
               << "; forward " << p.model.forwardFlops << "\n";
}

TEST(CostAgreement, MatmulBlock) {
  for (std::string policy : {"save-all", "save-inputs"}) {
    CostPair p;
    std::string error;
    ASSERT_TRUE(costPair(kMatmulModule, "mm", policy, p, error)) << error;
    if (std::getenv("PIPE_GRADCHECK_VERBOSE"))
      printPair("matmul", policy, p);
    // Saved bytes: exact (X, read by dW = X^T dY; W is a parameter).
    EXPECT_EQ(p.savedBytes, p.model.savedBytes) << policy;
    EXPECT_EQ(p.savedBytes, 4u * 8 * 4) << policy;
    // dX = dY W^T and dW = X^T dY are 2*M*N*K each, exactly. Under
    // save-inputs the model charges a forward re-run to the input part; the
    // matmul's backward reads only its operands, so the re-run is dead code
    // in the generated block: autodiff = model - recompute FLOPs.
    EXPECT_EQ(p.inputFlops + p.model.recomputeFlops, p.model.backwardInputFlops)
        << policy;
    EXPECT_EQ(p.inputFlops, 2u * 4 * 16 * 8) << policy;
    EXPECT_EQ(p.weightFlops, p.model.backwardWeightFlops) << policy;
  }
}

TEST(CostAgreement, TransformerLayer) {
  for (std::string policy : {"save-all", "save-inputs"}) {
    CostPair p;
    std::string error;
    ASSERT_TRUE(costPair(transformerModule(), "layer", policy, p, error))
        << error;
    if (std::getenv("PIPE_GRADCHECK_VERBOSE"))
      printPair("transformer", policy, p);
    // Saved bytes agree exactly: both count the inputs the backward reads
    // plus (save-all) the intermediates it reads.
    EXPECT_EQ(p.savedBytes, p.model.savedBytes) << policy;
    // Input-gradient FLOPs within 20%: the generated gradient generics
    // re-evaluate forward scalars in their bodies and the model charges one
    // forward pass per differentiable operand (measured: +17% save-all,
    // -1% save-inputs).
    double ratio = static_cast<double>(p.inputFlops) /
                   static_cast<double>(p.model.backwardInputFlops);
    EXPECT_GT(ratio, 0.8) << policy;
    EXPECT_LT(ratio, 1.2) << policy;
    // The weight block recomputes the cotangent chain that reaches each
    // parameter (docs/autodiff.md), so it costs the model's weight FLOPs
    // plus at most the input chain again.
    EXPECT_GE(p.weightFlops, p.model.backwardWeightFlops) << policy;
    EXPECT_LE(p.weightFlops, p.inputFlops + p.model.backwardWeightFlops)
        << policy;
  }
}

TEST(CostAgreement, RecomputationChangesSavedBytesNotGradients) {
  CostPair all, inputs;
  std::string error;
  ASSERT_TRUE(costPair(transformerModule(), "layer", "save-all", all, error))
      << error;
  ASSERT_TRUE(
      costPair(transformerModule(), "layer", "save-inputs", inputs, error))
      << error;
  // save-inputs keeps only the 4x8 f32 layer input; save-all also returns
  // the intermediates (pipe.saved_results > 0) from the forward block.
  EXPECT_EQ(inputs.savedBytes, 4u * 8 * 4);
  EXPECT_GT(all.savedBytes, inputs.savedBytes);
  EXPECT_EQ(inputs.diffIR.find("pipe.saved_results = 0"),
            inputs.diffIR.find("pipe.saved_results"));
  EXPECT_NE(all.diffIR.find("pipe.saved_results"), std::string::npos);
  EXPECT_LT(all.inputFlops, inputs.inputFlops);

  CompiledGraph saveAll(transformerModule(), "save-all");
  CompiledGraph saveInputs(transformerModule(), "save-inputs");
  ASSERT_TRUE(saveAll.ok()) << saveAll.error();
  ASSERT_TRUE(saveInputs.ok()) << saveInputs.error();
  std::vector<HostTensor> params;
  uint64_t seed = 21;
  for (const ArgSpec &spec : saveAll.params())
    params.push_back(randomTensor(spec, InitSpec{-0.8, 0.8, 0}, seed++));
  std::vector<HostTensor> ga, gi;
  double la = saveAll.grad(params, {}, ga);
  double li = saveInputs.grad(params, {}, gi);
  EXPECT_EQ(la, li);
  ASSERT_EQ(ga.size(), gi.size());
  for (size_t k = 0; k < ga.size(); ++k)
    for (size_t e = 0; e < ga[k].f.size(); ++e)
      EXPECT_NEAR(ga[k].f[e], gi[k].f[e],
                  1e-13 * std::max(1.0, std::abs(ga[k].f[e])))
          << saveAll.params()[k].name << "[" << e << "]";
}

} // namespace
