//===- CostModelTest.cpp - Closed-form checks of the cost model -----------===//
//
// Every figure is compared EXACTLY with its closed form, written out next to
// the expectation so that a reader can check the arithmetic.
//
//===----------------------------------------------------------------------===//

#include "pipe/Analysis/CostModel.h"
#include "pipe/Dialect/Pipe/IR/Pipe.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::pipe;

namespace {

class CostModelTest : public ::testing::Test {
protected:
  CostModelTest() {
    context.loadDialect<PipeDialect, arith::ArithDialect, linalg::LinalgDialect,
                        math::MathDialect, tensor::TensorDialect>();
  }

  /// Parses `source` and returns its single pipe.block.
  BlockOp parseBlock(StringRef source) {
    module = parseSourceString<ModuleOp>(source, &context);
    if (!module)
      return {};
    auto blocks = module->getOps<BlockOp>();
    return blocks.empty() ? BlockOp() : *blocks.begin();
  }

  /// The single op of `block` with the given name.
  Operation *findOp(BlockOp block, StringRef name) {
    Operation *found = nullptr;
    block.walk([&](Operation *op) {
      if (op->getName().getStringRef() == name)
        found = op;
    });
    return found;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

constexpr int64_t M = 4, N = 6, K = 8;

// y = x @ w with x: MxK (input), w: KxN (parameter).
constexpr const char *kMatmul = R"mlir(
pipe.block @mm params(%w: tensor<8x6xf32>) (%x: tensor<4x8xf32>)
    -> tensor<4x6xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<4x6xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%empty : tensor<4x6xf32>)
      -> tensor<4x6xf32>
  %y = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x6xf32>)
      outs(%acc : tensor<4x6xf32>) -> tensor<4x6xf32>
  pipe.return %y : tensor<4x6xf32>
}
)mlir";

TEST_F(CostModelTest, MatmulOp) {
  BlockOp block = parseBlock(kMatmul);
  ASSERT_TRUE(block);
  CostOptions options;
  ValueOrigins origins(block.getBody(), block.getNumParams());
  FailureOr<OpCost> cost =
      estimateOpCost(findOp(block, "linalg.matmul"), origins, options);
  ASSERT_TRUE(succeeded(cost));
  EXPECT_EQ(cost->forwardFlops, uint64_t(2 * M * N * K));
  EXPECT_EQ(cost->backwardInputFlops, uint64_t(2 * M * N * K));  // dX
  EXPECT_EQ(cost->backwardWeightFlops, uint64_t(2 * M * N * K)); // dW
  // x, w and the accumulator are read; y is written.
  EXPECT_EQ(cost->bytesRead, uint64_t(4 * (M * K + K * N + M * N)));
  EXPECT_EQ(cost->bytesWritten, uint64_t(4 * M * N));
  // dX reads w, dW reads x.
  Value x = block.getBody().getArgument(1), w = block.getBody().getArgument(0);
  EXPECT_EQ(cost->readByBackward.size(), 2u);
  EXPECT_TRUE(llvm::is_contained(cost->readByBackward, x));
  EXPECT_TRUE(llvm::is_contained(cost->readByBackward, w));

  FailureOr<OpCost> fill =
      estimateOpCost(findOp(block, "linalg.fill"), origins, options);
  ASSERT_TRUE(succeeded(fill));
  EXPECT_EQ(fill->forwardFlops, 0u);
  EXPECT_EQ(fill->backwardInputFlops + fill->backwardWeightFlops, 0u);
}

