//===- ExternalizeParams.cpp - Moves parameter values to safetensors ------===//
//
// A GPT2-XL-sized model carries gigabytes of weights; inline in the IR they
// make every print, parse and diff slow. This pass moves them into one
// safetensors file (readable by PyTorch-side tooling) and leaves
// `external("file", "key")` references behind. The file is written
// atomically: a failed or interrupted run leaves the old file intact.
//
//===----------------------------------------------------------------------===//

#include "pipe/Dialect/Pipe/Transforms/ParamData.h"
#include "pipe/Dialect/Pipe/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace mlir::pipe {
#define GEN_PASS_DEF_PIPEEXTERNALIZEPARAMS
#include "pipe/Dialect/Pipe/Transforms/Passes.h.inc"
} // namespace mlir::pipe

using namespace mlir;
using namespace mlir::pipe;

namespace {
struct ExternalizeParamsPass
    : public pipe::impl::PipeExternalizeParamsBase<ExternalizeParamsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (file.empty()) {
      mlir::emitError(module.getLoc(),
                      "pipe-externalize-params needs a file=<path> option");
      return signalPassFailure();
    }
    if (minBytes < 0) {
      mlir::emitError(module.getLoc(), "min-bytes must not be negative, got ")
          << static_cast<int64_t>(minBytes);
      return signalPassFailure();
    }

    SafetensorsWriter writer;
    SmallVector<ParamOp> moved;
    bool ok = true;

    // The file is rewritten whole: parameters that already live in it keep
    // their tensors by being copied over.
    std::optional<SafetensorsFile> previous;
    for (ParamOp param : module.getOps<ParamOp>()) {
      if (param.getExternalFile() != StringRef(file))
        continue;
      if (!previous) {
        llvm::Expected<SafetensorsFile> opened = SafetensorsFile::open(file);
        if (!opened) {
          param.emitOpError("refers to '")
              << file
              << "', which is about to be rewritten but cannot be read: "
              << llvm::toString(opened.takeError());
          return signalPassFailure();
        }
        previous.emplace(std::move(*opened));
      }
      StringRef key = param.getExternalKey().value_or(param.getSymName());
      const SafetensorsTensor *tensor = previous->lookup(key);
      if (!tensor) {
        param.emitOpError("refers to tensor '")
            << key << "' of '" << file
            << "', which is about to be rewritten and lacks it";
        return signalPassFailure();
      }
      writer.addTensor(key, tensor->dtype, tensor->shape, tensor->data);
    }

    for (ParamOp param : module.getOps<ParamOp>()) {
      ElementsAttr init = param.getInitialValueAttr();
      if (!init)
        continue;
      RankedTensorType type = param.getTensorType();
      std::optional<SafetensorsDType> dtype =
          getSafetensorsDType(type.getElementType());
      if (!dtype) {
        param.emitOpError("has element type ")
            << type.getElementType()
            << ", which safetensors cannot store exactly";
        ok = false;
        continue;
      }
      std::optional<uint64_t> bytes = getTensorBytes(type);
      if (!bytes || *bytes < static_cast<uint64_t>(minBytes))
        continue;
      std::vector<char> storage;
      std::optional<ArrayRef<char>> data = getRawBytes(init, storage);
      if (!data) {
        param.emitOpError("has an initial value whose bytes cannot be read "
                          "(a missing or mis-sized dense_resource blob?)");
        ok = false;
        continue;
      }
      writer.addTensor(param.getSymName(), *dtype, type.getShape(), *data);
      moved.push_back(param);
    }
    if (!ok)
      return signalPassFailure();

    // Hugging Face loaders insist on a "format" entry.
    writer.setMetadata("format", "pt");
    writer.setMetadata("producer", "pipe-externalize-params");
    if (llvm::Error error = writer.writeAtomically(file)) {
      mlir::emitError(module.getLoc(), "pipe-externalize-params: ")
          << llvm::toString(std::move(error));
      return signalPassFailure();
    }

    Builder builder(module.getContext());
    for (ParamOp param : moved) {
      param.setInitialValueAttr(nullptr);
      param.setExternalFileAttr(builder.getStringAttr(file));
      param.setExternalKeyAttr(param.getSymNameAttr());
    }
  }
};
} // namespace
