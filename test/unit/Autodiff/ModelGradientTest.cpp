//===- ModelGradientTest.cpp - Finite-difference checks of whole blocks ---===//
//
// A tiny pre-norm transformer layer (layer norm, causal multi-head attention
// with reshapes into heads, GELU MLP, residuals) and a tiny language model
// (embedding, a hidden block, an LM head tied to the embedding table and a
// cross-entropy loss), each under the three recompute policies.
//
//===----------------------------------------------------------------------===//

#include "GradCheck.h"

#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"

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

} // namespace
