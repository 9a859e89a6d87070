//===- InputGuard.h - Reading untrusted IR without crashing -----*- C++ -*-===//
//
// Every tool that reads MLIR a user hands it (pipe-opt, pipe-train,
// pipe-compile, and the Python API through them) reads it through this file,
// so that hostile or damaged input ends in a diagnostic naming the file,
// never in a crash, a hang or a tool that carries on with a corrupted heap.
// Two layers:
//
//  1. checkInputText: a linear scan before parsing rejects what is known to
//     break the parser or what comes after it: MLIR bytecode (MLIR's reader
//     trusts its input), NUL bytes, nesting deeper than the stack allows,
//     aliases whose printed form explodes, and the known triggers of MLIR
//     22 parser bugs (resource blobs with an impossible alignment).
//     In between, older torch-mlir/TOSA syntax that MLIR 22 rejects is
//     upgraded or explained (InputUpgrade.h).
//  2. probeParse: MLIR's parser has bugs of its own that no pre-scan can
//     know in advance (a fuzzer found heap corruption on an error path, out
//     of memory and reads past the end of a truncated file). So the input
//     is parsed and verified first in a forked child with a fresh context;
//     only if that child ends normally does the tool parse it itself. A
//     child that dies by a signal is reported as the parser crashing on
//     this file. The child also frees everything it built, so that glibc's
//     consistency checks catch corruption that did not crash it.
//
// Parsing twice costs one extra parse; --pipe-contain-parse=false skips the
// child (for debugging the parser itself). Work that recurses per level of
// nesting runs on a thread with a large stack (runWithLargeStack), so that
// input within the nesting limit never depends on `ulimit -s`.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_SUPPORT_INPUTGUARD_H
#define PIPE_SUPPORT_INPUTGUARD_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <memory>
#include <string>

namespace llvm::cl {
class OptionCategory;
} // namespace llvm::cl

namespace llvm {
class MemoryBuffer;
class SourceMgr;
} // namespace llvm

namespace mlir {
class DialectRegistry;
class MLIRContext;
} // namespace mlir

namespace mlir::pipe {

/// What a tool accepts from an untrusted file.
struct InputLimits {
  /// Deepest nesting accepted (0: no limit). Real IR nests a few dozen
  /// levels; the worst construct measured needs ~2.2 KB of stack per level,
  /// so 1024 levels fit the large stack with room to spare.
  unsigned maxNesting = 1024;
  /// Largest growth accepted from replacing every alias use by its value,
  /// which is what the printer writes (0: no limit).
  uint64_t maxExpansion = uint64_t(1) << 30;
  /// Read MLIR bytecode (only trusted files: MLIR's reader is not safe on
  /// damaged ones).
  bool allowBytecode = false;
  /// Parse in a forked child first (crash containment).
  bool containParse = true;
  /// Rewrite older syntax that has one MLIR 22 form (InputUpgrade.h);
  /// otherwise it is only reported.
  bool upgradeSyntax = true;
};

/// Registers the limits as command-line options of a tool using
/// llvm::cl (--pipe-max-nesting, --pipe-max-expansion, --pipe-allow-bytecode,
/// --pipe-contain-parse, --pipe-upgrade-input) and returns them; call before
/// parsing the command line, read after. A tool that hides the options of
/// other categories from its --help passes its own, so that these show.
const InputLimits &
registerInputLimitOptions(llvm::cl::OptionCategory *category = nullptr);

/// Checks `file` before it is parsed; on failure prints
/// `file:line:col: error: ...` to llvm::errs().
LogicalResult checkInputText(const llvm::MemoryBuffer &file,
                             const InputLimits &limits);

/// Parses and verifies `file` (each chunk between `splitMarker` lines, if
/// one is given, as `-split-input-file` does) in a forked child with a
/// fresh context over `registry`. Fails, with `file: error: ...` on
/// llvm::errs() quoting the child's last diagnostic, only if the child did
/// not end normally; whether the input is valid is for the caller's own
/// parse to say.
LogicalResult probeParse(const llvm::MemoryBuffer &file,
                         const DialectRegistry &registry,
                         StringRef splitMarker = {});

/// How a contained run ended.
struct ContainedRun {
  /// A child was started (false: `error` says why not).
  bool started = false;
  /// `work` returned normally (and the heap was consistent after it).
  bool ok = false;
  /// Otherwise why not: "crashed (Segmentation fault)", "exited with status
  /// 3", or "cannot fork: ..." when no child could be started.
  std::string error;
  /// What the child printed (stdout and stderr), at most 64 KiB.
  std::string output;
};

/// Runs `work` in a forked child process and reports how it ended. Call it
/// while the process has one thread (or from the only thread that holds
/// locks `work` needs): the child has only the calling thread.
ContainedRun runContained(llvm::function_ref<void()> work);

/// Reads `path` ("-": standard input), checks it, upgrades or reports older
/// syntax (InputUpgrade.h) and probes its parse (if `limits.containParse`,
/// chunk by chunk with a `splitMarker`). Returns null after reporting the
/// error: the file, upgraded, is safe to parse otherwise.
std::unique_ptr<llvm::MemoryBuffer>
readUntrustedFile(StringRef path, const DialectRegistry &registry,
                  const InputLimits &limits, StringRef splitMarker = {});

/// Whether `file` is MLIR bytecode rather than text.
bool isBytecode(const llvm::MemoryBuffer &file);

/// After a bytecode input failed: MLIR's bytecode reader reports without
/// locations, and the older-syntax upgrades apply to text only.
void noteBytecodeFailure(StringRef name);

/// readUntrustedFile, then the parse into `context`, reporting diagnostics
/// through `sourceMgr`, which owns the buffer afterwards. Returns null
/// after reporting the error.
OwningOpRef<ModuleOp> parseUntrustedFile(StringRef path, MLIRContext &context,
                                         llvm::SourceMgr &sourceMgr,
                                         const InputLimits &limits);

/// Runs `work` on a thread with a 256 MiB stack (only the pages used are
/// committed), and gives threads created later (MLIR's pool) 64 MiB.
void runWithLargeStack(llvm::function_ref<void()> work);

/// Prints `file:line:col: error: message` for byte `offset` of `file` in
/// the format of MLIR's diagnostics, without quoting the line (it may be
/// megabytes long), and fails.
LogicalResult reportAtOffset(const llvm::MemoryBuffer &file, size_t offset,
                             const llvm::Twine &message);

/// Prints `file:line:col: SEVERITY: message` for byte `offset` of `file`
/// (reportAtOffset with any severity: "warning", "note").
void printAtOffset(const llvm::MemoryBuffer &file, size_t offset,
                   StringRef severity, const llvm::Twine &message);

/// One past the closing quote of the string literal that starts at
/// `text[begin]` (a `"`), or npos if the text ends inside it.
size_t endOfStringLiteral(StringRef text, size_t begin);

} // namespace mlir::pipe

#endif // PIPE_SUPPORT_INPUTGUARD_H
