//===- InputNestingTest.cpp - Unit tests for the input nesting check ------===//

#include "pipe/Support/InputNesting.h"

#include <gtest/gtest.h>

#include <string>

using namespace mlir::pipe;

namespace {

std::string repeat(const std::string &text, unsigned times) {
  std::string result;
  for (unsigned i = 0; i < times; ++i)
    result += text;
  return result;
}

TEST(InputNestingTest, CountsEveryKindOfBracket) {
  EXPECT_EQ(estimateNesting("").depth, 0u);
  EXPECT_EQ(estimateNesting("pipe.param @w : tensor<4xf32>").depth, 1u);
  EXPECT_EQ(estimateNesting("{a = [[(1)]]}").depth, 4u);
  EXPECT_EQ(estimateNesting("tuple<tuple<i32>>").depth, 2u);
  // `{-#` opens and `#-}` closes the file metadata.
  EXPECT_EQ(estimateNesting("{-# a: {b: \"0x00\"} #-} [1]").depth, 2u);
}

TEST(InputNestingTest, ReportsWhereTheLimitIsPassed) {
  std::string text = "x = " + repeat("[", 10) + repeat("]", 10);
  NestingEstimate all = estimateNesting(text);
  EXPECT_EQ(all.depth, 10u);
  EXPECT_EQ(all.offset, 4u + 9u);
  NestingEstimate limited = estimateNesting(text, 5);
  EXPECT_EQ(limited.depth, 6u);
  EXPECT_EQ(limited.offset, 4u + 5u);
}

TEST(InputNestingTest, SkipsStringsAndComments) {
  EXPECT_EQ(estimateNesting("\"((((\" // [[[[\n").depth, 0u);
  EXPECT_EQ(estimateNesting("\"a\\\"((\" (").depth, 1u);
  // An unterminated string ends at the newline, as in MLIR's lexer.
  EXPECT_EQ(estimateNesting("\"abc\n((").depth, 2u);
}

TEST(InputNestingTest, ArrowsAndStrayClosersDoNotHideNesting) {
  // `->` closes nothing.
  EXPECT_EQ(estimateNesting("<<() -> i32, <").depth, 3u);
  // The `>` of `>=` inside parentheses does not close the enclosing `<`.
  std::string set = "affine_set<(d0) : (d0 >= 0, d0 >= 1, d0 >= 2)>";
  EXPECT_EQ(estimateNesting(repeat("tuple<", 3) + set + " [[[").depth, 6u);
  // Stray closers at top level are ignored, never negative.
  EXPECT_EQ(estimateNesting(")))]]]}}}>>> [").depth, 1u);
}

TEST(InputNestingTest, CountsAffineOperatorChains) {
  // Unary minus and long operator chains build trees as deep as the chain.
  EXPECT_EQ(estimateNesting("(" + repeat("- ", 50) + "d0)").depth, 51u);
  EXPECT_EQ(estimateNesting("(d0" + repeat(" floordiv 2 + d1", 20) + ")").depth,
            41u);
  // Separators end an expression: a long list of negative numbers is flat.
  EXPECT_EQ(estimateNesting("[" + repeat("-1, ", 1000) + "-1]").depth, 2u);
  // Number tokens, including exponents, are not operators.
  EXPECT_EQ(estimateNesting("[1.0e-05, 2.5E+3, 4x4xf32]").depth, 1u);
  // SSA names may sit inside affine expressions (affine.load indices).
  EXPECT_EQ(estimateNesting("%A[" + repeat("%i - ", 30) + "%i]").depth, 31u);
}

TEST(InputNestingTest, AliasChainsCountTheDepthOfTheirValue) {
  std::string text = "#a0 = [1]\n";
  for (int i = 1; i < 100; ++i)
    text += "#a" + std::to_string(i) + " = [#a" + std::to_string(i - 1) + "]\n";
  EXPECT_EQ(estimateNesting(text).depth, 100u);
  // Using the deepest alias inside two brackets adds them.
  EXPECT_EQ(estimateNesting(text + "x = {a = [#a99]}").depth, 102u);
  // Type aliases work the same way.
  EXPECT_EQ(estimateNesting("!t0 = tuple<i32>\n!t1 = tuple<!t0, !t0>\n"
                            "!t2 = tuple<!t1>\nx : !t2")
                .depth,
            3u);
  // A top-level `!t = ...` that is really an op's type and initializer can
  // only raise the recorded depth of `!t`.
  EXPECT_EQ(estimateNesting("!t = tuple<tuple<i32>>\n"
                            "pipe.param @w : !t = dense<0>\n[!t]")
                .depth,
            3u);
}

TEST(InputNestingTest, AddsUpWhatAliasUsesExpandTo) {
  // Without aliases nothing expands, however large the text.
  EXPECT_EQ(estimateNesting("[1, 2]").expandedBytes, 0u);
  // `#a` stands for ` [1, 2]` (7 bytes), so each use adds 5.
  EXPECT_EQ(estimateNesting("#a = [1, 2]\nx = [#a, #a]").expandedBytes, 10u);
  // So does a use that looks like a definition (`: !t = dense<0>`).
  EXPECT_EQ(estimateNesting("!t = tuple<i32>\nw : !t = dense<0>").expandedBytes,
            11u - 2u);
  // Doubling chains grow exponentially; 70 levels saturate 64 bits.
  std::string text = "#a0 = [1]\n";
  for (int i = 1; i < 70; ++i)
    text += "#a" + std::to_string(i) + " = [#a" + std::to_string(i - 1) +
            ", #a" + std::to_string(i - 1) + "]\n";
  std::string use = "x = #a69";
  EXPECT_EQ(estimateNesting(text + use).expandedBytes, UINT64_MAX);
  NestingEstimate limited = estimateNesting(text + use, 0, 1u << 20);
  EXPECT_GT(limited.expandedBytes, uint64_t(1) << 20);
  EXPECT_EQ(limited.expansionOffset, text.size() + 4);
  // Definitions alone expand nothing.
  EXPECT_EQ(estimateNesting(text).expandedBytes, 0u);
  // Locations and affine maps stay aliases when printed.
  std::string locs = "#l0 = loc(\"a\":1:2)\n";
  for (int i = 1; i < 70; ++i)
    locs += "#l" + std::to_string(i) + " = loc(callsite(#l" +
            std::to_string(i - 1) + " at #l" + std::to_string(i - 1) + "))\n";
  EXPECT_EQ(estimateNesting(locs + "x loc(#l69)").expandedBytes, 0u);
}

TEST(InputNestingTest, LinearOnLargeInput) {
  // 10 MB of flat input scans quickly and stays flat.
  std::string text = repeat("pipe.forward @s0 mb 0\n", 500000);
  EXPECT_EQ(estimateNesting(text).depth, 0u);
  std::string deep = repeat("[", 1000000);
  EXPECT_EQ(estimateNesting(deep, 1024).depth, 1025u);
}

} // namespace
