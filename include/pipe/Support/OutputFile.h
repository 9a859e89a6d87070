//===- OutputFile.h - Writing outputs that are never half-written -*- C++ -*-===//
//
// Every file the compiler tools write (IR, reports, traces, summaries)
// goes through here, so that a full disk, a missing directory or
// /dev/full is an error naming the file, never a nameless fatal
// "IO failure" from a stream's destructor, and never a truncated file
// left where a good one was.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_SUPPORT_OUTPUTFILE_H
#define PIPE_SUPPORT_OUTPUTFILE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir {
class Operation;
} // namespace mlir

namespace mlir::pipe {

/// Fails with "PATH: reason" unless `path` can be written: "-" (standard
/// output) always can; otherwise it must not be a directory and its
/// directory must exist and be writable. For checking every output before
/// hours of work rather than after.
llvm::Error checkOutputPath(llvm::StringRef path);

/// Whether `a` and `b` name one file: the same path, or two paths of one
/// existing file (links, `./x` and `x`), so that no output replaces another
/// output or an input.
bool isSameFile(llvm::StringRef a, llvm::StringRef b);

/// Fails unless a pass may write its report to `path`: not onto the file
/// the IR was read from (the one setInputIRPath named, else the location
/// of `op`'s module, as the parser sets it) nor onto one of `inputs`, the
/// (option, path) pairs of other files the pass reads. The input IR is read
/// whole before the passes run, so writing it would silently replace the
/// user's only copy.
void setInputIRPath(llvm::StringRef path);
llvm::Error checkReportPath(
    llvm::StringRef path, mlir::Operation *op,
    llvm::ArrayRef<std::pair<llvm::StringRef, llvm::StringRef>> inputs = {});

/// Writes `path` through `write`: "-" to standard output; a regular file
/// through a temporary file next to it that replaces `path` only once every
/// byte is written (so a failure keeps the old file); anything else
/// (/dev/null, /dev/full, a pipe) in place, never replaced by a regular
/// file. Fails with "cannot write PATH: reason".
llvm::Error writeOutputFile(llvm::StringRef path,
                            llvm::function_ref<void(llvm::raw_ostream &)> write);

/// The same for a `write` that can fail: its error (prefixed with the path)
/// is returned and `path` is left as it was.
llvm::Error writeFallibleOutputFile(
    llvm::StringRef path,
    llvm::function_ref<llvm::Error(llvm::raw_ostream &)> write);

} // namespace mlir::pipe

#endif // PIPE_SUPPORT_OUTPUTFILE_H
