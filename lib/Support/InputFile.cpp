//===- InputFile.cpp - Reading input files that end -----------------------===//

#include "pipe/Support/InputFile.h"

#include "llvm/Support/FileSystem.h"

using namespace mlir;

llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
pipe::readInputFile(llvm::StringRef path, bool isText,
                    bool requiresNullTerminator) {
  namespace fs = llvm::sys::fs;
  fs::file_status status;
  // A path that cannot be stat'ed is left to the open, which says why.
  if (path != "-" && !fs::status(path, status)) {
    switch (status.type()) {
    case fs::file_type::directory_file:
      return llvm::createStringError("is a directory");
    case fs::file_type::block_file:
    case fs::file_type::character_file:
    case fs::file_type::socket_file:
      return llvm::createStringError(
          "is a device, not a file (a device such as /dev/zero never ends)");
    default:
      break;
    }
  }
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFileOrSTDIN(path, isText, requiresNullTerminator);
  if (!buffer)
    return llvm::createStringError(buffer.getError(), "%s",
                                   buffer.getError().message().c_str());
  return std::move(*buffer);
}
