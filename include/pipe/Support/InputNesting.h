//===- InputNesting.h - Cheap nesting estimate of textual MLIR --*- C++ -*-===//
//
// The MLIR parser, and the printer and analyses that walk what it builds,
// recurse once per level of nesting. A hostile or generated file with 100k
// nested brackets, a 100k-long chain of `- - - d0` in an affine expression,
// or a chain of 100k aliases each wrapping the previous one overflows any
// thread stack. Every tool therefore scans its input once, linearly, before
// parsing and rejects input whose estimated nesting exceeds a limit, with a
// file:line:col diagnostic instead of a segmentation fault.
//
// The estimate never undercounts the recursion of the parser for the
// constructs listed below; it may overcount slightly (it cannot tell a `<`
// that opens a type from other uses of that character), which only matters
// for input far deeper than any real program.
//
//   - every open bracket `(` `[` `{` `<` (and `{-#`) counts one level until
//     its matching closer; closers that do not match the innermost open
//     bracket (`>` of `>=` in an integer set) are ignored, so they cannot
//     hide real nesting;
//   - affine operators (`+`, `-`, `*`, `floordiv`, `ceildiv`, `mod`) count
//     one level each until a separator (`,` `:` `=` `->`, an SSA name, a
//     symbol, a string, ...) ends the expression: affine chains and unary
//     minus build expression trees as deep as the chain;
//   - a reference to an attribute or type alias (`#a`, `!t`) adds the depth
//     of that alias's definition, so alias chains are measured by the depth
//     of the value they denote, not by their text.
//
// Strings and `//` comments are skipped.
//
// The same scan bounds a second blow-up: aliases that each use the previous
// one twice (`#a1 = [#a0, #a0]`, ...) denote a value whose printed form is
// exponential in the size of the file, which MLIR's printer writes out in
// full (only locations, affine maps and integer sets are printed as
// aliases). The scan adds up how many bytes every alias use stands for.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_SUPPORT_INPUTNESTING_H
#define PIPE_SUPPORT_INPUTNESTING_H

#include "llvm/ADT/StringRef.h"

#include <cstddef>

namespace mlir::pipe {

struct NestingEstimate {
  /// The deepest estimated nesting found (or the first value above the
  /// limit, when the scan stopped early).
  unsigned depth = 0;
  /// Byte offset into the text where `depth` is reached.
  size_t offset = 0;
  /// How many bytes replacing every alias use by what it denotes adds to
  /// the text, saturating at UINT64_MAX (or the first value above the
  /// limit). Large files without aliases (inline weights) add nothing.
  uint64_t expandedBytes = 0;
  /// Byte offset of the alias use that made `expandedBytes` pass the limit.
  size_t expansionOffset = 0;
};

/// Scans `text` once and returns its deepest estimated nesting and the
/// growth of its alias uses. Stops at the first point deeper than
/// `nestingLimit` or expanding past `expansionLimit` extra bytes (0: no limit),
/// so that the caller can report it; the cost is linear in the size of the
/// text.
NestingEstimate estimateNesting(llvm::StringRef text, unsigned nestingLimit = 0,
                                uint64_t expansionLimit = 0);

} // namespace mlir::pipe

#endif // PIPE_SUPPORT_INPUTNESTING_H
