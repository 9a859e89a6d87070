//===- WeightWriter.cpp - The initial weights of a program ----------------===//
//
// The weights file the runtime reads at start-up: the initial value of every
// param the manifest names, from the module's values or from the external
// safetensors files the params are bound to.
//
//===----------------------------------------------------------------------===//

#include "LowerToHost.h"

#include "pipe/Dialect/Pipe/Transforms/ParamData.h"

#include <memory>

using namespace mlir;
using namespace mlir::pipe;
using namespace mlir::pipe::host_lowering;

LogicalResult host_lowering::writeWeights(ModuleOp module,
                                          const ManifestBuilder &manifest,
                                          StringRef path) {
  SafetensorsWriter writer;
  llvm::StringMap<std::unique_ptr<SafetensorsFile>> sources;
  for (ParamOp param : module.getOps<ParamOp>()) {
    if (!manifest.paramId(param.getSymName()))
      continue;
    RankedTensorType type = param.getTensorType();
    std::optional<SafetensorsDType> dtype =
        getSafetensorsDType(type.getElementType());
    if (!dtype)
      return param.emitOpError("has element type ")
             << type.getElementType() << ", which safetensors cannot hold";
    std::vector<char> storage;
    std::optional<ArrayRef<char>> bytes;
    if (std::optional<ElementsAttr> value = param.getInitialValue()) {
      bytes = getRawBytes(*value, storage);
      if (!bytes)
        return param.emitOpError("initial value bytes are not available "
                                 "(missing dense_resource blob?)");
    } else if (std::optional<StringRef> file = param.getExternalFile()) {
      auto &source = sources[*file];
      if (!source) {
        llvm::Expected<SafetensorsFile> opened = SafetensorsFile::open(*file);
        if (!opened)
          return param.emitOpError("cannot read its weights: ")
                 << llvm::toString(opened.takeError());
        source = std::make_unique<SafetensorsFile>(std::move(*opened));
      }
      const SafetensorsTensor *tensor = source->lookup(*param.getExternalKey());
      if (!tensor || tensor->dtype != *dtype ||
          ArrayRef<int64_t>(tensor->shape) != type.getShape())
        return param.emitOpError("external tensor '")
               << *param.getExternalKey() << "' of " << *file
               << (tensor ? " is " + describeTensor(*tensor)
                          : std::string(" is missing"))
               << ", expected " << type;
      bytes = tensor->data;
    } else {
      return param.emitOpError("has no initial value; lift it with values "
                               "(or bind it with --pipe-load-params) before "
                               "writing the weights file");
    }
    writer.addTensor(param.getSymName(), *dtype, type.getShape(), *bytes);
  }
  // The error names the file.
  if (llvm::Error err = writer.writeAtomically(path))
    return mlir::emitError(module.getLoc()) << llvm::toString(std::move(err));
  return success();
}
