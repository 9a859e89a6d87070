//===- CheckInput.cpp - Checks the linalg-on-tensors input contract -------===//
//
// The rest of the compiler (parameter lifting, block formation, costs,
// autodiff) only understands tensor-level linalg IR on static shapes, as
// torch-mlir's linalg-on-tensors backend produces it. This pass rejects
// everything else up front, with the op's location and the way around it,
// rather than letting a later pass fail on something it never expected.
//
//===----------------------------------------------------------------------===//

#include "pipe/Dialect/Pipe/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::pipe {
#define GEN_PASS_DEF_PIPECHECKINPUT
#include "pipe/Dialect/Pipe/Transforms/Passes.h.inc"
} // namespace mlir::pipe

using namespace mlir;
using namespace mlir::pipe;

/// Dialects whose every op is accepted.
static bool isAcceptedDialect(StringRef dialect) {
  return llvm::is_contained({"builtin", "func", "linalg", "tensor", "arith",
                             "math", "scf", "cf", "ml_program", "pipe"},
                            dialect);
}

/// Single ops of otherwise rejected dialects that torch-mlir's output uses:
/// index arithmetic (tensor.pad, slicing) and tensor allocation.
static bool isAcceptedOp(StringRef name) {
  return llvm::is_contained({"affine.apply", "affine.min", "affine.max",
                             "bufferization.alloc_tensor"},
                            name);
}

/// Emits the diagnostic for a rejected op, with the way around it where one
/// is known.
static void reportOp(Operation *op) {
  StringRef dialect = op->getName().getDialectNamespace();
  StringRef name = op->getName().getStringRef();
  InFlightDiagnostic diag = op->emitOpError();
  if (dialect == "tosa") {
    diag << "is TOSA, which is not accepted directly: run --pipe-import-tosa "
            "first to lower it to linalg-on-tensors";
  } else if (dialect == "torch" || dialect == "torch_c") {
    diag << "is torch dialect IR: lower it to linalg-on-tensors first "
            "(torch_mlir.fx.export_and_import(..., "
            "output_type=\"linalg-on-tensors\"))";
  } else if (dialect == "stablehlo" || dialect == "chlo" || dialect == "mhlo") {
    diag << "is StableHLO: lower it to linalg-on-tensors first (export from "
            "torch-mlir with output_type=\"linalg-on-tensors\", or legalize "
            "StableHLO to linalg)";
  } else if (name == "tm_tensor.attention") {
    diag << "(fused attention) is not supported: export with torch-mlir's "
            "default decompositions or eager attention (e.g. "
            "attn_implementation=\"eager\"), so that attention becomes "
            "matmuls and a softmax";
  } else if (dialect == "tm_tensor") {
    diag << "is not supported: export with torch-mlir's default "
            "decompositions so that it becomes linalg";
  } else if (llvm::is_contained({"memref", "bufferization", "gpu", "vector",
                                 "llvm", "nvvm", "async"},
                                dialect)) {
    diag << "belongs to buffer-level or lowered IR: the input must be "
            "tensor-level IR, before bufferization and lowering";
  } else {
    diag << "is not part of the accepted input (linalg-on-tensors: builtin, "
            "func, linalg, tensor, arith, math, scf, cf, ml_program and pipe "
            "ops)";
  }
}

/// Bytes of a static shape of `elementBits`-bit elements, or nullopt if
/// the count overflows 64 bits.
static std::optional<uint64_t> getStaticBytes(ArrayRef<int64_t> shape,
                                              uint64_t elementBits) {
  uint64_t elements = 1;
  for (int64_t dim : shape)
    if (dim < 0 || __builtin_mul_overflow(elements, uint64_t(dim), &elements))
      return std::nullopt;
  uint64_t bits;
  if (__builtin_mul_overflow(elements, std::max<uint64_t>(elementBits, 8),
                             &bits))
    return std::nullopt;
  return bits / 8;
}

/// Why `type` is not accepted as the type of a value, or an empty string.
static std::string checkType(Type type, uint64_t maxBytes) {
  if (type.isIntOrIndexOrFloat())
    return {};
  // Tokens and other types of the pipe dialect.
  if (type.getDialect().getNamespace() == "pipe")
    return {};
  std::string reason;
  llvm::raw_string_ostream os(reason);
  if (isa<UnrankedTensorType>(type)) {
    os << "has unranked type '" << type
       << "': export the model with static shapes";
  } else if (auto tensor = dyn_cast<RankedTensorType>(type)) {
    if (!tensor.hasStaticShape())
      os << "has dynamically shaped type '" << type
         << "': export the model with static shapes (no dynamic dimensions)";
    else if (!tensor.getElementType().isIntOrIndexOrFloat())
      os << "has type '" << type
         << "' whose elements are not integers or floats";
    else if (tensor.getEncoding())
      os << "has type '" << type << "' with an encoding (sparse tensors are "
         << "not supported)";
    else if (std::optional<uint64_t> bytes = getStaticBytes(
                 tensor.getShape(), tensor.getElementType().isIndex()
                                        ? 64
                                        : tensor.getElementType()
                                              .getIntOrFloatBitWidth());
             !bytes)
      os << "has type '" << type
         << "' whose element count overflows 64 bits";
    else if (*bytes > maxBytes)
      os << "has type '" << type << "' of " << *bytes
         << " bytes, more than the " << maxBytes
         << " bytes accepted for one tensor (max-tensor-bytes)";
  } else {
    os << "has unsupported type '" << type
       << "': the input must use ranked, statically shaped tensors of "
          "integers or floats, and scalars";
  }
  return reason;
}

