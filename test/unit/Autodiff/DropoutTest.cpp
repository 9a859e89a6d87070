//===- DropoutTest.cpp - Counter-based dropout masks: reproducibility -----===//
//
// Dropout as the counter-based `linalg.generic` pattern of docs/autodiff.md
// ("Randomness"): the mask bit of an element is a hash of (seed, step, op id,
// global sample index, element index), so it does not depend on how the
// batch is split into micro-batches nor on whether the backward recomputes
// the forward. Checked through the JIT: whole batch vs four quarter batches
// (bit-exact), save-all vs save-inputs gradients (bit-exact), and a
// finite-difference gradient check through a dropout.
//
//===----------------------------------------------------------------------===//

#include "GradCheck.h"

#include "gtest/gtest.h"

#include <cstring>
#include <string>

using namespace pipetest;

namespace {

constexpr double kKeep = 0.75;

/// The dropout pattern on a `batch x features` f32 tensor `in` (batch is loop
/// d0). `rng` is the block's `tensor<3xi64>` input [seed, step, sample
/// offset of this micro-batch]; `opId` tells dropout sites apart.
std::string dropout(const std::string &out, const std::string &in,
                    const std::string &rng, const std::string &type,
                    int64_t opId, double keep) {
  int64_t threshold = static_cast<int64_t>(keep * (1 << 24) + 0.5);
  std::string scale = std::to_string(1.0 / keep);
  std::string mix;
  // splitmix64 finalizer of h ^ v, producing %<tag>.
  auto step = [&](const std::string &h, const std::string &v,
                  const std::string &tag) {
    mix += "    %" + tag + "x = arith.xori %" + h + ", %" + v + " : i64\n";
    mix += "    %" + tag + "a = arith.shrui %" + tag + "x, %c30 : i64\n";
    mix +=
        "    %" + tag + "b = arith.xori %" + tag + "x, %" + tag + "a : i64\n";
    mix += "    %" + tag + "c = arith.muli %" + tag + "b, %m1 : i64\n";
    mix += "    %" + tag + "d = arith.shrui %" + tag + "c, %c27 : i64\n";
    mix +=
        "    %" + tag + "e = arith.xori %" + tag + "c, %" + tag + "d : i64\n";
    mix += "    %" + tag + "f = arith.muli %" + tag + "e, %m2 : i64\n";
    mix += "    %" + tag + "g = arith.shrui %" + tag + "f, %c31 : i64\n";
    mix += "    %" + tag + " = arith.xori %" + tag + "f, %" + tag + "g : i64\n";
  };
  step("golden", "seed", "h0");
  step("h0", "stp", "h1");
  step("h1", "opid", "h2");
  step("h2", "sample", "h3");
  step("h3", "elem", "h4");
  return "  %" + out + "_e = tensor.empty() : " + type + "\n  %" + out +
         " = linalg.generic {indexing_maps = [#id2, #rng0, #rng1, #rng2, "
         "#id2], iterator_types = [\"parallel\", \"parallel\"]}\n"
         "      ins(%" +
         in + ", %" + rng + ", %" + rng + ", %" + rng + " : " + type +
         ", tensor<3xi64>, tensor<3xi64>, tensor<3xi64>) outs(%" + out +
         "_e : " + type +
         ") {\n"
         "  ^bb0(%v: f32, %seed: i64, %stp: i64, %off: i64, %o: f32):\n"
         "    %c27 = arith.constant 27 : i64\n"
         "    %c30 = arith.constant 30 : i64\n"
         "    %c31 = arith.constant 31 : i64\n"
         "    %c40 = arith.constant 40 : i64\n"
         "    %m1 = arith.constant -4658895280553007687 : i64\n"
         "    %m2 = arith.constant -7723592293110705685 : i64\n"
         "    %golden = arith.constant -7046029254386353131 : i64\n"
         "    %opid = arith.constant " +
         std::to_string(opId) +
         " : i64\n"
         "    %thr = arith.constant " +
         std::to_string(threshold) +
         " : i64\n"
         "    %scale = arith.constant " +
         scale +
         " : f32\n"
         "    %zero = arith.constant 0.0 : f32\n"
         "    %bi = linalg.index 0 : index\n"
         "    %ji = linalg.index 1 : index\n"
         "    %b = arith.index_cast %bi : index to i64\n"
         "    %elem = arith.index_cast %ji : index to i64\n"
         "    %sample = arith.addi %off, %b : i64\n" +
         mix +
         "    %top = arith.shrui %h4, %c40 : i64\n"
         "    %keep = arith.cmpi ult, %top, %thr : i64\n"
         "    %scaled = arith.mulf %v, %scale : f32\n"
         "    %r = arith.select %keep, %scaled, %zero : f32\n"
         "    linalg.yield %r : f32\n"
         "  } -> " +
         type + "\n";
}

std::string tensorType(int64_t rows, int64_t cols) {
  return "tensor<" + std::to_string(rows) + "x" + std::to_string(cols) +
         "xf32>";
}

/// A block `@name params(%x) (%rng) -> dropout(tanh(x))^2`.
std::string dropBlock(const std::string &name, int64_t rows, int64_t cols,
                      int64_t opId) {
  std::string t = tensorType(rows, cols);
  return "pipe.block @" + name + " params(%x: " + t +
         ") (%rng: tensor<3xi64>) -> " + t +
         " {\n  %te = tensor.empty() : " + t +
         "\n  %t = linalg.generic {indexing_maps = [#id2, #id2], "
         "iterator_types = [\"parallel\", \"parallel\"]} ins(%x : " +
         t + ") outs(%te : " + t +
         ") {\n  ^bb0(%a: f32, %o: f32):\n    %th = math.tanh %a : f32\n"
         "    linalg.yield %th : f32\n  } -> " +
         t + "\n" + dropout("y", "t", "rng", t, opId, kKeep) +
         // A square after the dropout: its backward reads the dropout's
         // output, which save-all therefore saves.
         "  %ze = tensor.empty() : " + t +
         "\n  %z = linalg.generic {indexing_maps = [#id2, #id2], "
         "iterator_types = [\"parallel\", \"parallel\"]} ins(%y : " +
         t + ") outs(%ze : " + t +
         ") {\n  ^bb0(%a: f32, %o: f32):\n    %sq = arith.mulf %a, %a : f32\n"
         "    linalg.yield %sq : f32\n  } -> " +
         t + "\n  pipe.return %z : " + t + "\n}\n";
}

constexpr int64_t kRows = 8, kCols = 16;

/// Graph @g(rng) = sum(drop(tanh(x))^2 * w) over the whole batch, plus an
/// unused quarter-batch block @drop_q with the same op id.
std::string dropoutModule() {
  std::string t = tensorType(kRows, kCols);
  std::string m = kMapAliases;
  m += "#rng0 = affine_map<(d0, d1) -> (0)>\n"
       "#rng1 = affine_map<(d0, d1) -> (1)>\n"
       "#rng2 = affine_map<(d0, d1) -> (2)>\n";
  m += "pipe.param @x : " + t + "\npipe.param @w : " + t + "\n";
  m += dropBlock("drop", kRows, kCols, /*opId=*/7);
  m += dropBlock("drop_q", kRows / 4, kCols, /*opId=*/7);
  m += dropBlock("drop_other", kRows, kCols, /*opId=*/8);
  m += "pipe.block @loss params(%w: " + t + ") (%y: " + t +
       ") -> tensor<f32> {\n"
       "  %z = arith.constant 0.0 : f32\n"
       "  %e = tensor.empty() : tensor<f32>\n"
       "  %i = linalg.fill ins(%z : f32) outs(%e : tensor<f32>) -> "
       "tensor<f32>\n"
       "  %r = linalg.generic {indexing_maps = [#id2, #id2, #scalar2], "
       "iterator_types = [\"reduction\", \"reduction\"]} ins(%y, %w : " +
       t + ", " + t +
       ") outs(%i : tensor<f32>) {\n"
       "  ^bb0(%a: f32, %b: f32, %acc: f32):\n"
       "    %mm = arith.mulf %a, %b : f32\n"
       "    %s = arith.addf %acc, %mm : f32\n"
       "    linalg.yield %s : f32\n"
       "  } -> tensor<f32>\n"
       "  pipe.return %r : tensor<f32>\n}\n";
  m += "pipe.graph @g(%rng: tensor<3xi64>) -> tensor<f32> {\n"
       "  %y = pipe.run \"drop\" @drop(%rng) params [@x] : (tensor<3xi64>) "
       "-> " +
       t + "\n  %l = pipe.run \"loss\" @loss(%y) params [@w] : (" + t +
       ") -> tensor<f32>\n  pipe.return %l : tensor<f32>\n}\n";
  return m;
}

HostTensor rngState(int64_t seed, int64_t step, int64_t offset) {
  HostTensor t;
  t.shape = {3};
  t.isInt = true;
  t.i = {seed, step, offset};
  return t;
}

HostTensor randomX(uint64_t seed) {
  ArgSpec spec;
  spec.shape = {kRows, kCols};
  spec.isFloat = true;
  InitSpec init;
  init.lo = 0.1; // tanh(x) != 0, so a zero output means a dropped element
  init.hi = 1.0;
  return randomTensor(spec, init, seed);
}

HostTensor rowsOf(const HostTensor &t, int64_t first, int64_t count) {
  HostTensor r;
  r.shape = {count, t.shape[1]};
  r.f.assign(t.f.begin() + first * t.shape[1],
             t.f.begin() + (first + count) * t.shape[1]);
  return r;
}

bool bitEqual(const std::vector<double> &a, const std::vector<double> &b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

TEST(Dropout, MicroBatchSplitReproducesWholeBatchMask) {
  CompiledGraph graph(dropoutModule(), "save-inputs");
  ASSERT_TRUE(graph.ok()) << graph.error();
  HostTensor x = randomX(11);
  std::vector<HostTensor> whole;
  graph.invoke("drop", {x, rngState(1234, 5, 0)}, {{kRows, kCols}}, whole);
  ASSERT_TRUE(graph.error().empty()) << graph.error();

  // Four micro-batches of 2 samples, each told its global sample offset.
  std::vector<double> split;
  for (int64_t mb = 0; mb < 4; ++mb) {
    std::vector<HostTensor> part;
    graph.invoke("drop_q", {rowsOf(x, 2 * mb, 2), rngState(1234, 5, 2 * mb)},
                 {{kRows / 4, kCols}}, part);
    split.insert(split.end(), part[0].f.begin(), part[0].f.end());
  }
  EXPECT_TRUE(bitEqual(whole[0].f, split));

  int64_t kept = 0;
  for (double v : whole[0].f)
    kept += v != 0.0;
  double fraction = static_cast<double>(kept) / (kRows * kCols);
  EXPECT_GT(fraction, kKeep - 0.12);
  EXPECT_LT(fraction, kKeep + 0.12);

  // Without the offsets every micro-batch would reuse samples 0 and 1.
  std::vector<double> noOffset;
  for (int64_t mb = 0; mb < 4; ++mb) {
    std::vector<HostTensor> part;
    graph.invoke("drop_q", {rowsOf(x, 2 * mb, 2), rngState(1234, 5, 0)},
                 {{kRows / 4, kCols}}, part);
    noOffset.insert(noOffset.end(), part[0].f.begin(), part[0].f.end());
  }
  EXPECT_FALSE(bitEqual(whole[0].f, noOffset));

  // Another step, seed or dropout site draws another mask.
  for (auto [fn, state] :
       {std::pair<const char *, HostTensor>{"drop", rngState(1234, 6, 0)},
        {"drop", rngState(1235, 5, 0)},
        {"drop_other", rngState(1234, 5, 0)}}) {
    std::vector<HostTensor> other;
    graph.invoke(fn, {x, state}, {{kRows, kCols}}, other);
    EXPECT_FALSE(bitEqual(whole[0].f, other[0].f)) << fn;
  }
}

TEST(Dropout, RecomputationReproducesMask) {
  CompiledGraph saveAll(dropoutModule(), "save-all");
  CompiledGraph saveInputs(dropoutModule(), "save-inputs");
  ASSERT_TRUE(saveAll.ok()) << saveAll.error();
  ASSERT_TRUE(saveInputs.ok()) << saveInputs.error();
  // Save-all keeps the dropout output (or mask inputs) for the backward;
  // save-inputs recomputes the mask from (seed, step, offset).
  EXPECT_NE(saveAll.differentiatedIR().find("pipe.saved_results = 1"),
            std::string::npos)
      << saveAll.differentiatedIR();
  EXPECT_EQ(saveInputs.differentiatedIR().find("pipe.saved_results = 1"),
            std::string::npos)
      << saveInputs.differentiatedIR();

  ArgSpec wSpec;
  wSpec.shape = {kRows, kCols};
  wSpec.isFloat = true;
  std::vector<HostTensor> params{randomX(3), randomTensor(wSpec, {}, 4)};
  std::vector<HostTensor> inputs{rngState(99, 17, 0)};
  std::vector<HostTensor> gradsAll, gradsInputs;
  double lossAll = saveAll.grad(params, inputs, gradsAll);
  double lossInputs = saveInputs.grad(params, inputs, gradsInputs);
  ASSERT_TRUE(saveAll.error().empty()) << saveAll.error();
  ASSERT_TRUE(saveInputs.error().empty()) << saveInputs.error();
  EXPECT_EQ(lossAll, lossInputs);
  ASSERT_EQ(gradsAll.size(), 2u);
  ASSERT_EQ(gradsInputs.size(), 2u);
  EXPECT_TRUE(bitEqual(gradsAll[0].f, gradsInputs[0].f));
  EXPECT_TRUE(bitEqual(gradsAll[1].f, gradsInputs[1].f));

  // The gradient is zero exactly where the forward dropped the element.
  std::vector<HostTensor> y;
  saveInputs.invoke("drop", {params[0], inputs[0]}, {{kRows, kCols}}, y);
  for (size_t e = 0; e < y[0].f.size(); ++e)
    EXPECT_EQ(y[0].f[e] == 0.0, gradsInputs[0].f[e] == 0.0) << e;
}

TEST(Dropout, GradientCheckWithFixedMask) {
  for (const char *policy : {"save-all", "save-inputs"}) {
    CompiledGraph graph(dropoutModule(), policy);
    ASSERT_TRUE(graph.ok()) << graph.error();
    ArgSpec wSpec;
    wSpec.shape = {kRows, kCols};
    wSpec.isFloat = true;
    std::vector<HostTensor> params{randomX(5), randomTensor(wSpec, {}, 6)};
    GradCheckResult r = checkGradients(graph, params, {rngState(42, 1, 0)});
    EXPECT_LT(r.maxRelError, 1e-6) << policy << "\n" << r.report;
  }
}

} // namespace
