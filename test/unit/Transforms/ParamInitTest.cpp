//===- ParamInitTest.cpp - Roles, fans and draws of missing weights -------===//
//
// analyzeWeightUse reads a weight's role and fans off the ops that use it
// (the contraction of a matmul or convolution, through transposes and
// broadcasts), and getInitialValue draws reproducible values within the
// bounds those fans give.
//
//===----------------------------------------------------------------------===//

#include "pipe/Dialect/Pipe/Transforms/ParamInit.h"
#include "pipe/Dialect/Pipe/Transforms/ParamData.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/Parser/Parser.h"
#include "gtest/gtest.h"

#include <cmath>
#include <cstring>

using namespace mlir;
using namespace mlir::pipe;

namespace {

class ParamInitTest : public ::testing::Test {
protected:
  ParamInitTest() {
    context.loadDialect<arith::ArithDialect, func::FuncDialect,
                        linalg::LinalgDialect, math::MathDialect,
                        tensor::TensorDialect>();
  }

  /// Parses `source` and returns the use of the constant named `name`
  /// (by its location).
  WeightUse analyze(StringRef source, StringRef name) {
    module = parseSourceString<ModuleOp>(source, &context);
    EXPECT_TRUE(module);
    Value weight;
    module->walk([&](arith::ConstantOp constant) {
      if (auto loc = dyn_cast<NameLoc>(constant.getLoc()))
        if (loc.getName() == name)
          weight = constant.getResult();
    });
    EXPECT_TRUE(weight) << name.str();
    return weight ? analyzeWeightUse(weight) : WeightUse();
  }

  /// The f32 values of an initial value, as the weights writer reads them.
  static std::vector<float> values(ElementsAttr attr) {
    std::vector<char> storage;
    std::optional<ArrayRef<char>> bytes = getRawBytes(attr, storage);
    EXPECT_TRUE(bytes);
    if (!bytes)
      return {};
    std::vector<float> out(bytes->size() / sizeof(float));
    std::memcpy(out.data(), bytes->data(), out.size() * sizeof(float));
    return out;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

// torch-mlir's Linear: weight [out, in] transposed, then contracted over
// `in` by a matmul; the bias is added.
constexpr const char *kLinear = R"mlir(
func.func @f(%x: tensor<2x64xf32>) -> tensor<2x5xf32> {
  %cst = arith.constant 0.0 : f32
  %w = arith.constant dense_resource<__elided__> : tensor<5x64xf32> loc("w")
  %b = arith.constant dense_resource<__elided__> : tensor<5xf32> loc("b")
  %e = tensor.empty() : tensor<64x5xf32>
  %t = linalg.transpose ins(%w : tensor<5x64xf32>) outs(%e : tensor<64x5xf32>) permutation = [1, 0]
  %o = tensor.empty() : tensor<2x5xf32>
  %z = linalg.fill ins(%cst : f32) outs(%o : tensor<2x5xf32>) -> tensor<2x5xf32>
  %m = linalg.matmul ins(%x, %t : tensor<2x64xf32>, tensor<64x5xf32>) outs(%z : tensor<2x5xf32>) -> tensor<2x5xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%m, %b : tensor<2x5xf32>, tensor<5xf32>) outs(%o : tensor<2x5xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %s = arith.addf %in, %in_0 : f32
    linalg.yield %s : f32
  } -> tensor<2x5xf32>
  return %r : tensor<2x5xf32>
}
)mlir";

TEST_F(ParamInitTest, LinearFansFollowTheTranspose) {
  WeightUse use = analyze(kLinear, "w");
  EXPECT_EQ(use.role, WeightRole::Matrix);
  EXPECT_TRUE(use.fromContraction);
  EXPECT_EQ(use.fanIn, 64);
  EXPECT_EQ(use.fanOut, 5);
  EXPECT_EQ(analyze(kLinear, "b").role, WeightRole::Bias);
}

// A weight stored [in, out] and broadcast over a batch into batch_matmul:
// the contracted dimension is its first.
constexpr const char *kBatched = R"mlir(
func.func @f(%x: tensor<3x2x8xf32>, %init: tensor<3x2x4xf32>) -> tensor<3x2x4xf32> {
  %w = arith.constant dense_resource<__elided__> : tensor<8x4xf32> loc("w")
  %e = tensor.empty() : tensor<3x8x4xf32>
  %bw = linalg.broadcast ins(%w : tensor<8x4xf32>) outs(%e : tensor<3x8x4xf32>) dimensions = [0]
  %m = linalg.batch_matmul ins(%x, %bw : tensor<3x2x8xf32>, tensor<3x8x4xf32>) outs(%init : tensor<3x2x4xf32>) -> tensor<3x2x4xf32>
  return %m : tensor<3x2x4xf32>
}
)mlir";