TEST_F(CostModelTest, MatmulBlockUnderEachPolicy) {
  BlockOp block = parseBlock(kMatmul);
  ASSERT_TRUE(block);
  CostOptions options;
  FailureOr<BlockCost> saveAll = estimateBlockCost(block, options);
  ASSERT_TRUE(succeeded(saveAll));
  EXPECT_EQ(saveAll->forwardFlops, uint64_t(2 * M * N * K));
  EXPECT_EQ(saveAll->backwardInputFlops, uint64_t(2 * M * N * K));
  EXPECT_EQ(saveAll->backwardWeightFlops, uint64_t(2 * M * N * K));
  EXPECT_EQ(saveAll->paramBytes, uint64_t(4 * K * N));
  // dW = x^T dY needs x; dX = dY w^T needs only the resident weight.
  EXPECT_EQ(saveAll->savedBytes, uint64_t(4 * M * K));
  EXPECT_EQ(saveAll->outputBytes, uint64_t(4 * M * N));
  ASSERT_EQ(saveAll->resultBytes.size(), 1u);
  EXPECT_EQ(saveAll->recomputeFlops, 0u);

  options.recompute = RecomputePolicy::Recompute;
  FailureOr<BlockCost> recompute = estimateBlockCost(block, options);
  ASSERT_TRUE(succeeded(recompute));
  EXPECT_EQ(recompute->recomputeFlops, uint64_t(2 * M * N * K));
  EXPECT_EQ(recompute->backwardInputFlops, uint64_t(2 * 2 * M * N * K));
  EXPECT_EQ(recompute->backwardWeightFlops, uint64_t(2 * M * N * K));
  EXPECT_EQ(recompute->savedBytes, uint64_t(4 * M * K)); // the input x

  // x straight from the graph's arguments needs no gradient, but dW still
  // needs x kept.
  options.recompute = RecomputePolicy::SaveAll;
  FailureOr<BlockCost> dataInput =
      estimateBlockCost(block, options, /*inputNeedsGrad=*/{false});
  ASSERT_TRUE(succeeded(dataInput));
  EXPECT_EQ(dataInput->backwardInputFlops, 0u);
  EXPECT_EQ(dataInput->backwardWeightFlops, uint64_t(2 * M * N * K));
  EXPECT_EQ(dataInput->savedBytes, uint64_t(4 * M * K));

  options.floatBytes = 2; // bf16
  FailureOr<BlockCost> bf16 = estimateBlockCost(block, options);
  ASSERT_TRUE(succeeded(bf16));
  EXPECT_EQ(bf16->paramBytes, uint64_t(2 * K * N));
  EXPECT_EQ(bf16->savedBytes, uint64_t(2 * M * K));
  EXPECT_EQ(bf16->outputBytes, uint64_t(2 * M * N));
  EXPECT_EQ(bf16->forwardFlops, uint64_t(2 * M * N * K));
}

// torch's nn.Linear without bias: y = x @ W^T with W: NxK, as torch-mlir
// writes it: a generic contraction with a permuted map on W.
constexpr const char *kLinearTransposed = R"mlir(
pipe.block @linear params(%w: tensor<6x8xf32>) (%x: tensor<4x8xf32>)
    -> tensor<4x6xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<4x6xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%empty : tensor<4x6xf32>)
      -> tensor<4x6xf32>
  %y = linalg.generic {
      indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                       affine_map<(m, n, k) -> (n, k)>,
                       affine_map<(m, n, k) -> (m, n)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<4x8xf32>, tensor<6x8xf32>)
      outs(%acc : tensor<4x6xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x6xf32>
  pipe.return %y : tensor<4x6xf32>
}
)mlir";

TEST_F(CostModelTest, GenericContractionWithPermutedMap) {
  BlockOp block = parseBlock(kLinearTransposed);
  ASSERT_TRUE(block);
  FailureOr<BlockCost> cost = estimateBlockCost(block, CostOptions());
  ASSERT_TRUE(succeeded(cost));
  EXPECT_EQ(cost->forwardFlops, uint64_t(2 * M * N * K));
  EXPECT_EQ(cost->backwardInputFlops, uint64_t(2 * M * N * K));
  EXPECT_EQ(cost->backwardWeightFlops, uint64_t(2 * M * N * K));
  EXPECT_EQ(cost->paramBytes, uint64_t(4 * N * K));
  EXPECT_EQ(cost->savedBytes, uint64_t(4 * M * K));
}

