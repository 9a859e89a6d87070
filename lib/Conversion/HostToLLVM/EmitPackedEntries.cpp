//===- EmitPackedEntries.cpp - Uniform entry points for block functions ---===//
//
// The runtime calls block functions of any arity through one C signature,
// `void f(void **args)`: args[0] is the result storage (when there are
// results), then one memref descriptor per argument. This pass writes that
// wrapper around MLIR's C interface (`_mlir_ciface_<name>`, which takes
// exactly those pointers), so no libffi or per-arity code is needed.
//
//===----------------------------------------------------------------------===//

#include "pipe/Conversion/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"

namespace mlir::pipe {
#define GEN_PASS_DEF_PIPEEMITPACKEDENTRIES
#include "pipe/Conversion/Passes.h.inc"
} // namespace mlir::pipe

using namespace mlir;
using namespace mlir::pipe;

namespace {

struct EmitPackedEntriesPass
    : public pipe::impl::PipeEmitPackedEntriesBase<EmitPackedEntriesPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    for (auto fn : llvm::to_vector(module.getOps<LLVM::LLVMFuncOp>())) {
      auto entry = fn->getAttrOfType<StringAttr>(kPackedEntryAttr);
      if (!entry)
        continue;
      // The C interface wrapper inherits the marker; it is not an entry.
      if (fn.getName().starts_with("_mlir_ciface_")) {
        fn->removeAttr(kPackedEntryAttr);
        continue;
      }
      std::string cifaceName = ("_mlir_ciface_" + fn.getName()).str();
      auto ciface = module.lookupSymbol<LLVM::LLVMFuncOp>(cifaceName);
      if (!ciface) {
        fn.emitOpError("has no C interface @")
            << cifaceName << "; lower it with llvm.emit_c_interface";
        return signalPassFailure();
      }
      LLVM::LLVMFunctionType type = ciface.getFunctionType();
      if (!isa<LLVM::LLVMVoidType>(type.getReturnType()) ||
          llvm::any_of(type.getParams(), [&](Type t) { return t != ptr; })) {
        ciface.emitOpError("is not a C interface of pointers only");
        return signalPassFailure();
      }
      if (module.lookupSymbol(entry.getValue())) {
        fn.emitOpError("packed entry name @")
            << entry.getValue() << " is already taken";
        return signalPassFailure();
      }
      OpBuilder b(ctx);
      b.setInsertionPointAfter(ciface);
      Location loc = fn.getLoc();
      auto wrapper = LLVM::LLVMFuncOp::create(
          b, loc, entry.getValue(),
          LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {ptr}));
      Block *body = wrapper.addEntryBlock(b);
      b.setInsertionPointToStart(body);
      SmallVector<Value> args;
      for (unsigned i = 0; i < type.getNumParams(); ++i) {
        Value slot = LLVM::GEPOp::create(b, loc, ptr, ptr, body->getArgument(0),
                                         ArrayRef<LLVM::GEPArg>{(int32_t)i});
        args.push_back(LLVM::LoadOp::create(b, loc, ptr, slot));
      }
      LLVM::CallOp::create(b, loc, ciface, args);
      LLVM::ReturnOp::create(b, loc, ValueRange{});
      fn->removeAttr(kPackedEntryAttr);
    }
  }
};

} // namespace