TEST_F(ParamInitTest, BroadcastIntoBatchMatmul) {
  WeightUse use = analyze(kBatched, "w");
  EXPECT_TRUE(use.fromContraction);
  EXPECT_EQ(use.fanIn, 8);
  EXPECT_EQ(use.fanOut, 4);
}

// Conv2d's weight [F, C, kh, kw]: PyTorch's fans C*kh*kw and F*kh*kw.
constexpr const char *kConv = R"mlir(
func.func @f(%x: tensor<1x3x6x6xf32>, %init: tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
  %w = arith.constant dense_resource<__elided__> : tensor<4x3x3x3xf32> loc("w")
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<1x3x6x6xf32>, tensor<4x3x3x3xf32>) outs(%init : tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  return %c : tensor<1x4x4x4xf32>
}
)mlir";

TEST_F(ParamInitTest, ConvolutionCountsTheWindow) {
  WeightUse use = analyze(kConv, "w");
  EXPECT_TRUE(use.fromContraction);
  EXPECT_EQ(use.fanIn, 27);
  EXPECT_EQ(use.fanOut, 36);
}

// An embedding table read by index: no contraction, PyTorch's convention.
constexpr const char *kTable = R"mlir(
func.func @f(%x: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %w = arith.constant dense_resource<__elided__> : tensor<7x5xf32> loc("w")
  %c = tensor.extract_slice %w[0, 0] [2, 5] [1, 1] : tensor<7x5xf32> to tensor<2x5xf32>
  return %c : tensor<2x5xf32>
}
)mlir";

TEST_F(ParamInitTest, UncontractedTableUsesTheShape) {
  WeightUse use = analyze(kTable, "w");
  EXPECT_EQ(use.role, WeightRole::Matrix);
  EXPECT_FALSE(use.fromContraction);
  EXPECT_EQ(use.fanIn, 5);
  EXPECT_EQ(use.fanOut, 7);
}

// torch-mlir's one-generic batch_norm: (x - mean) * rsqrt(var + eps) *
// weight + bias.
constexpr const char *kBatchNorm = R"mlir(
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d1)>
func.func @f(%x: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %cst = arith.constant 1.000000e-05 : f64
  %w = arith.constant dense_resource<__elided__> : tensor<2xf32> loc("weight")
  %b = arith.constant dense_resource<__elided__> : tensor<2xf32> loc("bias")
  %m = arith.constant dense_resource<__elided__> : tensor<2xf32> loc("mean")
  %v = arith.constant dense_resource<__elided__> : tensor<2xf32> loc("var")
  %0 = tensor.empty() : tensor<1x2x3x3xf32>
  %1 = linalg.generic {indexing_maps = [#map, #map1, #map1, #map1, #map1, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %w, %b, %m, %v : tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) outs(%0 : tensor<1x2x3x3xf32>) {
  ^bb0(%in: f32, %in_0: f32, %in_1: f32, %in_2: f32, %in_3: f32, %out: f32):
    %2 = arith.subf %in, %in_2 : f32
    %3 = arith.truncf %cst : f64 to f32
    %4 = arith.addf %in_3, %3 : f32
    %5 = math.rsqrt %4 : f32
    %6 = arith.mulf %2, %5 : f32
    %7 = arith.mulf %6, %in_0 : f32
    %8 = arith.addf %7, %in_1 : f32
    linalg.yield %8 : f32
  } -> tensor<1x2x3x3xf32>
  return %1 : tensor<1x2x3x3xf32>
}
)mlir";

