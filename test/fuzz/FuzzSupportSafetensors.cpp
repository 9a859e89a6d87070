//===- FuzzSupportSafetensors.cpp - libFuzzer: the compiler's reader ------===//
//
// mlir::pipe::SafetensorsFile (weights read by pipe-opt and pipe-compile) on
// arbitrary bytes. An accepted file must hold what the reader promised: each
// tensor's view inside the buffer with the size of its dtype and shape, the
// views tiling the data in file order, every name found by lookup().
//
//===----------------------------------------------------------------------===//

#include "pipe/Support/Safetensors.h"

#include <cstdlib>

using namespace mlir::pipe;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  llvm::Expected<SafetensorsFile> file = SafetensorsFile::parse(
      llvm::MemoryBuffer::getMemBuffer(bytes, "fuzz.safetensors",
                                       /*RequiresNullTerminator=*/false));
  if (!file) {
    std::string error = llvm::toString(file.takeError());
    if (!llvm::StringRef(error).starts_with("fuzz.safetensors: "))
      std::abort(); // every error names the file
    return 0;
  }
  const char *next = nullptr;
  for (const SafetensorsTensor &t : file->getTensors()) {
    uint64_t bytesNeeded = getDTypeBytes(t.dtype);
    for (int64_t d : t.shape)
      bytesNeeded *= uint64_t(d);
    if (t.data.size() != bytesNeeded || t.data.begin() < bytes.begin() ||
        t.data.end() > bytes.end() || (next && t.data.begin() != next) ||
        file->lookup(t.name) != &t)
      std::abort();
    next = t.data.end();
  }
  if (next && next != bytes.end())
    std::abort();
  return 0;
}
