//===- OutputFile.cpp - Writing outputs that are never half-written -------===//

#include "pipe/Support/OutputFile.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Signals.h"

using namespace mlir;
using namespace llvm;

static Error cannotWrite(StringRef path, std::error_code ec) {
  return createStringError(ec, "cannot write " + path + ": " + ec.message());
}

/// `path` absolute, without `.` and `..`, and with its directory's links
/// resolved where the directory exists: one spelling per file.
static SmallString<256> canonicalPath(StringRef path) {
  SmallString<256> absolute(path);
  sys::fs::make_absolute(absolute);
  sys::path::remove_dots(absolute, /*remove_dot_dot=*/true);
  SmallString<256> directory;
  if (!sys::fs::real_path(sys::path::parent_path(absolute), directory)) {
    sys::path::append(directory, sys::path::filename(absolute));
    return directory;
  }
  return absolute;
}

bool pipe::isSameFile(StringRef a, StringRef b) {
  bool same = false;
  if (a == b || (!sys::fs::equivalent(a, b, same) && same))
    return true;
  // Outputs usually do not exist yet: `./x` and `x` are still one file.
  return canonicalPath(a) == canonicalPath(b);
}

Error pipe::checkOutputPath(StringRef path) {
  if (path == "-")
    return Error::success();
  if (path.empty())
    return createStringError(inconvertibleErrorCode(),
                             "an empty output path was given");
  if (sys::fs::is_directory(path))
    return createStringError(inconvertibleErrorCode(),
                             "cannot write " + path + ": it is a directory");
  SmallString<128> directory(sys::path::parent_path(path));
  if (directory.empty())
    directory = ".";
  if (!sys::fs::is_directory(directory))
    return createStringError(inconvertibleErrorCode(),
                             "cannot write " + path + ": the directory " +
                                 directory + " does not exist");
  if (sys::fs::exists(path))
    return sys::fs::access(path, sys::fs::AccessMode::Write)
               ? cannotWrite(path, std::make_error_code(
                                       std::errc::permission_denied))
               : Error::success();
  if (sys::fs::access(directory, sys::fs::AccessMode::Write))
    return createStringError(inconvertibleErrorCode(),
                             "cannot write " + path + ": the directory " +
                                 directory + " is not writable");
  return Error::success();
}

/// Closes `os` and turns a write error into an Error naming `path`.
static Error finish(raw_fd_ostream &os, StringRef path) {
  os.close();
  if (std::error_code ec = os.error()) {
    os.clear_error();
    return cannotWrite(path, ec);
  }
  return Error::success();
}

/// Runs `write` on `os` and closes it; the first failure names `path`.
static Error writeAndClose(raw_fd_ostream &os, StringRef path,
                           llvm::function_ref<Error(raw_ostream &)> write) {
  Error written = write(os);
  Error closed = finish(os, path);
  if (!written)
    return closed;
  consumeError(std::move(closed));
  return createStringError(inconvertibleErrorCode(),
                           "cannot write " + path + ": " +
                               toString(std::move(written)));
}

Error pipe::writeOutputFile(StringRef path,
                            llvm::function_ref<void(raw_ostream &)> write) {
  return writeFallibleOutputFile(path, [&](raw_ostream &os) -> Error {
    write(os);
    return Error::success();
  });
}

Error pipe::writeFallibleOutputFile(
    StringRef path, llvm::function_ref<Error(raw_ostream &)> write) {
  if (path == "-") {
    if (Error error = write(outs()))
      return createStringError(inconvertibleErrorCode(),
                               "cannot write standard output: " +
                                   toString(std::move(error)));
    outs().flush();
    if (std::error_code ec = outs().error()) {
      outs().clear_error();
      return cannotWrite("standard output", ec);
    }
    return Error::success();
  }
  // A link is written through: the temporary replaces the file it names,
  // never the link (nor /dev/stdout, a link to the process's output).
  SmallString<256> resolved;
  if (sys::fs::is_symlink_file(path) && !sys::fs::real_path(path, resolved))
    path = resolved;
  // Devices and pipes are written in place: renaming a temporary over
  // /dev/full would replace the device with a regular file. Directories
  // are left to checkOutputPath's error.
  sys::fs::file_status status;
  if (!sys::fs::status(path, status) &&
      status.type() != sys::fs::file_type::regular_file &&
      status.type() != sys::fs::file_type::directory_file) {
    std::error_code ec;
    raw_fd_ostream os(path, ec);
    if (ec)
      return cannotWrite(path, ec);
    return writeAndClose(os, path, write);
  }
  if (Error error = checkOutputPath(path))
    return error;
  int fd;
  SmallString<128> temporary;
  if (std::error_code ec =
          sys::fs::createUniqueFile(path + ".tmp-%%%%%%", fd, temporary))
    return cannotWrite(path, ec);
  FileRemover removeTemporary(temporary);
  // A signal while the passes run (the write can take minutes) must not
  // leave the temporary behind either.
  sys::RemoveFileOnSignal(temporary);
  auto keepOnSignal =
      llvm::make_scope_exit([&] { sys::DontRemoveFileOnSignal(temporary); });
  raw_fd_ostream os(fd, /*shouldClose=*/true);
  if (Error error = writeAndClose(os, path, write))
    return error;
  if (std::error_code ec = sys::fs::rename(temporary, path))
    return cannotWrite(path, ec);
  removeTemporary.releaseFile();
  return Error::success();
}