TEST_F(ParamInitTest, BatchNormRoles) {
  EXPECT_EQ(analyze(kBatchNorm, "mean").role, WeightRole::RunningMean);
  EXPECT_EQ(analyze(kBatchNorm, "var").role, WeightRole::RunningVariance);
  EXPECT_EQ(analyze(kBatchNorm, "weight").role, WeightRole::Scale);
  EXPECT_EQ(analyze(kBatchNorm, "bias").role, WeightRole::Bias);
  EXPECT_TRUE(analyze(kBatchNorm, "var").isStatistic());
  EXPECT_FALSE(analyze(kBatchNorm, "weight").isStatistic());
}

TEST_F(ParamInitTest, DrawsStayInTheirBoundsAndRepeat) {
  auto type = RankedTensorType::get({64, 32}, Float32Type::get(&context));
  WeightUse use;
  use.fanIn = 32;
  use.fanOut = 64;
  double kaiming = std::sqrt(6.0 / 32), xavier = std::sqrt(6.0 / 96);
  std::vector<float> a = values(
      getInitialValue(type, use, InitKind::KaimingUniform, 1, "layer.w"));
  std::vector<float> x =
      values(getInitialValue(type, use, InitKind::XavierUniform, 1, "layer.w"));
  ASSERT_EQ(a.size(), 64u * 32u);
  float maxA = 0, maxX = 0;
  for (auto [va, vx] : llvm::zip(a, x)) {
    maxA = std::max(maxA, std::abs(va));
    maxX = std::max(maxX, std::abs(vx));
  }
  // Within the bound, and filling most of it.
  EXPECT_LE(maxA, kaiming);
  EXPECT_GT(maxA, 0.9 * kaiming);
  EXPECT_LE(maxX, xavier);
  EXPECT_GT(maxX, 0.9 * xavier);
  // The same seed and name give the same values; another seed or name not.
  EXPECT_EQ(a, values(getInitialValue(type, use, InitKind::KaimingUniform, 1,
                                      "layer.w")));
  EXPECT_NE(a, values(getInitialValue(type, use, InitKind::KaimingUniform, 2,
                                      "layer.w")));
  EXPECT_NE(a, values(getInitialValue(type, use, InitKind::KaimingUniform, 1,
                                      "layer.v")));
  // Normal: mean near 0, standard deviation near 0.02.
  std::vector<float> n =
      values(getInitialValue(type, use, InitKind::Normal, 1, "layer.w"));
  double sum = 0, squares = 0;
  for (float v : n) {
    sum += v;
    squares += double(v) * v;
  }
  double mean = sum / n.size();
  EXPECT_NEAR(mean, 0.0, 0.002);
  EXPECT_NEAR(std::sqrt(squares / n.size() - mean * mean), 0.02, 0.002);
}

TEST_F(ParamInitTest, RolesGetTheirConstants) {
  auto type = RankedTensorType::get({3}, Float32Type::get(&context));
  auto valueFor = [&](WeightRole role) {
    WeightUse use;
    use.role = role;
    return values(getInitialValue(type, use, InitKind::Normal, 0, "v"));
  };
  EXPECT_EQ(valueFor(WeightRole::Bias), std::vector<float>(3, 0.0f));
  EXPECT_EQ(valueFor(WeightRole::Scale), std::vector<float>(3, 1.0f));
  EXPECT_EQ(valueFor(WeightRole::RunningMean), std::vector<float>(3, 0.0f));
  EXPECT_EQ(valueFor(WeightRole::RunningVariance), std::vector<float>(3, 1.0f));
  // Integer weights have no draw.
  auto integer = RankedTensorType::get({3}, IntegerType::get(&context, 32));
  EXPECT_FALSE(getInitialValue(integer, WeightUse(), InitKind::Normal, 0, "i"));
}

} // namespace
