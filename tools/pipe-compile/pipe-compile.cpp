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

#include "pipe/Conversion/Passes.h"
#include "pipe/Support/InputGuard.h"
#include "pipe/Support/OutputFile.h"
#include "pipe/Target/Host/HostPipeline.h"
#include "pipe/Target/Host/HostTarget.h"
#include "pipe/Tools/FrontEnd.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
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
static cl::opt<bool>
    vectorize("vectorize",
              cl::desc("Vectorise the non-GEMM rows (pipe-linalg-to-vector); "
                       "--vectorize=false leaves them to scalar loops"),
              cl::init(true), cl::cat(compileCat));

static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "pipe-compile") << message << "\n";
  return 1;
}

static int compile(const pipe::InputLimits &limits) {
  if (optLevel > 3)
    return fail("-O " + llvm::Twine(optLevel) +
                ": an LLVM optimisation level is 0, 1, 2 or 3");
  // Every output is checked before the minutes of work that produce it.
  for (const std::string *path : {&outputFile, &weightsFile, &emitLLVM})
    if (!path->empty())
      if (llvm::Error error = pipe::checkOutputPath(*path))
        return fail(llvm::toString(std::move(error)));
  // Each output its own file, and none the input: the later write would
  // replace the earlier one, or the model.
  const std::pair<const char *, const std::string *> files[] = {
      {"the input", &inputFile.getValue()},
      {"-o", &outputFile.getValue()},
      {"--weights", &weightsFile.getValue()},
      {"--emit-mlir", &emitLLVM.getValue()}};
  for (size_t i = 1; i < std::size(files); ++i)
    for (size_t j = 0; j < i; ++j)
      if (!files[i].second->empty() && !files[j].second->empty() &&
          pipe::isSameFile(*files[i].second, *files[j].second))
        return fail(llvm::Twine(files[i].first) + " '" + *files[i].second +
                    "' is also " + (j ? "the " : "") + files[j].first +
                    (j ? " file" : "") + ": each needs its own path");

  std::unique_ptr<MLIRContext> context = pipe::createCompilerContext();
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, context.get());
  OwningOpRef<ModuleOp> module =
      pipe::parseUntrustedFile(inputFile, *context, sourceMgr, limits);
  if (!module)
    return 1;

  PassManager pm(context.get());
  pipe::PipeLowerToHostOptions options;
  options.deviceMemoryBytes = deviceMemory;
  options.weights = weightsFile;
  pm.addPass(pipe::createPipeLowerToHost(options));
  pipe::buildHostToLLVMPipeline(pm, {fuseElementwise, vectorize});
  if (failed(pm.run(*module)))
    return 1;
  if (!emitLLVM.empty())
    if (llvm::Error error = pipe::writeOutputFile(
            emitLLVM, [&](raw_ostream &os) { module->print(os); }))
      return fail(llvm::toString(std::move(error)));
  if (llvm::Error err = pipe::writeSharedLibrary(*module, outputFile, optLevel))
    return fail(llvm::toString(std::move(err)));
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  pipe::registerCompilerPasses();
  const pipe::InputLimits &limits =
      pipe::registerInputLimitOptions(&compileCat);
  cl::HideUnrelatedOptions(compileCat);
  cl::ParseCommandLineOptions(argc, argv,
                              "pipe-compile: scheduled pipe IR "
                              "to a runtime artifact\n");
  int rc = 1;
  pipe::runWithLargeStack([&] { rc = compile(limits); });
  return rc;
}
