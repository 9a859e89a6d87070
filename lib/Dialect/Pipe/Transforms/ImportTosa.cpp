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
// The upstream pipeline canonicalizes, which uniques equal constants: every
// elided weight of one type (`dense_resource<__elided__>`, one key for all)
// and every two weights with equal values would become one constant, so
// one parameter, silently changing the model (docs/ingestion.md,
// "Identity"). The weights therefore cross the pipeline as distinct
// placeholder resources without data, which nothing can fold or merge, and
// get their values back afterwards.
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
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

namespace mlir::pipe {
#define GEN_PASS_DEF_PIPEIMPORTTOSA
#include "pipe/Dialect/Pipe/Transforms/Passes.h.inc"
} // namespace mlir::pipe

using namespace mlir;

namespace {
/// Whether the value of a `tosa.const` may be a weight whose identity the
/// upstream canonicalization would lose: a float tensor held as a
/// `dense_resource` without data (elided) or as a non-splat `dense`
/// literal (`--pipe-lift-params` lifts both; splats and integer constants
/// such as zero points and shifts stay literals and may be folded).
bool isMergeableWeight(ElementsAttr value) {
  if (!isa<FloatType>(value.getElementType()))
    return false;
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(value))
    return !resource.getRawHandle().getBlob();
  auto dense = dyn_cast<DenseElementsAttr>(value);
  return dense && !dense.isSplat();
}

/// Replaces each such weight by its own placeholder resource and returns
/// the original values by placeholder.
DenseMap<Attribute, Attribute> hideWeights(ModuleOp module) {
  DenseMap<Attribute, Attribute> originals;
  auto &resources =
      DenseResourceElementsHandle::getManagerInterface(module.getContext());
  module.walk([&](tosa::ConstOp constant) {
    ElementsAttr value = constant.getValuesAttr();
    if (!isMergeableWeight(value))
      return;
    auto placeholder = DenseResourceElementsAttr::get(
        cast<ShapedType>(value.getType()),
        resources.insert("__pipe_import_tosa_weight"));
    originals[placeholder] = value;
    constant.setValuesAttr(placeholder);
  });
  return originals;
}

/// Puts the original values back into the ops that hold a placeholder
/// (the `arith.constant`s the `tosa.const`s became).
void restoreWeights(ModuleOp module,
                    const DenseMap<Attribute, Attribute> &originals) {
  module.walk([&](Operation *op) {
    for (NamedAttribute attr : op->getAttrs())
      if (Attribute original = originals.lookup(attr.getValue()))
        op->setAttr(attr.getName(), original);
  });
}

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
    DenseMap<Attribute, Attribute> weights = hideWeights(module);
    LogicalResult lowered = runPipeline(pipeline, module);
    restoreWeights(module, weights);
    if (failed(lowered)) {
      mlir::emitError(module.getLoc(),
                      "TOSA import failed: the ops reported above have no "
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
