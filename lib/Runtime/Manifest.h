//===- Manifest.h - Parsed program manifest ---------------------*- C++ -*-===//
//
// Private to the runtime: the manifest of a compiled program (schema in
// include/pipe/Runtime/ManifestSchema.h) as plain structs, plus the derived data
// flow (who produces and who consumes each value) the executor needs.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_RUNTIME_MANIFEST_H
#define PIPE_RUNTIME_MANIFEST_H

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace pipe_rt {

enum class DType { F32, F64, I64, I32, I1 };

/// The safetensors spelling of `dtype` ("F32", ..., "BOOL").
const char *safetensorsDType(DType dtype);

/// "[2, 16]": a shape as messages show it.
std::string formatShape(const std::vector<int64_t> &shape);

struct TypeInfo {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  int64_t numel = 1;
  size_t elemSize = 4; // storage bytes (i1 is a byte, as in MLIR memrefs)
  uint64_t bytes() const { return uint64_t(numel) * elemSize; }
  bool isFloat() const { return dtype == DType::F32 || dtype == DType::F64; }
};

/// What a graph input's integer elements must be (a `range` record): in
/// [0, bound), or one of `exempt` (values the model tests for and never uses
/// as an index, e.g. an ignore_index of -100). bound 0: no range known.
struct InputRange {
  int64_t bound = 0;
  std::vector<int64_t> exempt;
  bool allows(int64_t v) const {
    return bound == 0 || (v >= 0 && v < bound) ||
           std::find(exempt.begin(), exempt.end(), v) != exempt.end();
  }
  /// "[0, 64)" or "[0, 64) or -100".
  std::string describe() const;
};

struct ParamInfo {
  std::string name;
  int type = 0;
  bool trainable = false;
};

struct FunctionInfo {
  std::string symbol;
  std::vector<int> args, results; // type ids
};

struct RunInfo {
  std::string name;
  int forward = -1, bwdInput = -1, bwdWeight = -1;
  /// Both parts in one function (a `fused` record), or -1.
  int bwdFused = -1;
  int numSaved = 0;
  /// Type ids of the backward functions' arguments and of the two parts'
  /// results (checked against every backward function).
  std::vector<int> bwdArgs, bwdInputResults, bwdWeightResults;
  std::vector<int> params, inputs, outputs;             // param ids, value ids
  std::vector<int> diffInputs, diffResults, diffParams; // indices
};

struct StageInfo {
  std::string name;
  int device = 0;
  std::vector<int> runs;
  std::vector<int> params; // every param its runs read, ascending
};

struct ScheduleInfo {
  std::string name, kind;
  int devices = 1, microbatches = 1, steps = 1;
  bool forwardOnly = false;
  bool keepsWeightVersions = false; // a `versions` record
  int replicas = 1;                 // a `replicas` record
  /// Every device pair issues its transfers in the same order on both
  /// sides (a `peer_order` record): transports without tags can run it.
  bool peerOrder = false;
  std::vector<uint64_t> capacity;     // per device, 0 = unlimited
  std::vector<std::string> programs;  // per device symbol
  std::vector<bool> psStage;          // per stage
  std::vector<std::vector<int>> owns; // per stage: params its update updates

  /// Some stage keeps its weights on the host parameter server.
  bool hasPsStages() const {
    return std::find(psStage.begin(), psStage.end(), true) != psStage.end();
  }
  /// A parameter-server training schedule of several steps per run: its
  /// host updates run beside the device by design (overlapped or delayed).
  bool overlapsHostUpdates() const {
    return hasPsStages() && steps > 1 && !forwardOnly;
  }
};

struct Manifest {
  int formatVersion = 0;
  std::vector<TypeInfo> types;
  std::vector<ParamInfo> params;
  std::vector<int> valueTypes; // value id -> type id
  std::vector<int> inputs;     // graph input k -> value id
  std::vector<InputRange> inputRanges; // graph input k -> its range
  int lossValue = -1;
  double lossSeed = 1;
  /// Task metrics: counts [hits, counted] (i64 [2]) the trainer reports as
  /// hits / counted.
  struct Metric {
    std::string name;
    int value = -1;
  };
  std::vector<Metric> metrics;
  std::vector<FunctionInfo> functions;
  std::vector<RunInfo> runs;
  std::vector<StageInfo> stages;
  std::map<std::pair<int, int>, std::vector<int>> edges; // (prod, cons)
  std::vector<ScheduleInfo> schedules;

  // Derived.
  std::vector<int> inputIndex; // value id -> graph input k, or -1
  std::vector<int> producer;   // value id -> stage producing it, or -1
  /// value id -> stages other than its producer that read it.
  std::vector<std::vector<int>> consumers;
  /// param id -> stages reading it.
  std::vector<std::vector<int>> paramReaders;
};

/// Parses and checks `text` (ids dense and in order, references in range,
/// function signatures matching the runs, the format version
/// kManifestVersion). Errors read "manifest line N: ...".
bool parseManifest(const char *text, Manifest &out, std::string &error);

} // namespace pipe_rt

#endif // PIPE_RUNTIME_MANIFEST_H
