//===- FuzzManifest.cpp - libFuzzer: the program manifest parser ----------===//
//
// pipe_rt::parseManifest on arbitrary text (the manifest is a C string in a
// compiled program, so the input is cut at its first NUL). Every error must
// name a line or the manifest; an accepted manifest's references must be in
// range, as the executor indexes with them unchecked.
//
//===----------------------------------------------------------------------===//

#include "../../lib/Runtime/Manifest.h"

#include <cstdlib>
#include <string>

using namespace pipe_rt;

namespace {
bool inRange(int v, size_t n) { return v >= 0 && size_t(v) < n; }
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  Manifest m;
  std::string error;
  if (!parseManifest(text.c_str(), m, error)) {
    if (error.rfind("manifest", 0) != 0)
      std::abort();
    return 0;
  }
  for (const ParamInfo &p : m.params)
    if (!inRange(p.type, m.types.size()))
      std::abort();
  for (int t : m.valueTypes)
    if (!inRange(t, m.types.size()))
      std::abort();
  for (const RunInfo &r : m.runs) {
    if (!inRange(r.forward, m.functions.size()))
      std::abort();
    for (int v : r.inputs)
      if (!inRange(v, m.valueTypes.size()))
        std::abort();
    for (int v : r.outputs)
      if (!inRange(v, m.valueTypes.size()))
        std::abort();
  }
  for (const StageInfo &s : m.stages)
    for (int r : s.runs)
      if (!inRange(r, m.runs.size()))
        std::abort();
  for (const ScheduleInfo &x : m.schedules)
    if (x.programs.size() != size_t(x.devices) ||
        x.owns.size() != m.stages.size())
      std::abort();
  return 0;
}
