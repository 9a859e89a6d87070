//===- pipe-opt.cpp - The pipe-mlir optimizer driver ----------------------===//
//
// mlir-opt with the pipe dialect and its passes, and every upstream dialect,
// extension, pass and GPU-to-LLVM-IR translation (gpu-module-to-binary needs
// the latter inside the tool that runs it).
//
// Hostile input must end in a diagnostic, never in a crash. The MLIR parser,
// printer and several analyses recurse once per level of nesting, so
// pipe-opt (1) rejects input nested deeper than --pipe-max-nesting (see
// InputNesting.h for what counts as a level), or whose aliases expand to
// more than --pipe-max-expansion bytes, with a file:line:col error before
// parsing, and (2) does all the work on a thread with a large stack (and
// gives MLIR's worker threads large stacks too), so that everything within
// the limits fits whatever `ulimit -s` says. NUL bytes are rejected too:
// MLIR's lexer would skip them silently.
//
//===----------------------------------------------------------------------===//

#include "InputNesting.h"

#include "pipe/Dialect/Pipe/IR/Pipe.h"
#include "pipe/Dialect/Pipe/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/thread.h"

#include <cstdio>
#if defined(__GLIBC__)
#include <pthread.h>
#endif

using namespace mlir;

/// Deepest nesting accepted. Real IR nests a few dozen levels. The worst
/// construct measured (nested ops with regions) needs about 2.2 KB of stack
/// per level when parsed and printed, so even 4096 levels (~9 MB) fit in
/// kStackBytes many times over; 1024 also keeps the quadratic corners of
/// deep nesting (printing, round-trip checks) well under a second.
static llvm::cl::opt<unsigned> maxNesting(
    "pipe-max-nesting",
    llvm::cl::desc("Reject input whose brackets, affine expressions and "
                   "alias chains nest deeper than this before parsing it "
                   "(0: no limit; deep input can then exhaust the stack)"),
    llvm::cl::init(1024));

/// Largest growth accepted from replacing every alias use by its value, which
/// is what the printer writes. Inline data (weights) does not count.
static llvm::cl::opt<uint64_t> maxExpansion(
    "pipe-max-expansion",
    llvm::cl::desc(
        "Reject input whose alias uses expand to more than this "
        "many bytes before parsing it (0: no limit; a chain of aliases "
        "that each use the previous one twice can then take "
        "forever to print)"),
    llvm::cl::init(uint64_t(1) << 30));

static llvm::cl::opt<bool> allowBytecode(
    "pipe-allow-bytecode",
    llvm::cl::desc("Read MLIR bytecode input (MLIR's bytecode reader does "
                   "not survive damaged files; only use trusted ones)"),
    llvm::cl::init(false));

/// Stack of the thread that parses, runs passes and prints. Only the pages
/// actually used are committed.
static constexpr unsigned kStackBytes = 256u << 20;

/// Default stack of every other thread, in particular MLIR's thread pool,
/// which verifies and transforms functions in parallel: deep nesting within
/// the limit must not depend on `ulimit -s` there either.
static constexpr size_t kWorkerStackBytes = size_t(64) << 20;

static void raiseDefaultThreadStack() {
#if defined(__GLIBC__)
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0)
    return;
  if (pthread_attr_setstacksize(&attr, kWorkerStackBytes) == 0)
    (void)pthread_setattr_default_np(&attr);
  pthread_attr_destroy(&attr);
#endif
}

/// Prints `file:line:col: error: message` for byte `offset` of `file`, in
/// the format of MLIR's own diagnostics, and fails. The source line is not
/// quoted: it may be megabytes long.
static LogicalResult reportAt(std::unique_ptr<llvm::MemoryBuffer> file,
                              size_t offset, const llvm::Twine &message) {
  llvm::SourceMgr sourceMgr;
  const char *at = file->getBufferStart() + offset;
  std::string name = file->getBufferIdentifier().str();
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  auto [line, column] =
      sourceMgr.getLineAndColumn(llvm::SMLoc::getFromPointer(at));
  llvm::errs() << name << ':' << line << ':' << column << ": error: " << message
               << "\n";
  return failure();
}

