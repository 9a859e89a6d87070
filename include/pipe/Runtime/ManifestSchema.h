//===- ManifestSchema.h - The program manifest's records ---------*- C++
//-*-===//
//
// The manifest is the one description of a compiled program that the
// compiler (PipeToHost) writes and the runtime (lib/Runtime/Manifest.cpp)
// reads; the runtime's tests write theirs through the same writer. Plain
// C++17, no MLIR or LLVM: the runtime builds without them.
//
// Text: one record per line, fields separated by single spaces, names
// without whitespace, integers in decimal. Line 1 is
// `pipe-program <version>` (kManifestVersion). Then, in this order (the ids
// of each record kind dense, 0-based and in order; device/ps/owns follow
// their schedule):
//
//   type <tid> <dtype> <rank> <dim>...          dtype: f32 f64 i64 i32 i1
//   param <pid> <name> <tid> <trainable 0|1>
//   value <vid> <tid>                            a graph SSA value
//   input <k> <vid>                              graph argument k (data)
//   range <k> <bound> <nexempt> <v>...           optional, integer inputs:
//       each element of input k is in [0, bound) or one of the exempt
//       values (pipe.index_bound / pipe.index_exempt, docs/host-lowering.md)
//   loss <vid> <seed>                            scalar loss, its cotangent
//   metric <vid> <name>                          optional, after the loss: a
//       task metric, i64 [2] counts [hits, counted] (pipe.metric)
//   function <fid> <symbol> <nargs> <tid>... <nresults> <tid>...
//   run <rid> <name> <forward-fid> <bwd-input-fid|-1> <bwd-weight-fid|-1>
//       <nsaved> <nparams> <pid>... <ninputs> <vid>... <noutputs> <vid>...
//       <ndiff-inputs> <idx>... <ndiff-results> <idx>... <ndiff-params>
//       <idx>...                                (one line)
//   fused <rid> <fid>                          optional: one function for a
//                                                full backward of the run
//   stage <sid> <name> <device> <nruns> <rid>...   runs in graph order
//   edge <producer-sid> <consumer-sid> <nvalues> <vid>...  payload order
//   schedule <xid> <name> <kind> <devices> <microbatches> <steps>
//       <forward-only 0|1>                       (one line)
//   device <xid> <d> <capacity-bytes> <symbol>
//   ps <xid> <sid>                               stage uses the param server
//   versions <xid>                               schedule keeps weight versions
//   replicas <xid> <count>                       optional: data-parallel
//       copies of the schedule (pipe.placement replicas; 1 when absent)
//   peer_order <xid>                             every device pair's
//       transfers are issued in the same order on both sides
//   owns <xid> <sid> <nparams> <pid>...          params its update updates
//   end
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_RUNTIME_MANIFESTSCHEMA_H
#define PIPE_RUNTIME_MANIFESTSCHEMA_H

#include "pipe/Runtime/Program.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace pipe_rt {

/// The first field of line 1.
constexpr const char *kManifestMagic = "pipe-program";
/// The format version line 1 carries, bumped whenever a record is added or
/// changes meaning; the reader refuses every other version, so a runtime
/// never half-reads a manifest of another format. It is independent of
/// PIPE_RT_ABI_VERSION (the entry points and exported symbols).
///   1: the first schema.
///   2: `versions` (a schedule keeps weight versions).
///   3: `replicas` (data-parallel copies of a schedule).
///   4: `metric` (task metrics beside the loss).
///   5: `peer_order` (transfers matchable without tags).
constexpr int kManifestVersion = 5;

/// The checksum (64-bit FNV-1a) of a manifest's text, which a program
/// exports as `pipe_program_manifest_checksum` beside it: the runtime
/// refuses a manifest whose bytes were damaged after compiling (a byte flip
/// in an artifact can otherwise still parse, and train something else).
inline uint64_t manifestChecksum(const char *text) {
  uint64_t hash = 1469598103934665603ull;
  for (const char *c = text; *c; ++c)
    hash = (hash ^ uint8_t(*c)) * 1099511628211ull;
  return hash;
}

