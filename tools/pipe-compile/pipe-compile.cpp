//===- pipe-compile.cpp - Scheduled pipe IR to a runnable artifact --------===//
//
// The compile half of the compiler/runtime split:
//
//   pipe-compile scheduled.mlir -o model.so --weights model.safetensors
//
// writes a shared library exporting the program (include/pipe/Runtime/
// Program.h) and the parameters' initial values; `pipe-runner`, which links
// only the runtime, runs them. See docs/host-lowering.md.
//
//===----------------------------------------------------------------------===//

#include "pipe/Dialect/Pipe/IR/Pipe.h"
#include "pipe/Dialect/Pipe/Transforms/Passes.h"
#include "pipe/Target/Host/HostTarget.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory compileCat("pipe-compile options");
static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<input.mlir>"),
                                      cl::Required, cl::cat(compileCat));
static cl::opt<std::string> outputFile("o", cl::desc("Shared library to write"),
                                       cl::value_desc("file"), cl::Required,
                                       cl::cat(compileCat));
static cl::opt<std::string>
    weightsFile("weights",
                cl::desc("Write the parameters' initial values here "
                         "(safetensors); required by pipe-runner"),
                cl::value_desc("file"), cl::cat(compileCat));
static cl::opt<uint64_t>
    deviceMemory("device-memory-bytes",
                 cl::desc("Arena capacity of each device (0 = unlimited)"),
                 cl::init(0), cl::cat(compileCat));
static cl::opt<std::string>
    emitLLVM("emit-mlir",
             cl::desc("Also write the LLVM-dialect module to this file"),
             cl::value_desc("file"), cl::cat(compileCat));
static cl::opt<unsigned> optLevel("O", cl::desc("LLVM optimisation level"),
                                  cl::init(3), cl::cat(compileCat));
static cl::opt<bool> fuseElementwise(
    "fuse-elementwise",
    cl::desc("Fuse elementwise ops in the block functions as the CUDA back "
             "end does (pipe-fuse-elementwise; same results)"),
    cl::init(false), cl::cat(compileCat));

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  registerAllPasses();
  pipe::registerPipePasses();
  cl::HideUnrelatedOptions(compileCat);
  cl::ParseCommandLineOptions(argc, argv,
                              "pipe-compile: scheduled pipe IR "
                              "to a runtime artifact\n");
  auto fail = [](const llvm::Twine &message) {
    llvm::WithColor::error(llvm::errs(), "pipe-compile") << message << "\n";
    return 1;
  };

  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registry.insert<pipe::PipeDialect>();
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // A diagnostic on the module would otherwise print the whole program.
  context.printOpOnDiagnostic(false);

  std::string errorMessage;
  auto input = openInputFile(inputFile, &errorMessage);
  if (!input)
    return fail(errorMessage);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return 1;

  PassManager pm(&context);
  pipe::PipeLowerToHostOptions options;
  options.deviceMemoryBytes = deviceMemory;
  options.weights = weightsFile;
  pm.addPass(pipe::createPipeLowerToHost(options));
  pipe::buildHostToLLVMPipeline(pm, fuseElementwise);
  if (failed(pm.run(*module)))
    return 1;
  if (!emitLLVM.empty()) {
    auto out = openOutputFile(emitLLVM, &errorMessage);
    if (!out)
      return fail(errorMessage);
    module->print(out->os());
    out->keep();
  }
  if (llvm::Error err = pipe::writeSharedLibrary(*module, outputFile, optLevel))
    return fail(llvm::toString(std::move(err)));
  return 0;
}
