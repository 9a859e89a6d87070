//===- HostTarget.cpp - JIT and shared-library output for host programs ---===//

#include "pipe/Target/Host/HostTarget.h"
#include "pipe/Conversion/Passes.h"
#include "pipe/Runtime/Program.h"
#include "pipe/Target/Host/HostPipeline.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

#include <type_traits>

using namespace mlir;
using namespace mlir::pipe;

// Provided by the runtime for copies that bufferization inserts.
extern "C" void memrefCopy(int64_t elementSize, void *source,
                           void *destination);

namespace {

void initializeNativeTarget() {
  static bool done = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    return true;
  }();
  (void)done;
}

/// The return type of a runtime entry point.
template <typename R, typename... Args> R returnTypeOf(R (*)(Args...));

// An action that produces a token lowers to a call returning int64_t (the
// token or minus a status), any other to one returning int32_t.
#define PIPE_ACTION(KIND, MNEMONIC, OP, ENTRY, COMPUTE, TOKEN)                 \
  static_assert(std::is_same_v<decltype(returnTypeOf(&pipe_rt_##ENTRY)),       \
                               std::conditional_t<TOKEN, int64_t, int32_t>>,   \
                "Actions.def: pipe_rt_" #ENTRY " returns the wrong type");
#include "pipe/Support/Actions.def"

/// Every runtime function generated code may call, for the JIT.
llvm::orc::SymbolMap runtimeSymbols(llvm::orc::MangleAndInterner interner) {
  llvm::orc::SymbolMap map;
  auto add = [&](const char *name, auto *fn) {
    map[interner(name)] = {
        llvm::orc::ExecutorAddr::fromPtr(reinterpret_cast<void *>(fn)),
        llvm::JITSymbolFlags::Exported};
  };
  // Fails to compile when an action's entry point is not declared in
  // Program.h or Comm.h; actions sharing an entry point add it once more,
  // harmlessly.
#define PIPE_ACTION(KIND, MNEMONIC, OP, ENTRY, COMPUTE, TOKEN)                 \
  add("pipe_rt_" #ENTRY, &pipe_rt_##ENTRY);
#include "pipe/Support/Actions.def"
#define PIPE_RT_COMM_ENTRY(NAME) add(#NAME, &NAME);
  PIPE_RT_COMM_ENTRIES(PIPE_RT_COMM_ENTRY)
#undef PIPE_RT_COMM_ENTRY
  add("pipe_rt_gemm_f32", &pipe_rt_gemm_f32);
  add("_mlir_memref_to_llvm_alloc", &_mlir_memref_to_llvm_alloc);
  add("_mlir_memref_to_llvm_aligned_alloc",
      &_mlir_memref_to_llvm_aligned_alloc);
  add("_mlir_memref_to_llvm_free", &_mlir_memref_to_llvm_free);
  add("memrefCopy", &memrefCopy);
  add("pipe_rt_index_fault", &pipe_rt_index_fault);
  return map;
}

void registerTranslations(ModuleOp module) {
  DialectRegistry registry;
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  // CUDA-lowered programs embed their cubin through the GPU dialect.
  registerAllGPUToLLVMIRTranslations(registry);
  module->getContext()->appendDialectRegistry(registry);
}

} // namespace

LogicalResult pipe::lowerToHostLLVM(ModuleOp module,
                                    uint64_t deviceMemoryBytes) {
  PassManager pm(module->getContext());
  PipeLowerToHostOptions options;
  options.deviceMemoryBytes = deviceMemoryBytes;
  pm.addPass(createPipeLowerToHost(options));
  buildHostToLLVMPipeline(pm);
  return pm.run(module);
}

HostJIT::~HostJIT() = default;

llvm::Expected<std::unique_ptr<HostJIT>> HostJIT::create(ModuleOp module,
                                                         unsigned optLevel) {
  initializeNativeTarget();
  registerTranslations(module);
  // The optimiser needs this machine's target so that the loop and SLP
  // vectorisers see its vector registers and costs; without one they see a
  // target with no vector unit and leave the scalar loop nests scalar.
  llvm::Expected<llvm::orc::JITTargetMachineBuilder> builder =
      llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder)
    return builder.takeError();
  builder->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  llvm::Expected<std::unique_ptr<llvm::TargetMachine>> machine =
      builder->createTargetMachine();
  if (!machine)
    return machine.takeError();
  auto transformer =
      makeOptimizingTransformer(optLevel, /*sizeLevel=*/0, machine->get());
  ExecutionEngineOptions options;
  options.transformer = transformer;
  options.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Aggressive;
  auto engine = ExecutionEngine::create(module, options);
  if (!engine)
    return engine.takeError();
  (*engine)->registerSymbols(runtimeSymbols);
  std::unique_ptr<HostJIT> jit(new HostJIT);
  jit->engine = std::move(*engine);
  return jit;
}

void *HostJIT::lookup(StringRef name) const {
  llvm::Expected<void *> address = engine->lookup(name);
  if (!address) {
    llvm::consumeError(address.takeError());
    return nullptr;
  }
  return *address;
}

void *HostJIT::lookupCallback(void *userData, const char *name) {
  return static_cast<HostJIT *>(userData)->lookup(name);
}

/// Optimises and emits `module` as a PIC object file for this machine at
/// `objectPath`.
static llvm::Error emitObject(ModuleOp module, StringRef objectPath,
                              unsigned optLevel) {
  initializeNativeTarget();
  registerTranslations(module);
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, context);
  if (!llvmModule)
    return llvm::createStringError("cannot translate the module to LLVM IR");

  llvm::Triple triple(llvm::sys::getProcessTriple());
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return llvm::createStringError("no target for " + triple.str() + ": " +
                                   error);
  llvm::TargetOptions targetOptions;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, llvm::sys::getHostCPUName(), "", targetOptions, llvm::Reloc::PIC_,
      std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  llvmModule->setDataLayout(machine->createDataLayout());
  llvmModule->setTargetTriple(triple);
  auto transformer =
      makeOptimizingTransformer(optLevel, /*sizeLevel=*/0, machine.get());
  if (llvm::Error err = transformer(llvmModule.get()))
    return err;

  std::error_code ec;
  llvm::raw_fd_ostream os(objectPath, ec, llvm::sys::fs::OF_None);
  if (ec)
    return llvm::createStringError(ec, "cannot write " + objectPath);
  llvm::legacy::PassManager codegen;
  if (machine->addPassesToEmitFile(codegen, os, nullptr,
                                   llvm::CodeGenFileType::ObjectFile))
    return llvm::createStringError("the target cannot emit object files");
  codegen.run(*llvmModule);
  // A full disk must be this function's error, not a fatal "IO failure"
  // from the stream's destructor.
  os.close();
  if (std::error_code error = os.error()) {
    os.clear_error();
    return llvm::createStringError(error, "cannot write " + objectPath + ": " +
                                              error.message());
  }
  return llvm::Error::success();
}

llvm::Error pipe::writeObjectFile(ModuleOp module, StringRef path,
                                  unsigned optLevel) {
  llvm::SmallString<128> temporary(path);
  temporary += ".tmp";
  llvm::FileRemover removeTemporary(temporary);
  if (llvm::Error err = emitObject(module, temporary, optLevel))
    return err;
  if (std::error_code ec = llvm::sys::fs::rename(temporary, path))
    return llvm::createStringError(ec, "cannot write " + path);
  removeTemporary.releaseFile();
  return llvm::Error::success();
}

llvm::Error pipe::writeSharedLibrary(ModuleOp module, StringRef path,
                                     unsigned optLevel) {
  // object file, then `cc -shared`, then rename: a failure at any point
  // leaves no partial library at `path`.
  llvm::SmallString<128> objectPath, libraryPath;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("pipe-program", "o", objectPath))
    return llvm::createStringError(ec, "cannot create a temporary file");
  llvm::FileRemover removeObject(objectPath);
  if (llvm::Error err = emitObject(module, objectPath, optLevel))
    return err;
  libraryPath = path;
  libraryPath += ".tmp";
  llvm::FileRemover removeLibrary(libraryPath);
  llvm::ErrorOr<std::string> linker = llvm::sys::findProgramByName("cc");
  if (!linker)
    return llvm::createStringError(
        "no C compiler driver `cc` on PATH to link " + path);
  // Runtime symbols stay undefined: the runner that loads the library
  // exports them. libm for the math the blocks call.
  StringRef args[] = {*linker, "-shared", "-o", libraryPath, objectPath, "-lm"};
  std::string message;
  if (int rc = llvm::sys::ExecuteAndWait(*linker, args, std::nullopt, {}, 0, 0,
                                         &message))
    return llvm::createStringError("linking " + path + " failed (exit " +
                                   std::to_string(rc) + ") " + message);
  if (std::error_code ec = llvm::sys::fs::rename(libraryPath, path))
    return llvm::createStringError(ec, "cannot write " + path);
  removeLibrary.releaseFile();
  return llvm::Error::success();
}
