//===- InputUpgradeTest.cpp - Unit tests for the older-syntax rewriter ----===//

#include "pipe/Support/InputUpgrade.h"

#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::pipe;

namespace {

/// The upgraded text, "<unchanged>" when nothing was rewritten, or
/// "<error>" when the scan reported an error.
std::string upgraded(llvm::StringRef text, bool upgrade = true) {
  auto file = llvm::MemoryBuffer::getMemBufferCopy(text, "input.mlir");
  FailureOr<std::unique_ptr<llvm::MemoryBuffer>> result =
      upgradeOlderSyntax(*file, upgrade);
  if (failed(result))
    return "<error>";
  if (!*result)
    return "<unchanged>";
  EXPECT_EQ((*result)->getBufferIdentifier(), "input.mlir");
  return (*result)->getBuffer().str();
}

TEST(InputUpgradeTest, ExpandShapeGetsItsStaticResultShape) {
  EXPECT_EQ(upgraded("  %e = tensor.expand_shape %x [[0, 1], [2]] : "
                     "tensor<6x4xf32> into tensor<2x3x4xf32>\n"),
            "  %e = tensor.expand_shape %x [[0, 1], [2]] output_shape [2, 3, "
            "4] : tensor<6x4xf32> into tensor<2x3x4xf32>\n");
  // Already MLIR 22 syntax.
  EXPECT_EQ(upgraded("%e = tensor.expand_shape %x [[0, 1]] output_shape [2, "
                     "3] : tensor<6xf32> into tensor<2x3xf32>"),
            "<unchanged>");
  // A dynamic result has no output_shape to write; turned off, none is.
  EXPECT_EQ(upgraded("%e = tensor.expand_shape %x [[0, 1]] : tensor<?xf32> "
                     "into tensor<?x3xf32>"),
            "<error>");
  EXPECT_EQ(upgraded("%e = tensor.expand_shape %x [[0, 1]] : tensor<6xf32> "
                     "into tensor<2x3xf32>",
                     /*upgrade=*/false),
            "<error>");
}

TEST(InputUpgradeTest, CommentsStringsAndMetadataAreNotOps) {
  EXPECT_EQ(upgraded("// %e = tensor.expand_shape %x [[0, 1]] : "
                     "tensor<6xf32> into tensor<2x3xf32>\n"
                     "func.func @f() attributes {s = \"tosa.mul %a, %b "
                     "{shift = 0 : i8}\"}\n"
                     "{-#\n  dialect_resources: { builtin: { "
                     "tosa.const: \"0x04000000\" } }\n#-}\n"),
            "<unchanged>");
}

TEST(InputUpgradeTest, TosaAttributesBecomeOperandsOnTheSameLine) {
  EXPECT_EQ(upgraded("  %r = tosa.reshape %x {new_shape = array<i64: 2, 3>} "
                     ": (tensor<6xf32>) -> tensor<2x3xf32>\nnext\n"),
            "  %__pipe_upgrade_0 = \"tosa.const_shape\"() <{values = "
            "dense<[2, 3]> : tensor<2xindex>}> : () -> !tosa.shape<2> %r = "
            "tosa.reshape %x, %__pipe_upgrade_0 : (tensor<6xf32>, "
            "!tosa.shape<2>) -> tensor<2x3xf32>\nnext\n");
  // Other attributes stay.
  EXPECT_EQ(upgraded("%m = tosa.mul %a, %b {shift = 1 : i8, x} : "
                     "(tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>"),
            "%__pipe_upgrade_0 = \"tosa.const\"() <{values = dense<1> : "
            "tensor<1xi8>}> : () -> tensor<1xi8> %m = tosa.mul %a, %b, "
            "%__pipe_upgrade_0 {x} : (tensor<2xi32>, tensor<2xi32>, "
            "tensor<1xi8>) -> tensor<2xi32>");
  EXPECT_EQ(upgraded("%c = \"tosa.const\"() <{value = dense<0> : "
                     "tensor<2xi8>}> : () -> tensor<2xi8>"),
            "%c = \"tosa.const\"() <{values = dense<0> : tensor<2xi8>}> : () "
            "-> tensor<2xi8>");
  // Not alone on its line, only one of slice's two lists, a list that is
  // not integers: reported, not guessed.
  EXPECT_EQ(upgraded("{ %r = tosa.reshape %x {new_shape = array<i64: 6>} : "
                     "(tensor<2x3xf32>) -> tensor<6xf32>"),
            "<error>");
  EXPECT_EQ(upgraded("%s = tosa.slice %x {start = array<i64: 1>} : "
                     "(tensor<4xf32>) -> tensor<2xf32>"),
            "<error>");
  EXPECT_EQ(upgraded("%r = tosa.reshape %x {new_shape = \"6\"} : "
                     "(tensor<2x3xf32>) -> tensor<6xf32>"),
            "<error>");
}

} // namespace
