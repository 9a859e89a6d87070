//===- Manifest.cpp - Parsing the program manifest ------------------------===//
//
// Strict by design: the manifest is generated, so anything unexpected is a
// compiler/runtime mismatch and is reported with its line number instead of
// being guessed around. The records and their order are ManifestSchema.h's,
// which the compiler's writer shares.
//
//===----------------------------------------------------------------------===//

#include "Manifest.h"
#include "pipe/Runtime/ManifestSchema.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <set>

namespace pipe_rt {
namespace {

class LineParser {
public:
  LineParser(std::vector<std::string> fields, int line, std::string &error)
      : fields(std::move(fields)), line(line), error(error) {}

  bool fail(const std::string &what) {
    if (error.empty())
      error = "manifest line " + std::to_string(line) + ": " + what;
    return false;
  }
  bool word(std::string &out, const char *what) {
    if (pos >= fields.size())
      return fail(std::string("missing ") + what);
    out = fields[pos++];
    return true;
  }
  bool integer(int64_t &out, const char *what, int64_t lo = INT64_MIN,
               int64_t hi = INT64_MAX) {
    std::string s;
    if (!word(s, what))
      return false;
    errno = 0;
    char *end = nullptr;
    long long v = std::strtoll(s.c_str(), &end, 10);
    if (s.empty() || *end || errno || (s[0] == '+') ||
        (s.size() > 1 && s[0] == '0') ||
        (s.size() > 2 && s.substr(0, 2) == "-0"))
      return fail(std::string("bad integer '") + s + "' for " + what);
    if (v < lo || v > hi)
      return fail(std::string(what) + " " + s + " out of range");
    out = v;
    return true;
  }
  bool integer(int &out, const char *what, int64_t lo, int64_t hi) {
    int64_t v;
    if (!integer(v, what, lo, hi))
      return false;
    out = int(v);
    return true;
  }
  /// <n> then n integers in [lo, hi].
  bool list(std::vector<int> &out, const char *what, int64_t lo, int64_t hi) {
    int n;
    if (!integer(n, what, 0, 1 << 24))
      return false;
    // Every element is a field of this line: a count beyond it fails before
    // anything is allocated for it.
    if (size_t(n) > fields.size() - pos)
      return fail("count " + std::to_string(n) + " of " + what +
                  "s exceeds the " + std::to_string(fields.size() - pos) +
                  " fields left on the line");
    out.resize(n);
    for (int &v : out)
      if (!integer(v, what, lo, hi))
        return false;
    return true;
  }
  bool id(size_t expected, const char *what) {
    int64_t v;
    if (!integer(v, what, 0))
      return false;
    if (uint64_t(v) != expected)
      return fail(std::string(what) + " " + std::to_string(v) +
                  ": ids must be dense and in order, expected " +
                  std::to_string(expected));
    return true;
  }
  bool done() {
    if (pos != fields.size())
      return fail("unexpected field '" + fields[pos] + "'");
    return true;
  }

private:
  std::vector<std::string> fields;
  size_t pos = 1;
  int line;
  std::string &error;
};

bool parseDType(const std::string &s, TypeInfo &t) {
  static const std::pair<const char *, std::pair<DType, size_t>> table[] = {
      {"f32", {DType::F32, 4}},
      {"f64", {DType::F64, 8}},
      {"i64", {DType::I64, 8}},
      {"i32", {DType::I32, 4}},
      {"i1", {DType::I1, 1}}};
  for (auto &[name, info] : table)
    if (s == name) {
      t.dtype = info.first;
      t.elemSize = info.second;
      return true;
    }
  return false;
}

} // namespace

const char *safetensorsDType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "F32";
  case DType::F64:
    return "F64";
  case DType::I64:
    return "I64";
  case DType::I32:
    return "I32";
  case DType::I1:
    return "BOOL";
  }
  return "?";
}

std::string InputRange::describe() const {
  std::string s = "[0, " + std::to_string(bound) + ")";
  for (int64_t v : exempt)
    s += " or " + std::to_string(v);
  return s;
}

