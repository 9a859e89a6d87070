//===- InputGuardTest.cpp - Unit tests for reading untrusted IR -----------===//

#include "pipe/Support/InputGuard.h"

#include "mlir/IR/DialectRegistry.h"
#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>

using namespace mlir;
using namespace mlir::pipe;

namespace {

std::unique_ptr<llvm::MemoryBuffer> buffer(llvm::StringRef text) {
  return llvm::MemoryBuffer::getMemBufferCopy(text, "input.mlir");
}

TEST(InputGuardTest, ContainedRunReportsHowTheChildEnded) {
  ContainedRun fine = runContained([] {});
  EXPECT_TRUE(fine.started);
  EXPECT_TRUE(fine.ok);

  ContainedRun crash = runContained([] { std::raise(SIGSEGV); });
  EXPECT_TRUE(crash.started);
  EXPECT_FALSE(crash.ok);
  EXPECT_NE(crash.error.find("crashed"), std::string::npos) << crash.error;

  ContainedRun exited = runContained([] { std::_Exit(3); });
  EXPECT_FALSE(exited.ok);
  EXPECT_EQ(exited.error, "exited with status 3");
}

TEST(InputGuardTest, ContainedRunCatchesHeapCorruptionThatDidNotCrash) {
  // A block freed twice, as a buggy error path may do: glibc's checks abort
  // the child, never the caller.
  ContainedRun corrupt = runContained([] {
    void *volatile block = std::malloc(24);
    std::free(block);
    std::free(block);
  });
  EXPECT_TRUE(corrupt.started);
  EXPECT_FALSE(corrupt.ok);
}

TEST(InputGuardTest, ContainedRunKeepsWhatTheChildPrinted) {
  ContainedRun run = runContained([] {
    std::fputs("LLVM ERROR: out of memory\n", stderr);
    std::abort();
  });
  EXPECT_FALSE(run.ok);
  EXPECT_NE(run.output.find("LLVM ERROR: out of memory"), std::string::npos);
}

TEST(InputGuardTest, ProbeParseAcceptsValidAndInvalidInput) {
  DialectRegistry registry;
  // Invalid input is for the caller's own parse to report.
  EXPECT_TRUE(succeeded(probeParse(*buffer("module {}"), registry)));
  EXPECT_TRUE(succeeded(probeParse(*buffer("module { %x = }"), registry)));
  EXPECT_TRUE(succeeded(
      probeParse(*buffer("module {}\n// -----\nmodule {}"), registry,
                 "// -----")));
}

TEST(InputGuardTest, RejectsStringsOpenAtTheEndOfTheFile) {
  InputLimits limits;
  EXPECT_TRUE(succeeded(checkInputText(*buffer("\"a\\\"b\""), limits)));
  EXPECT_TRUE(failed(checkInputText(*buffer("x = \"0x0400"), limits)));
  EXPECT_TRUE(failed(checkInputText(*buffer("x = \"ab\\\""), limits)));
  // Quotes in comments are no strings.
  EXPECT_TRUE(succeeded(checkInputText(*buffer("// it's \"\nx"), limits)));
}

TEST(InputGuardTest, ChecksResourceBlobAlignment) {
  InputLimits limits;
  auto blob = [](llvm::StringRef hex) {
    return ("{-#\n dialect_resources: { builtin: { b: \"0x" + hex +
            "0000803F\" } }\n#-}\n")
        .str();
  };
  EXPECT_TRUE(succeeded(checkInputText(*buffer(blob("04000000")), limits)));
  EXPECT_TRUE(succeeded(checkInputText(*buffer(blob("00000100")), limits)));
  EXPECT_TRUE(failed(checkInputText(*buffer(blob("00000000")), limits)));
  EXPECT_TRUE(failed(checkInputText(*buffer(blob("03000000")), limits)));
  EXPECT_TRUE(failed(checkInputText(*buffer(blob("00000200")), limits)));
  // Hex strings outside the metadata section are ordinary strings.
  EXPECT_TRUE(succeeded(
      checkInputText(*buffer("x = \"0x00000000\"\n"), limits)));
}

TEST(InputGuardTest, RefusesBytecodeAndNulBytes) {
  InputLimits limits;
  EXPECT_TRUE(failed(checkInputText(*buffer("ML\xefR rest"), limits)));
  limits.allowBytecode = true;
  EXPECT_TRUE(succeeded(checkInputText(*buffer("ML\xefR rest"), limits)));
  EXPECT_TRUE(failed(
      checkInputText(*buffer(llvm::StringRef("mod\0ule", 7)), limits)));
}

} // namespace