// Q K^T-style batched product of two activations: both get gradients, both
// are input gradients.
constexpr const char *kBatchMatmul = R"mlir(
pipe.block @bmm (%a: tensor<3x4x6xf32>, %b: tensor<3x6x5xf32>)
    -> tensor<3x4x5xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<3x4x5xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%empty : tensor<3x4x5xf32>)
      -> tensor<3x4x5xf32>
  %c = linalg.batch_matmul ins(%a, %b : tensor<3x4x6xf32>, tensor<3x6x5xf32>)
      outs(%acc : tensor<3x4x5xf32>) -> tensor<3x4x5xf32>
  pipe.return %c : tensor<3x4x5xf32>
}
)mlir";

TEST_F(CostModelTest, BatchMatmul) {
  constexpr int64_t B = 3, BM = 4, BN = 5, BK = 6;
  BlockOp block = parseBlock(kBatchMatmul);
  ASSERT_TRUE(block);
  FailureOr<BlockCost> cost = estimateBlockCost(block, CostOptions());
  ASSERT_TRUE(succeeded(cost));
  EXPECT_EQ(cost->forwardFlops, uint64_t(2 * B * BM * BN * BK));
  EXPECT_EQ(cost->backwardInputFlops, uint64_t(2 * 2 * B * BM * BN * BK));
  EXPECT_EQ(cost->backwardWeightFlops, 0u);
  EXPECT_EQ(cost->paramBytes, 0u);
  EXPECT_EQ(cost->savedBytes, uint64_t(4 * (B * BM * BK + B * BK * BN)));
  EXPECT_EQ(cost->outputBytes, uint64_t(4 * B * BM * BN));
}