std::string formatShape(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

bool parseManifest(const char *text, Manifest &m, std::string &error) {
  error.clear();
  m = Manifest();
  std::string all(text ? text : "");
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < all.size()) {
    size_t nl = all.find('\n', start);
    if (nl == std::string::npos)
      nl = all.size();
    lines.push_back(all.substr(start, nl - start));
    start = nl + 1;
  }
  int section = -1;
  bool ended = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    int lineNo = int(i) + 1;
    const std::string &line = lines[i];
    std::vector<std::string> fields;
    bool badSpace = line.empty() || line.back() == ' ';
    for (size_t p = 0; p < line.size();) {
      size_t sp = line.find(' ', p);
      if (sp == std::string::npos)
        sp = line.size();
      std::string f = line.substr(p, sp - p);
      if (f.empty() || f.find_first_of("\t\r\v\f") != std::string::npos)
        badSpace = true;
      fields.push_back(f);
      p = sp + 1;
    }
    LineParser lp(fields, lineNo, error);
    if (badSpace)
      return lp.fail("fields must be separated by single spaces");
    if (ended)
      return lp.fail("record after 'end'");
    const std::string &kind = fields[0];
    if (i == 0) {
      if (kind != kManifestMagic)
        return lp.fail("expected 'pipe-program <format-version>'");
      if (!lp.integer(m.formatVersion, "format version", 0, INT32_MAX) ||
          !lp.done())
        return false;
      // An older format lacks records this runtime relies on: the program
      // predates it and only recompiling helps.
      if (m.formatVersion < kManifestVersion)
        return lp.fail("format version " + std::to_string(m.formatVersion) +
                       " is older than this runtime's version " +
                       std::to_string(kManifestVersion) +
                       ": recompile the program with this release's "
                       "pipe-compile (or pipe-train)");
      if (m.formatVersion != kManifestVersion)
        return lp.fail("format version " + std::to_string(m.formatVersion) +
                       ", this runtime reads version " +
                       std::to_string(kManifestVersion) +
                       " (recompile the program)");
      continue;
    }
    int sec = getManifestSection(kind);
    if (sec < 0)
      return lp.fail("unknown record '" + kind + "'");
    if (sec < section)
      return lp.fail("record '" + kind + "' out of order");
    section = sec;
    int numTypes = int(m.types.size()), numValues = int(m.valueTypes.size());
    int numStages = int(m.stages.size());
    if (kind == "type") {
      TypeInfo t;
      std::string dt;
      int rank;
      if (!lp.id(m.types.size(), "type id") || !lp.word(dt, "dtype"))
        return false;
      if (!parseDType(dt, t))
        return lp.fail("unknown dtype '" + dt + "'");
      if (!lp.integer(rank, "rank", 0, 64))
        return false;
      for (int d = 0; d < rank; ++d) {
        int64_t dim;
        if (!lp.integer(dim, "dimension", 0, int64_t(1) << 40))
          return false;
        t.shape.push_back(dim);
        if (dim && t.numel > (int64_t(1) << 40) / dim)
          return lp.fail("type too large");
        t.numel *= dim;
      }
      if (!lp.done())
        return false;
      m.types.push_back(std::move(t));
    } else if (kind == "param") {
      ParamInfo p;
      int trainable;
      if (!lp.id(m.params.size(), "param id") || !lp.word(p.name, "name") ||
          !lp.integer(p.type, "type id", 0, numTypes - 1) ||
          !lp.integer(trainable, "trainable flag", 0, 1) || !lp.done())
        return false;
      p.trainable = trainable;
      for (const ParamInfo &q : m.params)
        if (q.name == p.name)
          return lp.fail("param name '" + p.name + "' repeated");
      if (p.trainable && m.types[p.type].dtype != DType::F32)
        return lp.fail("trainable param '" + p.name +
                       "' is not f32 (only f32 params can be trained)");
      m.params.push_back(std::move(p));
    } else if (kind == "value") {
      int t;
      if (!lp.id(m.valueTypes.size(), "value id") ||
          !lp.integer(t, "type id", 0, numTypes - 1) || !lp.done())
        return false;
      m.valueTypes.push_back(t);
    } else if (kind == "input") {
      int v;
      if (!lp.id(m.inputs.size(), "input index") ||
          !lp.integer(v, "value id", 0, numValues - 1) || !lp.done())
        return false;
      m.inputs.push_back(v);
      m.inputRanges.emplace_back();
    } else if (kind == "range") {
      // range <k> <bound> <nexempt> <v>...: graph input k's integer values.
      int k;
      InputRange r;
      if (!lp.integer(k, "input index", 0, int64_t(m.inputs.size()) - 1) ||
          !lp.integer(r.bound, "bound", 1))
        return false;
      int n;
      if (!lp.integer(n, "exempt count", 0, 64))
        return false;
      r.exempt.resize(n);
      for (int64_t &v : r.exempt)
        if (!lp.integer(v, "exempt value"))
          return false;
      if (!lp.done())
        return false;
      DType dt = m.types[m.valueTypes[m.inputs[k]]].dtype;
      if (dt != DType::I64 && dt != DType::I32)
        return lp.fail("range of input " + std::to_string(k) +
                       ", which is not an integer tensor");
      if (m.inputRanges[k].bound != 0)
        return lp.fail("second range of input " + std::to_string(k));
      m.inputRanges[k] = std::move(r);
    } else if (kind == "loss") {
      std::string seed;
      if (m.lossValue >= 0)
        return lp.fail("second 'loss' record");
      if (!lp.integer(m.lossValue, "value id", 0, numValues - 1) ||
          !lp.word(seed, "seed") || !lp.done())
        return false;
      char *end = nullptr;
      m.lossSeed = std::strtod(seed.c_str(), &end);
      if (*end || !std::isfinite(m.lossSeed))
        return lp.fail("bad seed '" + seed + "'");
      const TypeInfo &t = m.types[m.valueTypes[m.lossValue]];
      if (t.dtype != DType::F32 || t.numel != 1)
        return lp.fail("the loss must be an f32 scalar");
    } else if (kind == "metric") {
      Manifest::Metric metric;
      if (m.lossValue < 0)
        return lp.fail("'metric' before the 'loss' record");
      if (!lp.integer(metric.value, "value id", 0, numValues - 1) ||
          !lp.word(metric.name, "name") || !lp.done())
        return false;
      if (!isMetricName(metric.name))
        return lp.fail("metric name '" + metric.name +
                       "': letters, digits, '_', '-' and '.' only");
      const TypeInfo &t = m.types[m.valueTypes[metric.value]];
      if (t.dtype != DType::I64 || t.shape != std::vector<int64_t>{2})
        return lp.fail("metric '" + metric.name +
                       "' must be an i64 [2] tensor of counts");
      for (const Manifest::Metric &other : m.metrics)
        if (other.name == metric.name || other.value == metric.value)
          return lp.fail("second metric '" + metric.name + "'");
      m.metrics.push_back(std::move(metric));
    } else if (kind == "function") {
      FunctionInfo f;
      if (!lp.id(m.functions.size(), "function id") ||
          !lp.word(f.symbol, "symbol") ||
          !lp.list(f.args, "argument type", 0, numTypes - 1) ||
          !lp.list(f.results, "result type", 0, numTypes - 1) || !lp.done())
        return false;
      m.functions.push_back(std::move(f));
    } else if (kind == "run") {
      RunInfo r;
      int numFns = int(m.functions.size());
      if (!lp.id(m.runs.size(), "run id") || !lp.word(r.name, "name") ||
          !lp.integer(r.forward, "forward function", 0, numFns - 1) ||
          !lp.integer(r.bwdInput, "bwd-input function", -1, numFns - 1) ||
          !lp.integer(r.bwdWeight, "bwd-weight function", -1, numFns - 1) ||
          !lp.integer(r.numSaved, "nsaved", 0, 1 << 24) ||
          !lp.list(r.params, "param id", 0, int64_t(m.params.size()) - 1) ||
          !lp.list(r.inputs, "value id", 0, numValues - 1) ||
          !lp.list(r.outputs, "value id", 0, numValues - 1) ||
          !lp.list(r.diffInputs, "input index", 0,
                   int64_t(r.inputs.size()) - 1) ||
          !lp.list(r.diffResults, "result index", 0,
                   int64_t(r.outputs.size()) - 1) ||
          !lp.list(r.diffParams, "param index", 0,
                   int64_t(r.params.size()) - 1) ||
          !lp.done())
        return false;
      // Check the functions' signatures against the run.
      auto typeOf = [&](int v) { return m.valueTypes[v]; };
      std::vector<int> fwdArgs, fwdResults, bwdArgs, bwdIn, bwdW;
      for (int p : r.params)
        fwdArgs.push_back(m.params[p].type);
      for (int v : r.inputs)
        fwdArgs.push_back(typeOf(v));
      for (int v : r.outputs)
        fwdResults.push_back(typeOf(v));
      const FunctionInfo &fwd = m.functions[r.forward];
      if (fwd.args != fwdArgs)
        return lp.fail("run '" + r.name + "': forward function '" + fwd.symbol +
                       "' arguments do not match its params "
                       "and inputs");
      if (fwd.results.size() != fwdResults.size() + size_t(r.numSaved) ||
          !std::equal(fwdResults.begin(), fwdResults.end(),
                      fwd.results.begin()))
        return lp.fail("run '" + r.name + "': forward function '" + fwd.symbol +
                       "' results do not match its outputs "
                       "and nsaved");
      bwdArgs = fwdArgs;
      for (int idx : r.diffResults)
        bwdArgs.push_back(fwdResults[idx]);
      bwdArgs.insert(bwdArgs.end(), fwd.results.end() - r.numSaved,
                     fwd.results.end());
      for (int idx : r.diffInputs)
        bwdIn.push_back(typeOf(r.inputs[idx]));
      for (int idx : r.diffParams)
        bwdW.push_back(m.params[r.params[idx]].type);
      auto checkBwd = [&](int fid, const std::vector<int> &results,
                          const char *which) {
        if (fid < 0)
          return true;
        const FunctionInfo &f = m.functions[fid];
        if (f.args != bwdArgs || f.results != results)
          return lp.fail("run '" + r.name + "': " + which + " function '" +
                         f.symbol + "' signature does not match the run");
        return true;
      };
      if (!checkBwd(r.bwdInput, bwdIn, "bwd-input") ||
          !checkBwd(r.bwdWeight, bwdW, "bwd-weight"))
        return false;
      r.bwdArgs = std::move(bwdArgs);
      r.bwdInputResults = std::move(bwdIn);
      r.bwdWeightResults = std::move(bwdW);
      m.runs.push_back(std::move(r));
    } else if (kind == "fused") {
      // fused <rid> <fid>: one function returning the input cotangents then
      // the param gradients, for a full backward.
      int rid = -1, fid = -1;
      if (!lp.integer(rid, "run id", 0, int64_t(m.runs.size()) - 1) ||
          !lp.integer(fid, "function", 0, int64_t(m.functions.size()) - 1) ||
          !lp.done())
        return false;
      RunInfo &r = m.runs[rid];
      std::vector<int> results(r.bwdInputResults);
      results.insert(results.end(), r.bwdWeightResults.begin(),
                     r.bwdWeightResults.end());
      const FunctionInfo &f = m.functions[fid];
      if (r.bwdFused >= 0)
        return lp.fail("run '" + r.name + "' has two fused backward records");
      if (f.args != r.bwdArgs || f.results != results)
        return lp.fail("run '" + r.name + "': fused backward function '" +
                       f.symbol + "' signature does not match the run");
      r.bwdFused = fid;
    } else if (kind == "stage") {
      StageInfo s;
      if (!lp.id(m.stages.size(), "stage id") || !lp.word(s.name, "name") ||
          !lp.integer(s.device, "device", 0, 1 << 20) ||
          !lp.list(s.runs, "run id", 0, int64_t(m.runs.size()) - 1) ||
          !lp.done())
        return false;
      std::set<int> params;
      for (int r : s.runs)
        params.insert(m.runs[r].params.begin(), m.runs[r].params.end());
      s.params.assign(params.begin(), params.end());
      m.stages.push_back(std::move(s));
    } else if (kind == "edge") {
      int a, b;
      std::vector<int> values;
      if (!lp.integer(a, "producer stage", 0, numStages - 1) ||
          !lp.integer(b, "consumer stage", 0, numStages - 1) ||
          !lp.list(values, "value id", 0, numValues - 1) || !lp.done())
        return false;
      if (!m.edges.emplace(std::make_pair(a, b), values).second)
        return lp.fail("edge " + std::to_string(a) + " " + std::to_string(b) +
                       " repeated");
    } else if (kind == "schedule") {
      ScheduleInfo x;
      int fwdOnly;
      if (!lp.id(m.schedules.size(), "schedule id") ||
          !lp.word(x.name, "name") || !lp.word(x.kind, "kind") ||
          !lp.integer(x.devices, "devices", 1, 1 << 16) ||
          !lp.integer(x.microbatches, "microbatches", 1, 1 << 24) ||
          !lp.integer(x.steps, "steps", 1, 1 << 24) ||
          !lp.integer(fwdOnly, "forward-only flag", 0, 1) || !lp.done())
        return false;
      x.forwardOnly = fwdOnly;
      x.capacity.assign(x.devices, 0);
      x.programs.assign(x.devices, "");
      x.psStage.assign(numStages, false);
      x.owns.assign(numStages, {});
      for (const StageInfo &s : m.stages)
        if (s.device >= x.devices)
          return lp.fail("schedule '" + x.name + "' has " +
                         std::to_string(x.devices) + " devices but stage '" +
                         s.name + "' is on device " + std::to_string(s.device));
      m.schedules.push_back(std::move(x));
    } else if (kind == "device" || kind == "ps" || kind == "owns" ||
               kind == "versions" || kind == "replicas" ||
               kind == "peer_order") {
      if (m.schedules.empty())
        return lp.fail("'" + kind + "' before any schedule");
      int xid;
      int last = int(m.schedules.size()) - 1;
      if (!lp.integer(xid, "schedule id", last, last))
        return false;
      ScheduleInfo &x = m.schedules[xid];
      if (kind == "versions") {
        if (!lp.done())
          return false;
        x.keepsWeightVersions = true;
      } else if (kind == "peer_order") {
        if (!lp.done())
          return false;
        x.peerOrder = true;
      } else if (kind == "replicas") {
        if (!lp.integer(x.replicas, "replicas", 1, 1 << 16) || !lp.done())
          return false;
      } else if (kind == "device") {
        int d;
        int64_t cap;
        std::string sym;
        if (!lp.integer(d, "device", 0, x.devices - 1) ||
            !lp.integer(cap, "capacity", 0) || !lp.word(sym, "symbol") ||
            !lp.done())
          return false;
        if (!x.programs[d].empty())
          return lp.fail("device " + std::to_string(d) + " repeated");
        x.capacity[d] = uint64_t(cap);
        x.programs[d] = sym;
      } else if (kind == "ps") {
        int s;
        if (!lp.integer(s, "stage id", 0, numStages - 1) || !lp.done())
          return false;
        x.psStage[s] = true;
      } else {
        int s;
        std::vector<int> pids;
        if (!lp.integer(s, "stage id", 0, numStages - 1) ||
            !lp.list(pids, "param id", 0, int64_t(m.params.size()) - 1) ||
            !lp.done())
          return false;
        std::vector<int> sorted = pids;
        std::sort(sorted.begin(), sorted.end());
        if (auto dup = std::adjacent_find(sorted.begin(), sorted.end());
            dup != sorted.end())
          return lp.fail("param id " + std::to_string(*dup) +
                         " repeated in the stage's list");
        x.owns[s] = pids;
      }
    } else { // end
      if (!lp.done())
        return false;
      ended = true;
    }
  }
  if (lines.empty())
    return LineParser({}, 1, error).fail("empty manifest");
  if (!ended)
    return LineParser({}, int(lines.size()), error)
        .fail("missing 'end' (truncated manifest?)");
  for (const ScheduleInfo &x : m.schedules)
    for (int d = 0; d < x.devices; ++d)
      if (x.programs[d].empty()) {
        error = "manifest: schedule '" + x.name +
                "' has no program for "
                "device " +
                std::to_string(d);
        return false;
      }

  // Derived data flow.
  size_t nv = m.valueTypes.size();
  m.inputIndex.assign(nv, -1);
  for (size_t k = 0; k < m.inputs.size(); ++k)
    m.inputIndex[m.inputs[k]] = int(k);
  m.producer.assign(nv, -1);
  m.consumers.assign(nv, {});
  m.paramReaders.assign(m.params.size(), {});
  for (size_t s = 0; s < m.stages.size(); ++s)
    for (int r : m.stages[s].runs)
      for (int v : m.runs[r].outputs) {
        if (m.producer[v] >= 0 || m.inputIndex[v] >= 0) {
          error = "manifest: value " + std::to_string(v) + " is produced twice";
          return false;
        }
        m.producer[v] = int(s);
      }
  for (size_t s = 0; s < m.stages.size(); ++s) {
    for (int r : m.stages[s].runs)
      for (int v : m.runs[r].inputs) {
        auto &c = m.consumers[v];
        if (m.producer[v] != int(s) &&
            std::find(c.begin(), c.end(), int(s)) == c.end())
          c.push_back(int(s));
      }
    for (int p : m.stages[s].params)
      m.paramReaders[p].push_back(int(s));
  }
  return true;
}

} // namespace pipe_rt