/// Record kinds in section order: a record may not follow one of a later
/// section. device, ps and owns share the schedule's section (one group per
/// schedule).
enum class ManifestSection {
  Type,
  Param,
  Value,
  Input,
  Range,
  Loss,
  Function,
  Run,
  Fused,
  Stage,
  Edge,
  Schedule,
  End,
};
constexpr int kNumManifestSections = int(ManifestSection::End) + 1;

/// The section of record `keyword`, or -1 for an unknown record.
inline int getManifestSection(const std::string &keyword) {
  static const std::pair<const char *, ManifestSection> records[] = {
      {"type", ManifestSection::Type},
      {"param", ManifestSection::Param},
      {"value", ManifestSection::Value},
      {"input", ManifestSection::Input},
      {"range", ManifestSection::Range},
      {"loss", ManifestSection::Loss},
      {"metric", ManifestSection::Loss},
      {"function", ManifestSection::Function},
      {"run", ManifestSection::Run},
      {"fused", ManifestSection::Fused},
      {"stage", ManifestSection::Stage},
      {"edge", ManifestSection::Edge},
      {"schedule", ManifestSection::Schedule},
      {"device", ManifestSection::Schedule},
      {"ps", ManifestSection::Schedule},
      {"versions", ManifestSection::Schedule},
      {"replicas", ManifestSection::Schedule},
      {"peer_order", ManifestSection::Schedule},
      {"owns", ManifestSection::Schedule},
      {"end", ManifestSection::End}};
  for (const auto &[name, section] : records)
    if (keyword == name)
      return int(section);
  return -1;
}

/// A task metric's name as a `metric` record (and the trainer's JSON log,
/// `"eval_<name>"`) carries it: letters, digits, '_', '-' and '.', at least
/// one.
inline bool isMetricName(const std::string &name) {
  if (name.empty())
    return false;
  for (char c : name)
    if (!(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') &&
        !(c >= '0' && c <= '9') && c != '_' && c != '-' && c != '.')
      return false;
  return true;
}

/// A `run` record.
struct ManifestRun {
  int id = 0;
  std::string name;
  int forward = 0, bwdInput = -1, bwdWeight = -1;
  int numSaved = 0;
  std::vector<int64_t> params, inputs, outputs;
  std::vector<int64_t> diffInputs, diffResults, diffParams;
};

/// Writes a manifest record by record. Records may be added in any order
/// across kinds (the compiler discovers types while it writes functions);
/// str() puts them in section order. Within a kind, records keep the order
/// they were added in, which the reader requires to match their ids.
class ManifestWriter {
public:
  void type(int id, const std::string &dtype,
            const std::vector<int64_t> &shape);
  void param(int id, const std::string &name, int type, bool trainable);
  void value(int id, int type);
  void input(int k, int value);
  void range(int k, int64_t bound, const std::vector<int64_t> &exempt);
  void loss(int value, double seed);
  void metric(int value, const std::string &name);
  void function(int id, const std::string &symbol,
                const std::vector<int64_t> &args,
                const std::vector<int64_t> &results);
  void run(const ManifestRun &run);
  void fused(int run, int function);
  void stage(int id, const std::string &name, int device,
             const std::vector<int64_t> &runs);
  void edge(int producer, int consumer, const std::vector<int64_t> &values);
  void schedule(int id, const std::string &name, const std::string &kind,
                int devices, int microbatches, int steps, bool forwardOnly);
  void device(int schedule, int device, uint64_t capacity,
              const std::string &symbol);
  void ps(int schedule, int stage);
  void versions(int schedule);
  void replicas(int schedule, int count);
  void peerOrder(int schedule);
  void owns(int schedule, int stage, const std::vector<int64_t> &params);

  /// The whole manifest: version line, records, `end`.
  std::string str() const;

private:
  /// Starts a record of `section` and returns its line buffer.
  std::string &record(ManifestSection section, const char *keyword);

  std::string sections[kNumManifestSections];
};

} // namespace pipe_rt

#endif // PIPE_RUNTIME_MANIFESTSCHEMA_H
