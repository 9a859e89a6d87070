//===- OutputFile.h - Outputs checked first, written atomically -*- C++ -*-===//
//
// Private to the runtime. What the trainer writes for the user (checkpoints,
// weights, the log, trace and profile) must not be lost or half-written:
// every path is checked before any work starts, so that a typo does not cost
// a training run, and every file is written to a temporary in the same
// directory, fsync-ed and renamed over the path, so that a crash, kill -9 or
// full disk leaves the previous file intact.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_LIB_RUNTIME_OUTPUTFILE_H
#define PIPE_LIB_RUNTIME_OUTPUTFILE_H

#include <string>

namespace pipe_rt {

/// How an output is written.
enum class OutputKind {
  /// A temporary in the same directory renamed over the path: the path must
  /// be a regular file or not exist, in a writable directory.
  Replaced,
  /// Written in place line by line (the JSON log): the path may also be a
  /// device or a pipe (/dev/stdout), which must be writable.
  Streamed,
};

/// Checks that `path`, the value of `flag`, can be written: not empty, not a
/// directory, in an existing directory this process may write (Replaced),
/// or an existing writable file (Streamed). The error names the flag, the
/// path and the reason.
bool checkOutputPath(const std::string &flag, const std::string &path,
                     OutputKind kind, std::string &error);

/// Whether `a` and `b` name one file: the same path, or two paths of one
/// existing file (links, `./x` and `x`).
bool isSameFile(const std::string &a, const std::string &b);

/// The temporary a write of `path` uses: `path.tmp.<pid>`.
std::string temporaryPath(const std::string &path);

/// Removes the temporaries of `path` (`path.tmp.<pid>`) whose process no
/// longer exists: a writer killed while writing leaves its temporary
/// behind, and a run with a checkpoint every step would pile them up.
void removeStaleTemporaries(const std::string &path);

/// Fails unless `path` is absent or a regular file: an atomic write renames
/// a temporary over it, which would turn /dev/full or a pipe into a regular
/// file.
bool checkReplaceable(const std::string &path, std::string &error);

/// Writes `bytes` to `path` atomically (temporary, fsync, rename, fsync of
/// the directory), after removing stale temporaries. On error the
/// temporary is removed, `path` is unchanged and `error` names the path and
/// the reason.
bool writeFileAtomically(const std::string &path, const std::string &bytes,
                         std::string &error);

} // namespace pipe_rt

#endif // PIPE_LIB_RUNTIME_OUTPUTFILE_H