// Multi-head self-attention, S = 3 tokens, D = 8, H = 2 heads of Dh = 4:
// projections, Q K^T (generic contraction), scale, softmax as torch-mlir
// decomposes it (max, sub+exp, sum, div), P V (batch_matmul), output
// projection.
constexpr const char *kAttention = R"mlir(
#id3 = affine_map<(h, i, j) -> (h, i, j)>
#row = affine_map<(h, i, j) -> (h, i)>
pipe.block @attention params(%wq: tensor<8x8xf32>, %wk: tensor<8x8xf32>,
                             %wv: tensor<8x8xf32>, %wo: tensor<8x8xf32>)
    (%x: tensor<3x8xf32>) -> tensor<3x8xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %scale = arith.constant 0.5 : f32
  %e_sd = tensor.empty() : tensor<3x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e_sd : tensor<3x8xf32>)
      -> tensor<3x8xf32>
  %q = linalg.matmul ins(%x, %wq : tensor<3x8xf32>, tensor<8x8xf32>)
      outs(%acc : tensor<3x8xf32>) -> tensor<3x8xf32>
  %k = linalg.matmul ins(%x, %wk : tensor<3x8xf32>, tensor<8x8xf32>)
      outs(%acc : tensor<3x8xf32>) -> tensor<3x8xf32>
  %v = linalg.matmul ins(%x, %wv : tensor<3x8xf32>, tensor<8x8xf32>)
      outs(%acc : tensor<3x8xf32>) -> tensor<3x8xf32>
  %q3 = tensor.expand_shape %q [[0], [1, 2]] output_shape [3, 2, 4]
      : tensor<3x8xf32> into tensor<3x2x4xf32>
  %k3 = tensor.expand_shape %k [[0], [1, 2]] output_shape [3, 2, 4]
      : tensor<3x8xf32> into tensor<3x2x4xf32>
  %v3 = tensor.expand_shape %v [[0], [1, 2]] output_shape [3, 2, 4]
      : tensor<3x8xf32> into tensor<3x2x4xf32>
  %e_hsd = tensor.empty() : tensor<2x3x4xf32>
  %qt = linalg.transpose ins(%q3 : tensor<3x2x4xf32>)
      outs(%e_hsd : tensor<2x3x4xf32>) permutation = [1, 0, 2]
  %kt = linalg.transpose ins(%k3 : tensor<3x2x4xf32>)
      outs(%e_hsd : tensor<2x3x4xf32>) permutation = [1, 0, 2]
  %vt = linalg.transpose ins(%v3 : tensor<3x2x4xf32>)
      outs(%e_hsd : tensor<2x3x4xf32>) permutation = [1, 0, 2]
  %e_hss = tensor.empty() : tensor<2x3x3xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e_hss : tensor<2x3x3xf32>)
      -> tensor<2x3x3xf32>
  %s = linalg.generic {
      indexing_maps = [affine_map<(h, i, j, d) -> (h, i, d)>,
                       affine_map<(h, i, j, d) -> (h, j, d)>,
                       affine_map<(h, i, j, d) -> (h, i, j)>],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%qt, %kt : tensor<2x3x4xf32>, tensor<2x3x4xf32>)
      outs(%s0 : tensor<2x3x3xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %c, %p : f32
    linalg.yield %r : f32
  } -> tensor<2x3x3xf32>
  %sc = linalg.generic {indexing_maps = [#id3, #id3],
      iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x3x3xf32>) outs(%e_hss : tensor<2x3x3xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %scale : f32
    linalg.yield %r : f32
  } -> tensor<2x3x3xf32>
  %e_hs = tensor.empty() : tensor<2x3xf32>
  %mx0 = linalg.fill ins(%ninf : f32) outs(%e_hs : tensor<2x3xf32>)
      -> tensor<2x3xf32>
  %mx = linalg.generic {indexing_maps = [#id3, #row],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%sc : tensor<2x3x3xf32>) outs(%mx0 : tensor<2x3xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  %ex = linalg.generic {indexing_maps = [#id3, #row, #id3],
      iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%sc, %mx : tensor<2x3x3xf32>, tensor<2x3xf32>)
      outs(%e_hss : tensor<2x3x3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %e = math.exp %d : f32
    linalg.yield %e : f32
  } -> tensor<2x3x3xf32>
  %sm0 = linalg.fill ins(%zero : f32) outs(%e_hs : tensor<2x3xf32>)
      -> tensor<2x3xf32>
  %sm = linalg.generic {indexing_maps = [#id3, #row],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%ex : tensor<2x3x3xf32>) outs(%sm0 : tensor<2x3xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %o, %a : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  %p = linalg.generic {indexing_maps = [#id3, #row, #id3],
      iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ex, %sm : tensor<2x3x3xf32>, tensor<2x3xf32>)
      outs(%e_hss : tensor<2x3x3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x3x3xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%e_hsd : tensor<2x3x4xf32>)
      -> tensor<2x3x4xf32>
  %pv = linalg.batch_matmul ins(%p, %vt : tensor<2x3x3xf32>, tensor<2x3x4xf32>)
      outs(%o0 : tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %e_shd = tensor.empty() : tensor<3x2x4xf32>
  %pvt = linalg.transpose ins(%pv : tensor<2x3x4xf32>)
      outs(%e_shd : tensor<3x2x4xf32>) permutation = [1, 0, 2]
  %attn = tensor.collapse_shape %pvt [[0], [1, 2]]
      : tensor<3x2x4xf32> into tensor<3x8xf32>
  %out = linalg.matmul ins(%attn, %wo : tensor<3x8xf32>, tensor<8x8xf32>)
      outs(%acc : tensor<3x8xf32>) -> tensor<3x8xf32>
  pipe.return %out : tensor<3x8xf32>
}
)mlir";

TEST_F(CostModelTest, AttentionBlock) {
  constexpr uint64_t S = 3, D = 8, H = 2, Dh = 4;
  BlockOp block = parseBlock(kAttention);
  ASSERT_TRUE(block);
  CostOptions options;
  FailureOr<BlockCost> cost = estimateBlockCost(block, options);
  ASSERT_TRUE(succeeded(cost));

  const uint64_t projection = 2 * S * D * D;  // each of q, k, v, o
  const uint64_t scores = 2 * H * S * S * Dh; // Q K^T, and P V
  const uint64_t hss = H * S * S;             // one op per score
  // scale 1 + max 1 + (sub 1 + exp 1) + sum 1 + div 1 per score.
  const uint64_t softmax = hss * (1 + 1 + 2 + 1 + 1);
  EXPECT_EQ(cost->forwardFlops, 4 * projection + 2 * scores + softmax);

  // dWq, dWk, dWv, dWo.
  EXPECT_EQ(cost->backwardWeightFlops, 4 * projection);
  // dx through q, k, v and d(attn) through o; both operands of Q K^T and
  // P V; one pass per differentiable operand of each softmax op (scale 1,
  // max 1, sub+exp 2 operands, sum 1, div 2 operands).
  EXPECT_EQ(cost->backwardInputFlops, 4 * projection + 2 * 2 * scores +
                                          hss * 1 + hss * 1 + 2 * (2 * hss) +
                                          hss * 1 + 2 * hss);

  EXPECT_EQ(cost->paramBytes, 4 * 4 * D * D);
  // Kept for the backward: x; Q^T and K^T (Q K^T); the scaled scores (max
  // and exp); the row max (exp); exp and the row sum (div); P and V^T (P V);
  // the attention output (o projection; the collapse is a view of its
  // transpose). The scale by a constant and the sum need nothing.
  const uint64_t sd = S * D, hsd = H * S * Dh, hs = H * S;
  EXPECT_EQ(cost->savedBytes,
            4 * (sd + hsd + hsd + hss + hs + hss + hs + hss + hsd + hsd));
  EXPECT_EQ(cost->outputBytes, 4 * S * D);

  options.recompute = RecomputePolicy::Recompute;
  FailureOr<BlockCost> recompute = estimateBlockCost(block, options);
  ASSERT_TRUE(succeeded(recompute));
  EXPECT_EQ(recompute->savedBytes, 4 * S * D);
  EXPECT_EQ(recompute->backwardInputFlops,
            cost->backwardInputFlops + cost->forwardFlops);

  // A transcendental charged 10 FLOPs: only the exp changes.
  options.recompute = RecomputePolicy::SaveAll;
  options.transcendentalFlops = 10;
  FailureOr<BlockCost> heavyExp = estimateBlockCost(block, options);
  ASSERT_TRUE(succeeded(heavyExp));
  EXPECT_EQ(heavyExp->forwardFlops, cost->forwardFlops + 9 * hss);
}

// An embedding lookup as torch-mlir writes it: a gather from a captured
// table; its gradient is a scatter-add into the table.
constexpr const char *kEmbedding = R"mlir(
pipe.block @embed params(%wte: tensor<16x8xf32>) (%ids: tensor<4xi64>)
    -> tensor<4x8xf32> {
  %empty = tensor.empty() : tensor<4x8xf32>
  %e = linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<4xi64>) outs(%empty : tensor<4x8xf32>) {
  ^bb0(%id: i64, %o: f32):
    %row = arith.index_cast %id : i64 to index
    %col = linalg.index 1 : index
    %v = tensor.extract %wte[%row, %col] : tensor<16x8xf32>
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  pipe.return %e : tensor<4x8xf32>
}
)mlir";

TEST_F(CostModelTest, EmbeddingGather) {
  BlockOp block = parseBlock(kEmbedding);
  ASSERT_TRUE(block);
  FailureOr<BlockCost> cost = estimateBlockCost(block, CostOptions());
  ASSERT_TRUE(succeeded(cost));
  EXPECT_EQ(cost->forwardFlops, 0u);
  EXPECT_EQ(cost->backwardWeightFlops, uint64_t(4 * 8)); // scatter-add
  EXPECT_EQ(cost->backwardInputFlops, 0u);               // ids are integers
  EXPECT_EQ(cost->paramBytes, uint64_t(4 * 16 * 8));
  EXPECT_EQ(cost->savedBytes, uint64_t(8 * 4)); // the i64 ids
  // ids, then one table row element per output element.
  EXPECT_EQ(cost->bytesRead, uint64_t(8 * 4 + 4 * 4 * 8));
}

TEST_F(CostModelTest, DynamicShapesAreRejected) {
  BlockOp block = parseBlock(R"mlir(
pipe.block @dyn (%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %y = linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<?x8xf32>) outs(%x : tensor<?x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %a : f32
    linalg.yield %r : f32
  } -> tensor<?x8xf32>
  pipe.return %y : tensor<?x8xf32>
}
)mlir");
  ASSERT_TRUE(block);
  std::string message;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    message = diag.str();
    return success();
  });
  EXPECT_TRUE(failed(estimateBlockCost(block, CostOptions())));
  EXPECT_NE(message.find("static shapes"), std::string::npos) << message;
}

