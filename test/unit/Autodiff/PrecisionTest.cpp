//===- PrecisionTest.cpp - bf16/f16 GEMMs vs f32 through the JIT ----------===//
//
// pipe-precision truncates GEMM operands to bf16/f16 and accumulates in f32.
// The JIT runs the same linear layer (and its gradients) with gemm=f32,
// bf16 and f16 and checks the documented tolerances: norm-wise relative
// error < 1e-2 for bf16 (8-bit significand, unit roundoff 2^-9) and < 2e-3
// for f16 (2^-12), and a nonzero error (the truncation really happens).
//
//===----------------------------------------------------------------------===//

#include "GradCheck.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdio>

using namespace pipetest;

namespace {

const char *kLinear = R"mlir(
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#scalar2 = affine_map<(d0, d1) -> ()>
pipe.param @w : tensor<32x24xf32>
pipe.param @v : tensor<16x24xf32>
pipe.block @mm params(%w: tensor<32x24xf32>) (%x: tensor<16x32xf32>) -> tensor<16x24xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x24xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x24xf32>) -> tensor<16x24xf32>
  %y = linalg.matmul ins(%x, %w : tensor<16x32xf32>, tensor<32x24xf32>) outs(%f : tensor<16x24xf32>) -> tensor<16x24xf32>
  pipe.return %y : tensor<16x24xf32>
}
pipe.block @loss params(%v: tensor<16x24xf32>) (%y: tensor<16x24xf32>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %r = linalg.generic {indexing_maps = [#id2, #id2, #scalar2], iterator_types = ["reduction", "reduction"]}
      ins(%y, %v : tensor<16x24xf32>, tensor<16x24xf32>) outs(%i : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  pipe.return %r : tensor<f32>
}
pipe.graph @g(%x: tensor<16x32xf32>) -> tensor<f32> {
  %y = pipe.run "mm" @mm(%x) params [@w] : (tensor<16x32xf32>) -> tensor<16x24xf32>
  %l = pipe.run "loss" @loss(%y) params [@v] : (tensor<16x24xf32>) -> tensor<f32>
  pipe.return %l : tensor<f32>
}
)mlir";

double relError(const std::vector<double> &a, const std::vector<double> &ref) {
  double d2 = 0, r2 = 0;
  for (size_t k = 0; k < ref.size(); ++k) {
    d2 += (a[k] - ref[k]) * (a[k] - ref[k]);
    r2 += ref[k] * ref[k];
  }
  return std::sqrt(d2 / r2);
}

struct LinearRun {
  std::vector<double> y, gradW;
};

LinearRun runLinear(const std::string &gemm, std::string &error) {
  CompiledGraph graph(kLinear, "save-all", "g",
                      "pipe-precision{gemm=" + gemm + "}");
  if (!graph.ok()) {
    error = graph.error();
    return {};
  }
  ArgSpec w{"w", {32, 24}, false, true}, v{"v", {16, 24}, false, true},
      x{"x", {16, 32}, false, true};
  std::vector<HostTensor> params{randomTensor(w, {}, 1),
                                 randomTensor(v, {}, 2)};
  HostTensor input = randomTensor(x, {}, 3);
  LinearRun run;
  std::vector<HostTensor> y, grads;
  graph.invoke("mm", {params[0], input}, {{16, 24}}, y);
  graph.grad(params, {input}, grads);
  error = graph.error();
  if (!error.empty() || grads.size() != 2)
    return {};
  run.y = y[0].f;
  run.gradW = grads[0].f;
  return run;
}

TEST(Precision, Bf16AndF16GemmWithinToleranceOfF32) {
  std::string error;
  LinearRun ref = runLinear("f32", error);
  ASSERT_TRUE(error.empty()) << error;
  LinearRun bf16 = runLinear("bf16", error);
  ASSERT_TRUE(error.empty()) << error;
  LinearRun f16 = runLinear("f16", error);
  ASSERT_TRUE(error.empty()) << error;

  double bfY = relError(bf16.y, ref.y), bfG = relError(bf16.gradW, ref.gradW);
  double hY = relError(f16.y, ref.y), hG = relError(f16.gradW, ref.gradW);
  EXPECT_LT(bfY, 1e-2);
  EXPECT_LT(bfG, 1e-2);
  EXPECT_LT(hY, 2e-3);
  EXPECT_LT(hG, 2e-3);
  // The truncation is real, and f16 (11-bit significand) beats bf16 (8).
  EXPECT_GT(bfY, 1e-5);
  EXPECT_GT(hY, 1e-7);
  EXPECT_LT(hY, bfY);
  std::printf("gemm rel. error vs f32: bf16 y %.3g dW %.3g, f16 y %.3g dW "
              "%.3g\n",
              bfY, bfG, hY, hG);
}

} // namespace
