//===- pipe-opt.cpp - The pipe-mlir optimizer driver ----------------------===//
//
// mlir-opt with the pipe dialect and its passes, and every upstream dialect,
// extension, pass and GPU-to-LLVM-IR translation (gpu-module-to-binary needs
// the latter inside the tool that runs it).
//
//===----------------------------------------------------------------------===//

#include "pipe/Dialect/Pipe/IR/Pipe.h"
#include "pipe/Dialect/Pipe/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::pipe::registerPipePasses();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllGPUToLLVMIRTranslations(registry);
  registry.insert<mlir::pipe::PipeDialect>();

  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "pipe-mlir optimizer driver\n", registry));
}