TEST(CostModelOptions, PoliciesAndDtypes) {
  EXPECT_EQ(parseRecomputePolicy("save-all"), RecomputePolicy::SaveAll);
  EXPECT_EQ(parseRecomputePolicy("recompute"), RecomputePolicy::Recompute);
  EXPECT_EQ(parseRecomputePolicy("save-inputs"), RecomputePolicy::Recompute);
  EXPECT_FALSE(parseRecomputePolicy("sometimes"));
  EXPECT_EQ(parseFloatBytes("bf16"), 2u);
  EXPECT_EQ(parseFloatBytes("f32"), 4u);
  EXPECT_EQ(parseFloatBytes("native"), 0u);
  EXPECT_FALSE(parseFloatBytes("f12"));
}

TEST(CostModelProfile, ParsesTimes) {
  llvm::Expected<Profile> profile = parseProfile(
      R"({"blocks": {"layer3": {"forward_ms": 1.5, "backward_ms": 3},
                     "head": {"forward_ms": 0.25}}})",
      "p.json");
  ASSERT_TRUE(bool(profile)) << llvm::toString(profile.takeError());
  ASSERT_EQ(profile->blocks.size(), 2u);
  EXPECT_EQ(profile->blocks["layer3"].forwardMs, 1.5);
  EXPECT_EQ(profile->blocks["layer3"].backwardMs, 3.0);
  EXPECT_FALSE(profile->blocks["head"].backwardMs);
}

