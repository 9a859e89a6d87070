//===- F32ToF64.cpp - Rewrites f32 types and constants to f64 -------------===//
//
// Finite-difference gradient checks need f64: this rewrites every f32 in a
// module (nested in tensor and function types, block arguments, attributes
// and constants) to f64. Dense constants are converted value by value; a
// cast that becomes f64 -> f64 is dropped.
//
//===----------------------------------------------------------------------===//

#include "pipe/Dialect/Pipe/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace mlir::pipe {
#define GEN_PASS_DEF_PIPEF32TOF64
#include "pipe/Dialect/Pipe/Transforms/Passes.h.inc"
} // namespace mlir::pipe

using namespace mlir;

namespace {

struct F32ToF64Pass : public pipe::impl::PipeF32ToF64Base<F32ToF64Pass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    Type f64 = Float64Type::get(ctx);

    // Resource blobs hold raw f32 bytes that cannot be reinterpreted.
    WalkResult blobs = module.walk([&](Operation *op) {
      for (NamedAttribute attr : op->getAttrs()) {
        auto resource = dyn_cast<DenseResourceElementsAttr>(attr.getValue());
        if (resource && resource.getType().getElementType().isF32()) {
          op->emitError("pipe-f32-to-f64 cannot convert the f32 "
                        "dense_resource attribute '")
              << attr.getName().getValue() << "'";
          return WalkResult::interrupt();
        }
      }
      return WalkResult::advance();
    });
    if (blobs.wasInterrupted())
      return signalPassFailure();

    AttrTypeReplacer replacer;
    replacer.addReplacement([&](FloatType type) -> std::optional<Type> {
      if (type.isF32())
        return f64;
      return std::nullopt;
    });
    replacer.addReplacement(
        [&](FloatAttr attr) -> std::optional<std::pair<Attribute, WalkResult>> {
          if (!attr.getType().isF32())
            return std::nullopt;
          return std::make_pair(FloatAttr::get(f64, attr.getValueAsDouble()),
                                WalkResult::skip());
        });
    replacer.addReplacement(
        [&](DenseFPElementsAttr attr)
            -> std::optional<std::pair<Attribute, WalkResult>> {
          auto type = attr.getType();
          if (!type.getElementType().isF32())
            return std::nullopt;
          SmallVector<double> values;
          for (APFloat v : attr.getValues<APFloat>())
            values.push_back(v.convertToFloat());
          ShapedType newType = type.clone(f64);
          if (attr.isSplat())
            return std::make_pair(
                Attribute(DenseElementsAttr::get(newType, values.front())),
                WalkResult::skip());
          return std::make_pair(
              Attribute(DenseElementsAttr::get(newType, ArrayRef(values))),
              WalkResult::skip());
        });
    replacer.recursivelyReplaceElementsIn(module, /*replaceAttrs=*/true,
                                          /*replaceLocs=*/false,
                                          /*replaceTypes=*/true);

    module.walk([](Operation *op) {
      if (isa<arith::ExtFOp, arith::TruncFOp>(op) &&
          op->getOperand(0).getType() == op->getResult(0).getType()) {
        op->getResult(0).replaceAllUsesWith(op->getOperand(0));
        op->erase();
      }
    });
  }
};

} // namespace
