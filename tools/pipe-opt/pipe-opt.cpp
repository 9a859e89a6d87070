//===- pipe-opt.cpp - The pipe-mlir optimizer driver ----------------------===//
//
// mlir-opt with the pipe dialect and its passes, and every upstream dialect,
// extension, pass and GPU-to-LLVM-IR translation (gpu-module-to-binary needs
// the latter inside the tool that runs it).
//
// Hostile input must end in a diagnostic, never in a crash: the input is
// read through pipe/Support/InputGuard.h (pre-parse checks, then a parse in
// a forked child that contains MLIR's own parser bugs), and all the work
// runs on a thread with a large stack, so that everything within the
// nesting limit fits whatever `ulimit -s` says.
//
//===----------------------------------------------------------------------===//

#include "pipe/Pipelines/Pipelines.h"
#include "pipe/Support/InputGuard.h"
#include "pipe/Support/OutputFile.h"
#include "pipe/Target/Host/HostPipeline.h"
#include "pipe/Tools/FrontEnd.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SourceMgr.h"

#include <cstdio>

using namespace mlir;

/// The part of MlirOptMain after option parsing, with the input guards
/// between reading the input and parsing it.
static LogicalResult runTool(StringRef inputFilename, StringRef outputFilename,
                             DialectRegistry &registry,
                             const MlirOptMainConfig &config,
                             const pipe::InputLimits &limits) {
  if (inputFilename == "-" &&
      llvm::sys::Process::FileDescriptorIsDisplayed(fileno(stdin)))
    llvm::errs() << "(processing input from stdin now, hit ctrl-c/ctrl-d to "
                    "interrupt)\n";

  std::unique_ptr<llvm::MemoryBuffer> file = pipe::readUntrustedFile(
      inputFilename, registry, limits, config.inputSplitMarker());
  if (!file)
    return failure();

  // The output replaces its file only once it is whole: `-o` naming the
  // input (an in-place edit) keeps the input until the new text is written,
  // and a failing pass or a full disk leaves the old file as it was.
  bool bytecode = pipe::isBytecode(*file);
  pipe::setInputIRPath(inputFilename);
  bool passesFailed = false;
  llvm::Error error = pipe::writeFallibleOutputFile(
      outputFilename, [&](raw_ostream &os) -> llvm::Error {
        if (succeeded(MlirOptMain(os, std::move(file), registry, config)))
          return llvm::Error::success();
        passesFailed = true;
        return llvm::createStringError("the passes failed");
      });
  if (passesFailed) {
    llvm::consumeError(std::move(error));
    if (bytecode)
      pipe::noteBytecodeFailure(inputFilename);
    return failure();
  }
  if (error) {
    llvm::errs() << "error: " << llvm::toString(std::move(error)) << "\n";
    return failure();
  }
  return success();
}

int main(int argc, char **argv) {
  pipe::registerCompilerPasses();
  pipe::registerPipePipelines();
  pipe::registerCompilePipelines();

  DialectRegistry registry;
  pipe::registerCompilerDialects(registry);
  registerAllGPUToLLVMIRTranslations(registry);

  const pipe::InputLimits &limits = pipe::registerInputLimitOptions();
  auto [inputFilename, outputFilename] = registerAndParseCLIOptions(
      argc, argv, "pipe-mlir optimizer driver\n", registry);
  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();
  // Listing dialects or passes reads no input: let MlirOptMain do it.
  if (config.shouldShowDialects() || config.shouldListPasses())
    return asMainReturnCode(
        MlirOptMain(argc, argv, inputFilename, outputFilename, registry));

  llvm::InitLLVM initLLVM(argc, argv);
  LogicalResult result = failure();
  pipe::runWithLargeStack([&] {
    result = runTool(inputFilename, outputFilename, registry, config, limits);
  });
  return asMainReturnCode(result);
}
