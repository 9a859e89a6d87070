//===- FuzzRuntimeSafetensors.cpp - libFuzzer: the runtime's reader -------===//
//
// The runtime's safetensors reader (weights, checkpoints, data files) on
// arbitrary bytes. An accepted file must hold what the reader promised: every
// tensor's span inside the data, its size matching dtype and shape, the spans
// tiling the data, and every name found again by StFile::find.
//
//===----------------------------------------------------------------------===//

#include "../../lib/Runtime/SafetensorsIO.h"

#include <cstdlib>

using namespace pipe_rt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  StFile file;
  std::string error;
  if (!parseSafetensors("fuzz.safetensors", data, size, file, error)) {
    if (error.rfind("fuzz.safetensors: ", 0) != 0)
      std::abort(); // every error names the file
    return 0;
  }
  uint64_t covered = 0;
  for (const StTensor &t : file.tensors) {
    uint64_t numel = 1;
    for (int64_t d : t.shape)
      numel *= uint64_t(d);
    if (t.begin > t.end || t.end > file.data.size() ||
        numel * stDtypeSize(t.dtype) != t.end - t.begin ||
        file.find(t.name) != &t)
      std::abort();
    covered += t.end - t.begin;
  }
  if (covered != file.data.size())
    std::abort();
  return 0;
}
