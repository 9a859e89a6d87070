//===- InputFile.h - Reading input files that end ---------------*- C++ -*-===//
//
// Every file the compiler tools read whole (IR, device models, cost tables,
// safetensors, name lists) goes through here, so that a device such as
// /dev/zero, which never ends, is an error naming the file instead of a
// read that takes all memory.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_SUPPORT_INPUTFILE_H
#define PIPE_SUPPORT_INPUTFILE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <memory>

namespace mlir::pipe {

/// Reads `path` whole ("-": standard input). Regular files and pipes are
/// read; a directory or a device is refused with a message that says which
/// (without the path, which the caller's message names).
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readInputFile(llvm::StringRef path, bool isText,
              bool requiresNullTerminator = true);

} // namespace mlir::pipe

#endif // PIPE_SUPPORT_INPUTFILE_H
