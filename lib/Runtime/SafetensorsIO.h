//===- SafetensorsIO.h - Minimal safetensors reader/writer ------*- C++ -*-===//
//
// Private to the runtime. The project's lib/Support safetensors code uses
// LLVM, which the runtime may not link, so this is a small standalone
// reader/writer with its own JSON parser (just enough for the header:
// strings with escapes, integers, arrays, objects).
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_RUNTIME_SAFETENSORSIO_H
#define PIPE_RUNTIME_SAFETENSORSIO_H

#include <cstdint>
#include <string>
#include <vector>

namespace pipe_rt {

struct StTensor {
  std::string name;
  std::string dtype; // "F32", "I64", ...
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0; // byte range in StFile::data
};

struct StFile {
  std::vector<StTensor> tensors;
  std::vector<unsigned char> data; // everything after the header

  const StTensor *find(const std::string &name) const;
};

/// Bytes per element of a safetensors dtype, 0 if unknown.
size_t stDtypeSize(const std::string &dtype);

/// The largest JSON header the reader accepts, in bytes (the reference
/// Python library's limit): a corrupt length cannot make it read or allocate
/// more than this for the header.
constexpr uint64_t kStMaxHeaderBytes = 100000000;

/// Validates the safetensors file `bytes` and copies it into `out`: header
/// length within the file and kStMaxHeaderBytes, a header of strict UTF-8
/// JSON naming each tensor once with exactly dtype, shape and data_offsets
/// (plus an optional "__metadata__" object of strings, keys unique), known
/// dtypes, byte sizes consistent with dtype and shape without overflow, and
/// tensors tiling the data exactly (no overlap, no gap, nothing after the
/// last). On error returns false with a message naming `name` and the tensor
/// and field at fault in `error`, and leaves `out` unchanged.
bool parseSafetensors(const std::string &name, const unsigned char *bytes,
                      size_t size, StFile &out, std::string &error);

/// Reads `path` and validates it as parseSafetensors does.
bool readSafetensors(const std::string &path, StFile &out, std::string &error);

/// One tensor to write: `data` points to numel * dtype-size bytes.
struct StWriteTensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  const void *data;
};

/// Writes `tensors` atomically: a temporary file in the same directory,
/// fsync, rename over `path`, fsync of the directory.
bool writeSafetensors(const std::string &path,
                      const std::vector<StWriteTensor> &tensors,
                      std::string &error);

} // namespace pipe_rt

#endif // PIPE_RUNTIME_SAFETENSORSIO_H
