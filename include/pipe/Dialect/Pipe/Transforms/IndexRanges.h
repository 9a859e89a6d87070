//===- IndexRanges.h - Valid ranges of integer graph inputs -----*- C++ -*-===//
//
// Integer graph inputs (token ids, class targets) index tables inside the
// model. inferIndexRanges finds from the IR which values each input may hold
// and records them on the graph's arguments; pipe-lower-to-host writes them
// into the manifest, where the data loader checks every row against them.
// Indices the model computes are guarded in the generated code instead
// (--pipe-guard-indices). See docs/host-lowering.md, "Index ranges".
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_DIALECT_PIPE_TRANSFORMS_INDEXRANGES_H
#define PIPE_DIALECT_PIPE_TRANSFORMS_INDEXRANGES_H

#include "pipe/Dialect/Pipe/IR/Pipe.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace mlir::pipe {

/// Graph argument attributes: the argument's elements are in [0, bound)
/// (i64), or one of `exempt` (array<i64>: values the model tests for and
/// never uses as an index, e.g. an ignore_index of -100).
inline constexpr llvm::StringLiteral kIndexBoundAttr = "pipe.index_bound";
inline constexpr llvm::StringLiteral kIndexExemptAttr = "pipe.index_exempt";

struct IndexRange {
  int64_t bound = 0;
  llvm::SmallVector<int64_t> exempt; // sorted, none in [0, bound)
};

/// The range recorded on argument `arg` of `graph`, nullopt if none.
/// Fails (with an error on the graph) when the attributes are malformed: a
/// bound that is not a positive i64 on an integer tensor argument, or
/// exempt values without a bound.
FailureOr<std::optional<IndexRange>> getIndexRange(GraphOp graph, unsigned arg);

/// For every integer argument of `graph`, the tightest range over its uses
/// as an index: the indexed dimension of each tensor.extract / tensor.insert
/// it reaches (through pipe.run, casts, reshapes and elementwise copies in
/// linalg.generic), and the loop range of each linalg.index it is compared
/// with (a class selected by its target). Recorded with the attributes
/// above, tightened with any already there. Values the model compares the
/// input with and keeps away from the index (select(x != K, x, c)) are
/// exempt.
LogicalResult inferIndexRanges(GraphOp graph, SymbolTable &symbols);

} // namespace mlir::pipe

#endif // PIPE_DIALECT_PIPE_TRANSFORMS_INDEXRANGES_H
