//===- PipeDialect.cpp - The pipe dialect ---------------------------------===//

#include "pipe/Dialect/Pipe/IR/Pipe.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::pipe;

#include "pipe/Dialect/Pipe/IR/PipeOpsDialect.cpp.inc"

#include "pipe/Dialect/Pipe/IR/PipeEnums.cpp.inc"

FailureOr<uint64_t> mlir::pipe::parseCount(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  APInt value;
  OptionalParseResult parsed = parser.parseOptionalInteger(value);
  if (!parsed.has_value())
    return parser.emitError(loc, "expected a non-negative integer");
  if (failed(*parsed))
    return failure();
  if (value.isNegative())
    return parser.emitError(loc, "expected a non-negative integer, got ")
           << llvm::toString(value, 10, /*Signed=*/true);
  if (value.getActiveBits() > 64)
    return parser.emitError(loc, "integer ")
           << llvm::toString(value, 10, /*Signed=*/true)
           << " does not fit in 64 bits";
  return value.getZExtValue();
}

#define GET_ATTRDEF_CLASSES
#include "pipe/Dialect/Pipe/IR/PipeAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "pipe/Dialect/Pipe/IR/PipeOpsTypes.cpp.inc"

#include "pipe/Dialect/Pipe/IR/PipeInterfaces.cpp.inc"

void PipeDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "pipe/Dialect/Pipe/IR/PipeOps.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "pipe/Dialect/Pipe/IR/PipeOpsTypes.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "pipe/Dialect/Pipe/IR/PipeAttrs.cpp.inc"
      >();
}
