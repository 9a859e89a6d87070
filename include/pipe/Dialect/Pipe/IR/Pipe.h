//===- Pipe.h - The pipe dialect, its types, attributes and ops -*- C++ -*-===//

#ifndef PIPE_DIALECT_PIPE_IR_PIPE_H
#define PIPE_DIALECT_PIPE_IR_PIPE_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/RegionKindInterface.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "pipe/Dialect/Pipe/IR/PipeOpsDialect.h.inc"

#include "pipe/Dialect/Pipe/IR/PipeEnums.h.inc"

namespace mlir::pipe {
/// Parses a non-negative integer that fits in 64 bits (used by attribute
/// parameters that count FLOPs, bytes or nanoseconds).
FailureOr<uint64_t> parseCount(AsmParser &parser);

/// The host lowering makes each pipe.block a func.func named with this
/// prefix, so that no block (`exp`, `log` at op granularity) defines a C
/// library symbol (docs/host-lowering.md).
inline constexpr llvm::StringLiteral kBlockFunctionPrefix = "pipe_block_";
/// On such a func.func: the symbol of the packed C entry point the runtime
/// calls it through (`--pipe-emit-packed-entries` writes the entry and
/// drops the attribute).
inline constexpr llvm::StringLiteral kPackedEntryAttr = "pipe.packed_entry";
} // namespace mlir::pipe

#define GET_ATTRDEF_CLASSES
#include "pipe/Dialect/Pipe/IR/PipeAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "pipe/Dialect/Pipe/IR/PipeOpsTypes.h.inc"

#include "pipe/Dialect/Pipe/IR/PipeInterfaces.h.inc"

namespace mlir::pipe {
class RunOp;
class StageOp;
} // namespace mlir::pipe

#define GET_OP_CLASSES
#include "pipe/Dialect/Pipe/IR/PipeOps.h.inc"

#endif // PIPE_DIALECT_PIPE_IR_PIPE_H