namespace {
struct CheckInputPass : public pipe::impl::PipeCheckInputBase<CheckInputPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    bool ok = true;
    module.walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (op == module.getOperation())
        return WalkResult::advance();
      StringRef name = op->getName().getStringRef();
      if (!isAcceptedDialect(op->getName().getDialectNamespace()) &&
          !isAcceptedOp(name)) {
        reportOp(op);
        ok = false;
        // The op's own error says it all: nothing inside it is checked.
        return WalkResult::skip();
      }
      ok &= succeeded(checkOpTypes(op));
      if (inlineBoolResources)
        ok &= succeeded(inlineBoolResourcesOf(op));
      ok &= succeeded(checkIntegerResourceOf(op));
      if (auto reshape = dyn_cast<tensor::ReshapeOp>(op))
        ok &= succeeded(checkReshape(reshape));
      if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
        ok &= succeeded(checkUndefinedReads(linalgOp));
      return WalkResult::advance();
    });
    if (!ok)
      signalPassFailure();
  }

  LogicalResult checkOpTypes(Operation *op) {
    bool ok = true;
    // `what` names the value; it is only built when there is an error.
    auto report = [&](Location loc, llvm::function_ref<std::string()> what,
                      Type type) {
      std::string reason = checkType(type, maxTensorBytes);
      if (reason.empty())
        return;
      mlir::emitError(loc) << what() << " " << reason;
      ok = false;
    };

    if (auto func = dyn_cast<func::FuncOp>(op)) {
      if (func.isExternal()) {
        func.emitOpError("@")
            << func.getSymName()
            << " is a declaration without a body: the whole model must be "
               "defined in the module";
        return failure();
      }
      // The runtime feeds a model tensors: torch-mlir keeps a Python int or
      // float argument (a softmax's dim, a pooling size) as a scalar.
      if (func.isPublic())
        for (BlockArgument arg : func.getArguments())
          if (arg.getType().isIntOrIndexOrFloat()) {
            Location loc =
                isa<UnknownLoc>(arg.getLoc()) ? func.getLoc() : arg.getLoc();
            mlir::emitError(loc)
                << "argument " << describe(arg) << " of function @"
                << func.getSymName() << " is a scalar " << arg.getType()
                << ": a model's inputs must be tensors (torch-mlir keeps a "
                   "Python int or float argument as a scalar); export it with "
                   "the value fixed, or as a 0-d tensor";
            ok = false;
          }
      // Arguments are checked as block arguments below; results only appear
      // in the signature.
      for (auto [index, type] : llvm::enumerate(func.getResultTypes()))
        report(
            func.getLoc(),
            [&] {
              return ("result #" + Twine(index) + " of function @" +
                      func.getSymName())
                  .str();
            },
            type);
    }
    if (auto global = dyn_cast<ml_program::GlobalOp>(op))
      report(
          global.getLoc(),
          [&] { return ("global @" + global.getSymName()).str(); },
          global.getType());

    for (OpResult result : op->getResults())
      report(
          op->getLoc(),
          [&] {
            return "'" + op->getName().getStringRef().str() + "' op result " +
                   describe(result);
          },
          result.getType());

    for (Region &region : op->getRegions()) {
      for (Block &block : region) {
        for (BlockArgument arg : block.getArguments()) {
          auto what = [&]() -> std::string {
            if (auto func = dyn_cast<func::FuncOp>(op);
                func && &block == &func.getBody().front())
              return ("argument " + describe(arg) + " of function @" +
                      func.getSymName())
                  .str();
            return "'" + op->getName().getStringRef().str() +
                   "' op block argument " + describe(arg);
          };
          Location loc = arg.getLoc();
          if (isa<UnknownLoc>(loc))
            loc = op->getLoc();
          report(loc, what, arg.getType());
        }
      }
    }
    return success(ok);
  }

  /// A constant shape operand must say what the static result type says:
  /// MLIR's verifier compares only element counts.
  static LogicalResult checkReshape(tensor::ReshapeOp reshape) {
    DenseIntElementsAttr shape;
    auto result = dyn_cast<RankedTensorType>(reshape.getResult().getType());
    if (!result || !result.hasStaticShape() ||
        !matchPattern(reshape.getShape(), m_Constant(&shape)))
      return success();
    SmallVector<int64_t> dims;
    for (const APInt &dim : shape.getValues<APInt>())
      dims.push_back(dim.getSExtValue());
    if (ArrayRef<int64_t>(dims) == result.getShape())
      return success();
    InFlightDiagnostic diag = reshape.emitOpError("has shape operand [");
    llvm::interleaveComma(dims, diag);
    diag << "] but result type " << result
         << ": the two must agree";
    return diag;
  }

  /// LLVM translation cannot lower `dense_resource` data of i1 ("no known
  /// conversion for innermost element type", at the end of pipe-compile),
  /// and torch-mlir stores boolean masks that way; a `dense` literal of the
  /// same booleans lowers. Rewrites the value of a constant or global.
  static LogicalResult inlineBoolResourcesOf(Operation *op) {
    if (!isa<arith::ConstantOp, ml_program::GlobalOp>(op))
      return success();
    StringRef name = "value";
    auto resource = dyn_cast_or_null<DenseResourceElementsAttr>(
        op->getAttr(name));
    if (!resource || !resource.getElementType().isInteger(1))
      return success();
    FailureOr<DenseElementsAttr> literal =
        getBoolLiteral(resource, op->getLoc());
    if (failed(literal))
      return failure();
    op->setAttr(name, *literal);
    return success();
  }

  /// Float weights without data are parameter lifting's to report (with
  /// init=<kind> they are made up); integer tables (indices, offsets) are no
  /// weights, and LLVM translation would fail on them with "resource does
  /// not exist" at the end of compilation.
  static LogicalResult checkIntegerResourceOf(Operation *op) {
    if (!isa<arith::ConstantOp, ml_program::GlobalOp>(op))
      return success();
    auto resource =
        dyn_cast_or_null<DenseResourceElementsAttr>(op->getAttr("value"));
    if (!resource || !resource.getElementType().isIntOrIndex() ||
        resource.getElementType().isInteger(1) ||
        resource.getRawHandle().getBlob())
      return success();
    return mlir::emitError(op->getLoc())
           << "integer constant '" << resource.getRawHandle().getKey()
           << "' of type " << resource.getType()
           << " has no data (its dense_resource blob is missing, e.g. "
              "printed as __elided__): indices cannot be made up; export "
              "the model with its constants";
  }

  static FailureOr<DenseElementsAttr>
  getBoolLiteral(DenseResourceElementsAttr resource, Location loc) {
    ShapedType type = resource.getType();
    StringRef key = resource.getRawHandle().getKey();
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob)
      return mlir::emitError(loc)
             << "boolean constant '" << key
             << "' has no data (its dense_resource blob is missing, e.g. "
                "printed as __elided__): a mask cannot be made up; export "
                "the model with its constants";
    ArrayRef<char> data = blob->getData();
    if (int64_t(data.size()) != type.getNumElements())
      return mlir::emitError(loc)
             << "boolean constant '" << key << "' has a dense_resource blob "
             << "of " << data.size() << " bytes, but " << type
             << " needs " << type.getNumElements()
             << " (one byte per element)";
    SmallVector<bool> values;
    values.reserve(data.size());
    for (auto [index, byte] : llvm::enumerate(data)) {
      if (byte != 0 && byte != 1)
        return mlir::emitError(loc)
               << "boolean constant '" << key << "' has byte " << int(byte)
               << " at element " << index << "; booleans are 0 or 1";
      values.push_back(byte == 1);
    }
    return DenseElementsAttr::get(type, values);
  }

  /// A contraction or reduction accumulates into its init, and a generic
  /// may read it: an init straight from `tensor.empty` (or an
  /// `alloc_tensor` without copy) has undefined contents, which training
  /// would turn into NaN. Ops that only write their init (elementwise
  /// generics, fill, transpose, broadcast) are what tensor.empty is for.
  static LogicalResult checkUndefinedReads(linalg::LinalgOp op) {
    bool ok = true;
    for (OpOperand &init : op.getDpsInitsMutable()) {
      Operation *def = init.get().getDefiningOp();
      auto alloc = dyn_cast_or_null<bufferization::AllocTensorOp>(def);
      if (!isa_and_nonnull<tensor::EmptyOp>(def) &&
          !(alloc && !alloc.getCopy()))
        continue;
      if (!op.payloadUsesValueFromOperand(&init))
        continue;
      InFlightDiagnostic diag = op->emitOpError();
      diag << "reads its init (outs operand #"
           << init.getOperandNumber() - op.getNumDpsInputs() << ", "
           << describe(init.get()) << "), which is a bare '"
           << def->getName()
           << "' with undefined contents: a contraction or reduction adds "
              "into its init, so fill it first (linalg.fill with 0 for a "
              "sum, the reduction's identity in general), as torch-mlir "
              "does";
      diag.attachNote(def->getLoc()) << "the undefined tensor is made here";
      ok = false;
    }
    return success(ok);
  }

  /// `%name (#index)`: how a value is printed, so it can be found in the IR.
  /// Only called on error paths, where the cost of numbering does not matter.
  static std::string describe(Value value) {
    std::string text;
    llvm::raw_string_ostream os(text);
    value.printAsOperand(os, OpPrintingFlags());
    unsigned index = isa<OpResult>(value)
                         ? cast<OpResult>(value).getResultNumber()
                         : cast<BlockArgument>(value).getArgNumber();
    os << " (#" << index << ")";
    return text;
  }
};
} // namespace
