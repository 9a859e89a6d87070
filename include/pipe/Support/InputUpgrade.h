//===- InputUpgrade.h - Older MLIR syntax explained and upgraded -*- C++ -*-===//
//
// Exports from older torch-mlir and older TOSA releases use syntax that MLIR
// 22's parser rejects with a bare "expected ..." that does not say why. The
// tools scan the text once before parsing (InputGuard.h) and, for the common
// cases, either rewrite the old form into the one MLIR 22 form it stands for
// (printing a warning for each rewrite, at its line and column) or report it
// as an error that names the old syntax and gives the MLIR 22 form:
//
// Upgraded when unambiguous:
//   - `tensor.expand_shape` without `output_shape` and with a static result
//     type: `output_shape [d0, d1, ...]`, the result type's shape;
//   - `tosa.const` with `value = ...`: `values = ...`;
//   - `tosa.reshape {new_shape = ...}`, `tosa.tile {multiples = ...}`,
//     `tosa.slice {start = ..., size = ...}`: the integer lists become
//     `tosa.const_shape` operands;
//   - `tosa.mul {shift = N}`: a `tosa.const` `tensor<1xi8>` operand.
// Explained only (an error):
//   - `tensor.expand_shape` without `output_shape` and a dynamic result;
//   - `tosa.transpose` with a `perms` operand (MLIR 22: an attribute whose
//     values the text does not show);
//   - `tosa.pad` with a tensor `padding` operand;
//   - `tosa.clamp` with `min_fp`/`max_fp`/`min_int`/`max_int`;
//   - the TOSA attributes above in an op's generic form, and any of the
//     above when upgrading is turned off (--pipe-upgrade-input=false).
//
// A rewrite never adds or removes a line break, so the parser's diagnostics
// keep the file's line numbers (columns after a rewrite on the same line
// shift). New operands are defined on the op's own line, right before it,
// named `%__pipe_upgrade_N`. The scan skips strings, comments and the
// metadata section, and looks at ops in custom form one line at a time, as
// torch-mlir and mlir-opt print them.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_SUPPORT_INPUTUPGRADE_H
#define PIPE_SUPPORT_INPUTUPGRADE_H

#include "mlir/Support/LLVM.h"

#include <memory>

namespace llvm {
class MemoryBuffer;
} // namespace llvm

namespace mlir::pipe {

/// Scans `file` for the older syntax listed above. With `upgrade`, rewrites
/// what has one MLIR 22 form and prints `file:line:col: warning: ...` for
/// each rewrite; everything else found (all of it without `upgrade`) is
/// reported as `file:line:col: error: ...` to llvm::errs() and fails.
/// Returns the rewritten file (same buffer name), or null when nothing was
/// rewritten.
FailureOr<std::unique_ptr<llvm::MemoryBuffer>>
upgradeOlderSyntax(const llvm::MemoryBuffer &file, bool upgrade);

} // namespace mlir::pipe

#endif // PIPE_SUPPORT_INPUTUPGRADE_H
