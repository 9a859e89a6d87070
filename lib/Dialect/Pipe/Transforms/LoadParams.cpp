//===- LoadParams.cpp - Binds parameters to a safetensors checkpoint ------===//
//
// Fine-tuning starts from a pretrained checkpoint, and externalized models
// come back from their weight file. Either way every parameter must find a
// tensor of exactly its dtype and shape: a silently reshaped or reinterpreted
// weight trains, but to garbage. So everything is checked before anything is
// bound, and each problem names the parameter, the file and the tensor.
//
//===----------------------------------------------------------------------===//

#include "pipe/Dialect/Pipe/Transforms/ParamData.h"
#include "pipe/Dialect/Pipe/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace mlir::pipe {
#define GEN_PASS_DEF_PIPELOADPARAMS
#include "pipe/Dialect/Pipe/Transforms/Passes.h.inc"
} // namespace mlir::pipe

using namespace mlir;
using namespace mlir::pipe;

namespace {
struct LoadParamsPass : public pipe::impl::PipeLoadParamsBase<LoadParamsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (file.empty()) {
      mlir::emitError(module.getLoc(),
                      "pipe-load-params needs a file=<path> option");
      return signalPassFailure();
    }
    llvm::Expected<SafetensorsFile> opened = SafetensorsFile::open(file);
    if (!opened) {
      mlir::emitError(module.getLoc(), "cannot load parameters: ")
          << llvm::toString(opened.takeError());
      return signalPassFailure();
    }
    SafetensorsFile &weights = *opened;

    // Check every parameter first; bind only when all match.
    SmallVector<std::pair<ParamOp, const SafetensorsTensor *>> bindings;
    bool ok = true;
    for (ParamOp param : module.getOps<ParamOp>()) {
      std::string key =
          (prefix + param.getExternalKey().value_or(param.getSymName())).str();
      const SafetensorsTensor *tensor = weights.lookup(key);
      if (!tensor) {
        if (allowMissing)
          continue;
        param.emitOpError("@")
            << param.getSymName() << ": '" << file << "' has no tensor '" << key
            << "' (pass allow-missing=true to leave it unbound)";
        ok = false;
        continue;
      }
      RankedTensorType type = param.getTensorType();
      std::optional<SafetensorsDType> dtype =
          getSafetensorsDType(type.getElementType());
      if (!dtype || *dtype != tensor->dtype ||
          ArrayRef<int64_t>(tensor->shape) != type.getShape()) {
        param.emitOpError("@")
            << param.getSymName() << " of type " << type
            << " does not match tensor '" << key << "' of '" << file
            << "', which is " << describeTensor(*tensor);
        ok = false;
        continue;
      }
      bindings.emplace_back(param, tensor);
    }
    if (!ok)
      return signalPassFailure();

    Builder builder(module.getContext());
    for (auto [param, tensor] : bindings) {
      if (inlineValues) {
        // A blob keeps multi-MB values out of the attribute uniquer. Natural
        // alignment, as torch-mlir writes it, so that a value round-trips
        // to the same printed blob.
        AsmResourceBlob blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(
            tensor->data, getDTypeBytes(tensor->dtype));
        param.setInitialValueAttr(DenseResourceElementsAttr::get(
            param.getTensorType(), param.getSymName(), std::move(blob)));
        param.removeExternalFileAttr();
        param.removeExternalKeyAttr();
      } else {
        param.setInitialValueAttr(nullptr);
        param.setExternalFileAttr(builder.getStringAttr(file));
        param.setExternalKeyAttr(builder.getStringAttr(tensor->name));
      }
    }
  }
};
} // namespace
