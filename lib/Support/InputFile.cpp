//===- InputFile.cpp - Reading input files that end -----------------------===//

#include "pipe/Support/InputFile.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Process.h"

using namespace mlir;

llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
pipe::readInputFile(llvm::StringRef path, bool isText,
                    bool requiresNullTerminator) {
  namespace fs = llvm::sys::fs;
  fs::file_status status;
  // Standard input may be a terminal (typed input ends), not another
  // device (`< /dev/zero` never ends).
  bool isStdin = path == "-";
  std::error_code statError =
      isStdin ? (llvm::sys::Process::StandardInIsUserInput()
                     ? std::make_error_code(std::errc::not_supported)
                     : fs::status(0, status))
              : fs::status(path, status);
  // A path that cannot be stat'ed is left to the open, which says why.
  if (!statError) {
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
