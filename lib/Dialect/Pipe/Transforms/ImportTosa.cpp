//===- ImportTosa.cpp - Lowers TOSA models to linalg-on-tensors -----------===//
//
// TOSA enters the compiler through upstream conversions only. The order is
// not obvious: `tosa-to-linalg` alone fails on `tosa.matmul`, and the
// upstream TOSA-to-linalg pipeline leaves `tosa.reshape` and
// `tosa.const_shape` behind, which `tosa-to-tensor` and `tosa-to-arith`
// clean up. Variables (`tosa.variable`) must become `ml_program` globals and
// `tosa.cond_if`/`tosa.while_loop` scf before the linalg conversion, which
// does not know them. Running it as one pass keeps that knowledge in one
// place.
//
//===----------------------------------------------------------------------===//

#include "pipe/Dialect/Pipe/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

namespace mlir::pipe {
#define GEN_PASS_DEF_PIPEIMPORTTOSA
#include "pipe/Dialect/Pipe/Transforms/Passes.h.inc"
} // namespace mlir::pipe

using namespace mlir;

namespace {
struct ImportTosaPass : public pipe::impl::PipeImportTosaBase<ImportTosaPass> {
  using Base::Base;

  ImportTosaPass() : pipeline(ModuleOp::getOperationName()) {
    pipeline.addPass(createTosaToMLProgram());
    pipeline.nest<func::FuncOp>().addPass(createTosaToSCFPass());
    tosa::addTosaToLinalgPasses(pipeline, TosaToLinalgOptions());
    OpPassManager &funcs = pipeline.nest<func::FuncOp>();
    funcs.addPass(createTosaToTensorPass());
    funcs.addPass(createTosaToArithPass());
    pipeline.addPass(createCanonicalizerPass());
  }
  ImportTosaPass(const ImportTosaPass &other)
      : pipe::impl::PipeImportTosaBase<ImportTosaPass>(other),
        pipeline(other.pipeline) {}

  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    pipeline.getDependentDialects(registry);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(runPipeline(pipeline, module))) {
      module.emitError("TOSA import failed: the ops reported above have no "
                       "lowering to linalg-on-tensors");
      return signalPassFailure();
    }
    // Conversions skip what they cannot lower; say what is left and where.
    bool left = false;
    module.walk([&](Operation *op) {
      if (op->getName().getDialectNamespace() != "tosa")
        return;
      op->emitOpError("was not lowered to linalg-on-tensors by the TOSA "
                      "import; it is not supported");
      left = true;
    });
    if (left)
      signalPassFailure();
  }

  OpPassManager pipeline;
};
} // namespace