/// The part of MlirOptMain after option parsing, with the nesting check
/// between reading the input and parsing it.
static LogicalResult runTool(StringRef inputFilename, StringRef outputFilename,
                             DialectRegistry &registry,
                             const MlirOptMainConfig &config) {
  if (inputFilename == "-" &&
      llvm::sys::Process::FileDescriptorIsDisplayed(fileno(stdin)))
    llvm::errs() << "(processing input from stdin now, hit ctrl-c/ctrl-d to "
                    "interrupt)\n";

  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> file =
      openInputFile(inputFilename, &errorMessage);
  if (!file) {
    llvm::errs() << errorMessage << "\n";
    return failure();
  }

  // MLIR's bytecode reader trusts its input: a file with a few flipped
  // bytes corrupted the heap in testing. Textual IR is this project's
  // interchange format; bytecode is read only on request.
  StringRef text = file->getBuffer();
  bool isBytecode = text.starts_with("ML\xefR");
  if (isBytecode && !allowBytecode)
    return reportAt(std::move(file), 0,
                    "input is MLIR bytecode, which pipe-opt reads only with "
                    "--pipe-allow-bytecode (MLIR's bytecode reader is not "
                    "safe on damaged files); use textual IR");

  // The MLIR lexer skips NUL bytes silently, so a file with binary junk
  // after a NUL could "parse"; text input never contains one.
  size_t nul = isBytecode ? StringRef::npos : text.find('\0');
  if (nul != StringRef::npos)
    return reportAt(std::move(file), nul,
                    "input contains a NUL byte; MLIR text never does (is "
                    "this a binary file?)");

  if (!isBytecode && (maxNesting != 0 || maxExpansion != 0)) {
    pipe::NestingEstimate estimate =
        pipe::estimateNesting(text, maxNesting, maxExpansion);
    if (maxNesting != 0 && estimate.depth > maxNesting)
      return reportAt(
          std::move(file), estimate.offset,
          "input nests more than " + llvm::Twine(maxNesting.getValue()) +
              " levels deep here (brackets, affine operators and alias "
              "chains count); pipe-opt rejects it before parsing to avoid "
              "exhausting the stack (see --pipe-max-nesting)");
    if (maxExpansion != 0 && estimate.expandedBytes > maxExpansion)
      return reportAt(
          std::move(file), estimate.expansionOffset,
          "alias uses up to here expand to more than " +
              llvm::Twine(maxExpansion.getValue()) +
              " bytes when printed; pipe-opt rejects the input before "
              "parsing (see --pipe-max-expansion)");
  }

  auto output = openOutputFile(outputFilename, &errorMessage);
  if (!output) {
    llvm::errs() << errorMessage << "\n";
    return failure();
  }
  if (failed(MlirOptMain(output->os(), std::move(file), registry, config)))
    return failure();
  output->keep();
  return success();
}

int main(int argc, char **argv) {
  raiseDefaultThreadStack();
  registerAllPasses();
  pipe::registerPipePasses();
  pipe::registerPipePipelines();

  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllGPUToLLVMIRTranslations(registry);
  registry.insert<pipe::PipeDialect>();

  auto [inputFilename, outputFilename] = registerAndParseCLIOptions(
      argc, argv, "pipe-mlir optimizer driver\n", registry);
  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();
  // Listing dialects or passes reads no input: let MlirOptMain do it.
  if (config.shouldShowDialects() || config.shouldListPasses())
    return asMainReturnCode(
        MlirOptMain(argc, argv, inputFilename, outputFilename, registry));

  llvm::InitLLVM initLLVM(argc, argv);
  LogicalResult result = failure();
  llvm::thread worker(std::optional<unsigned>(kStackBytes), [&] {
    result = runTool(inputFilename, outputFilename, registry, config);
  });
  worker.join();
  return asMainReturnCode(result);
}