/// The error message of parsing `json`, or "" if it parsed.
static std::string profileError(StringRef json) {
  llvm::Expected<Profile> profile = parseProfile(json, "bad.json");
  if (profile)
    return "";
  return llvm::toString(profile.takeError());
}

TEST(CostModelProfile, ErrorsNameTheFileAndField) {
  std::string error =
      profileError(R"({"blocks": {"l0": {"forward_ms": "x"}}})");
  EXPECT_NE(error.find("bad.json"), std::string::npos) << error;
  EXPECT_NE(error.find("blocks.l0.forward_ms"), std::string::npos) << error;

  error = profileError(R"({"blocks": {"l0": {"fwd_ms": 1}}})");
  EXPECT_NE(error.find("blocks.l0.fwd_ms"), std::string::npos) << error;

  error = profileError(R"({"blocks": {"l0": {"forward_ms": -1}}})");
  EXPECT_NE(error.find("in [0, 1e9]"), std::string::npos) << error;
  error = profileError(R"({"blocks": {"l0": {"forward_ms": 1e308}}})");
  EXPECT_NE(error.find("in [0, 1e9]"), std::string::npos) << error;

  error = profileError(R"({"block": {}})");
  EXPECT_NE(error.find("'blocks'"), std::string::npos) << error;

  error = profileError(R"({"blocks": {"l0": {}}})");
  EXPECT_NE(error.find("blocks.l0"), std::string::npos) << error;

  error = profileError("{\"blocks\": ");
  EXPECT_NE(error.find("invalid JSON"), std::string::npos) << error;
}

TEST_F(CostModelTest, CostAttrCarriesMeasuredCosts) {
  BlockCost cost;
  cost.forwardFlops = 10;
  cost.outputBytes = 7;
  MeasuredCosts times;
  times.forwardMs = 1.25;
  CostAttr attr = toCostAttr(&context, cost, times);
  EXPECT_EQ(attr.getForwardFlops(), 10u);
  EXPECT_EQ(attr.getOutputBytes(), 7u);
  EXPECT_EQ(attr.getForwardTimeNs(), 1250000u);
  EXPECT_EQ(attr.getBackwardTimeNs(), 0u);
}

} // namespace
