//===- Safetensors.h - Safetensors reader and writer ------------*- C++ -*-===//
//
// Reads and writes the safetensors format that PyTorch-side tooling uses to
// exchange weights:
//
//   [8 bytes: N, little-endian u64] [N bytes: JSON header] [data buffer]
//
// The header is a JSON object mapping each tensor name to
// {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]} (offsets
// relative to the start of the data buffer), plus an optional
// "__metadata__" object of string to string.
//
// The reader validates everything before handing out views, so that callers
// can trust every tensor's byte span: see docs/safetensors.md for the rules.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_SUPPORT_SAFETENSORS_H
#define PIPE_SUPPORT_SAFETENSORS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace mlir::pipe {

/// The largest JSON header the reader accepts, in bytes (the reference
/// Python library's limit): a corrupt header length cannot make it parse
/// more than this.
constexpr uint64_t kSafetensorsMaxHeaderBytes = 100000000;

/// Element types of the safetensors format that the project handles.
enum class SafetensorsDType {
  F64,
  F32,
  F16,
  BF16,
  I64,
  I32,
  I16,
  I8,
  U8,
  Bool
};

/// The header spelling of `dtype` ("F32", "BF16", "BOOL", ...).
llvm::StringRef stringifyDType(SafetensorsDType dtype);
/// Parses a header spelling (case-sensitive, as the format requires).
std::optional<SafetensorsDType> parseDType(llvm::StringRef name);
/// Bytes per element (BOOL is one byte).
unsigned getDTypeBytes(SafetensorsDType dtype);

/// One tensor of a safetensors file.
struct SafetensorsTensor {
  std::string name;
  SafetensorsDType dtype;
  llvm::SmallVector<int64_t> shape;
  /// A view into the file's buffer, valid while the SafetensorsFile lives.
  /// Only byte-aligned: copy (memcpy) before reading wider elements unless
  /// the pointer is known to be suitably aligned.
  llvm::ArrayRef<char> data;

  /// Product of the dimensions (1 for a rank-0 tensor).
  int64_t getNumElements() const;
};

/// A validated, read-only safetensors file. Movable, not copyable; tensor
/// views stay valid across moves.
class SafetensorsFile {
public:
  /// Opens (memory-maps where the OS allows) and validates `path`. Errors
  /// name the file, the tensor and the field at fault.
  static llvm::Expected<SafetensorsFile> open(llvm::StringRef path);
  /// Validates an in-memory file; the buffer identifier is the file name in
  /// errors.
  static llvm::Expected<SafetensorsFile>
  parse(std::unique_ptr<llvm::MemoryBuffer> buffer);

  /// The tensor called `name`, or null.
  const SafetensorsTensor *lookup(llvm::StringRef name) const;
  /// All tensors in file order (by position in the data buffer).
  llvm::ArrayRef<SafetensorsTensor> getTensors() const { return tensors; }
  /// The "__metadata__" entries (empty if the header has none).
  const std::map<std::string, std::string> &getMetadata() const {
    return metadata;
  }
  /// The name used in errors (the path, or the buffer identifier).
  llvm::StringRef getFileName() const { return buffer->getBufferIdentifier(); }

private:
  SafetensorsFile() = default;

  std::unique_ptr<llvm::MemoryBuffer> buffer;
  std::vector<SafetensorsTensor> tensors;
  llvm::StringMap<unsigned> index;
  std::map<std::string, std::string> metadata;
};

/// Builds a safetensors file in memory and writes it out. The layout matches
/// the reference Python library: the header lists "__metadata__" first, is
/// padded with spaces to a multiple of 8 bytes, and tensors are stored by
/// decreasing element size, then by name, so each one is naturally aligned
/// within the (8-aligned) data buffer.
class SafetensorsWriter {
public:
  /// Adds a tensor; `data` is copied. Problems (duplicate names, a size that
  /// does not match the shape, negative dimensions) are reported by write()
  /// and writeAtomically().
  void addTensor(llvm::StringRef name, SafetensorsDType dtype,
                 llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<char> data);
  /// Sets a "__metadata__" entry (the last value for a key wins).
  void setMetadata(llvm::StringRef key, llvm::StringRef value);

  /// Writes the whole file to `os`. Validates first; writes nothing on error.
  llvm::Error write(llvm::raw_ostream &os) const;
  /// Writes to a temporary file in the directory of `path` and renames it
  /// into place, so `path` is either untouched or complete.
  llvm::Error writeAtomically(llvm::StringRef path) const;

private:
  struct PendingTensor {
    std::string name;
    SafetensorsDType dtype;
    llvm::SmallVector<int64_t> shape;
    std::vector<char> data;
  };
  std::vector<PendingTensor> tensors;
  std::map<std::string, std::string> metadata;
};

} // namespace mlir::pipe

#endif // PIPE_SUPPORT_SAFETENSORS_H
