//===- MergeGpuModules.cpp - All outlined kernels in one gpu.module -------===//
//
// gpu-kernel-outlining puts every kernel in its own gpu.module, and
// gpu-module-to-binary runs the NVPTX back end and ptxas once per module: a
// block function of a transformer layer has dozens of kernels, a program a
// few hundred, so compile time would be dominated by process start-up. One
// module per program also means one cuModuleLoadData at load time.
//
//===----------------------------------------------------------------------===//

#include "pipe/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::pipe {
#define GEN_PASS_DEF_PIPEMERGEGPUMODULES
#include "pipe/Conversion/Passes.h.inc"
} // namespace mlir::pipe

using namespace mlir;
using namespace mlir::pipe;

namespace {

struct MergeGpuModulesPass
    : public pipe::impl::PipeMergeGpuModulesBase<MergeGpuModulesPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::GPUModuleOp> modules(module.getOps<gpu::GPUModuleOp>());
    if (modules.size() < 2)
      return;
    for (gpu::GPUModuleOp m : modules)
      if (m.getTargetsAttr() || m.getOffloadingHandlerAttr()) {
        m.emitOpError("already has targets or an offloading handler; run "
                      "pipe-merge-gpu-modules before nvvm-attach-target");
        return signalPassFailure();
      }
    if (module.lookupSymbol(moduleName)) {
      mlir::emitError(module.getLoc(), "pipe-merge-gpu-modules: symbol @")
          << moduleName << " already exists";
      return signalPassFailure();
    }

    OpBuilder b(modules.front());
    auto merged = gpu::GPUModuleOp::create(b, modules.front().getLoc(),
                                           moduleName.getValue());
    SymbolTable table(merged);
    // Old (module, symbol) -> new symbol, for the launches.
    llvm::DenseMap<std::pair<StringAttr, StringAttr>, StringAttr> renamed;
    for (gpu::GPUModuleOp m : modules) {
      for (Operation &op :
           llvm::make_early_inc_range(m.getBody()->without_terminator())) {
        auto oldName =
            op.getAttrOfType<StringAttr>(SymbolTable::getSymbolAttrName());
        op.moveBefore(merged.getBody(), merged.getBody()->end());
        if (!oldName)
          continue;
        // Rename on a clash (outlined kernels have unique names already).
        StringAttr newName = table.insert(&op);
        renamed[{m.getSymNameAttr(), oldName}] = newName;
        if (newName != oldName &&
            failed(SymbolTable::replaceAllSymbolUses(oldName, newName, &op))) {
          op.emitOpError("could not be renamed");
          return signalPassFailure();
        }
      }
    }

    WalkResult result = module.walk([&](gpu::LaunchFuncOp launch) {
      auto it =
          renamed.find({launch.getKernelModuleName(), launch.getKernelName()});
      if (it == renamed.end()) {
        launch.emitOpError("launches a kernel that is in no gpu.module");
        return WalkResult::interrupt();
      }
      launch.setKernelAttr(SymbolRefAttr::get(
          merged.getSymNameAttr(), {FlatSymbolRefAttr::get(it->second)}));
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      return signalPassFailure();
    for (gpu::GPUModuleOp m : modules)
      m.erase();
  }
};

} // namespace
