//===- TrainerFiles.cpp - What the trainer reads and writes besides data ---===//
//
// Part of pipe-mlir's runtime. See TrainerFiles.h.
//
//===----------------------------------------------------------------------===//

#include "TrainerFiles.h"
#include "Format.h"
#include "OutputFile.h"

#include <cmath>
#include <cstring>
#include <map>

namespace pipe_rt {

const char *nonFinite(double v) {
  return std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf";
}

namespace {

/// Checks that the `bytes` at `data` of safetensors dtype `dtype` hold no NaN
/// or infinity (F32 and F64; the other dtypes cannot); else sets `error` to
/// `what` and the first such value and its element.
bool checkFinite(const std::string &what, const std::string &dtype,
                 const unsigned char *data, size_t bytes, std::string &error) {
  auto scan = [&](auto zero) {
    using T = decltype(zero);
    for (size_t i = 0; i < bytes / sizeof(T); ++i) {
      T v;
      std::memcpy(&v, data + i * sizeof(T), sizeof(T));
      if (!std::isfinite(v)) {
        error = what + " holds " + nonFinite(double(v)) + " at element " +
                std::to_string(i);
        return false;
      }
    }
    return true;
  };
  if (dtype == "F32")
    return scan(0.0f);
  if (dtype == "F64")
    return scan(0.0);
  return true;
}

} // namespace

bool checkFiniteFile(const StFile &file, const std::string &path,
                     std::string &error) {
  for (const StTensor &t : file.tensors)
    if (!checkFinite(path + ": tensor '" + t.name + "'", t.dtype,
                     file.data.data() + t.begin, t.end - t.begin, error))
      return false;
  return true;
}

bool checkFiniteState(pipe_rt_session *session, std::string &error) {
  const Manifest &m = session->manifest;
  for (size_t p = 0; p < m.params.size(); ++p) {
    const SessionParam &sp = session->params[p];
    const std::string &name = m.params[p].name;
    const char *dtype = safetensorsDType(m.types[m.params[p].type].dtype);
    auto floats = [](const std::vector<float> &v) {
      return reinterpret_cast<const unsigned char *>(v.data());
    };
    if (!checkFinite("param '" + name + "'", dtype, sp.value.data(),
                     sp.value.size(), error) ||
        !checkFinite("the optimizer state of param '" + name + "'", "F32",
                     floats(sp.state0), sp.state0.size() * 4, error) ||
        !checkFinite("the optimizer state of param '" + name + "'", "F32",
                     floats(sp.state1), sp.state1.size() * 4, error))
      return false;
  }
  return true;
}

bool loadInitWeights(pipe_rt_session *session, const std::string &path,
                     bool strict,
                     const std::function<void(const std::string &)> &print,
                     std::string &error) {
  StFile file;
  if (!readSafetensors(path, file, error))
    return false;
  const Manifest &m = session->manifest;
  std::map<std::string, int> byName;
  for (size_t p = 0; p < m.params.size(); ++p)
    byName[m.params[p].name] = int(p);
  std::vector<std::pair<int, const StTensor *>> loads;
  std::vector<std::string> ignored, added;
  for (const StTensor &t : file.tensors) {
    auto it = byName.find(t.name);
    if (it == byName.end()) {
      ignored.push_back(t.name);
      continue;
    }
    const TypeInfo &type = m.types[m.params[it->second].type];
    if (t.dtype != safetensorsDType(type.dtype) || t.shape != type.shape) {
      error = path + ": tensor '" + t.name + "' is " + t.dtype + " " +
              formatShape(t.shape) + ", the param is " +
              safetensorsDType(type.dtype) + " " + formatShape(type.shape) +
              "; nothing was loaded";
      return false;
    }
    if (!checkFinite(path + ": tensor '" + t.name + "'", t.dtype,
                     file.data.data() + t.begin, t.end - t.begin, error))
      return false;
    loads.push_back({it->second, &t});
  }
  for (size_t p = 0; p < m.params.size(); ++p)
    if (!file.find(m.params[p].name))
      added.push_back(m.params[p].name);
  auto list = [](const std::vector<std::string> &names) {
    std::string s;
    for (size_t i = 0; i < names.size() && i < 8; ++i)
      s += (i ? ", " : "") + names[i];
    if (names.size() > 8)
      s += format(", ... (%zu more)", names.size() - 8);
    return s;
  };
  // Strict: the file must be exactly this model's parameters.
  if (strict && (!added.empty() || !ignored.empty())) {
    error = path + ": --init-weights-strict: ";
    if (!added.empty())
      error += format("%zu params are not in the file (%s)", added.size(),
                      list(added).c_str());
    if (!added.empty() && !ignored.empty())
      error += " and ";
    if (!ignored.empty())
      error += format("%zu tensors name no param (%s)", ignored.size(),
                      list(ignored).c_str());
    error += "; nothing was loaded";
    return false;
  }
  for (auto &[p, t] : loads)
    session->params[p].value.assign(file.data.begin() + t->begin,
                                    file.data.begin() + t->end);
  pipe_rt::invalidatePsShadows(*session);
  print(format("init weights: %s: %zu matched, %zu new, %zu ignored (of %zu "
               "params)",
               path.c_str(), loads.size(), added.size(), ignored.size(),
               m.params.size()));
  if (!added.empty())
    print(format("  new (not in the file, keep their initial value): %s",
                 list(added).c_str()));
  if (!ignored.empty())
    print(format("  ignored (in the file, not in the model): %s",
                 list(ignored).c_str()));
  return true;
}

bool saveParams(pipe_rt_session *session, const std::string &path,
                std::string &error) {
  removeStaleTemporaries(path);
  const Manifest &m = session->manifest;
  std::vector<StWriteTensor> tensors;
  for (size_t p = 0; p < m.params.size(); ++p) {
    const TypeInfo &t = m.types[m.params[p].type];
    tensors.push_back({m.params[p].name, safetensorsDType(t.dtype), t.shape,
                       session->params[p].value.data()});
  }
  return writeSafetensors(path, tensors, error);
}

const char *const kStateNames[] = {"trainer.format", "trainer.step",
                                   "trainer.seed", "trainer.rng_draws",
                                   "trainer.data_cursor"};

bool saveCheckpoint(pipe_rt_session *session, const std::string &path,
                    const TrainerState &st, std::string &error) {
  int64_t values[kNumState] = {st.format, st.step, st.seed, st.rngDraws,
                               st.cursor};
  removeStaleTemporaries(path);
  if (pipe_rt_session_save(session, path.c_str(), kStateNames, values,
                           kNumState) != PIPE_RT_OK) {
    error = std::string("cannot write the checkpoint: ") +
            pipe_rt_session_error(session);
    return false;
  }
  return true;
}

bool readTrainerState(const StFile &file, const std::string &path,
                      TrainerState &st, std::string &error) {
  int64_t *fields[kNumState] = {&st.format, &st.step, &st.seed, &st.rngDraws,
                                &st.cursor};
  for (int i = 0; i < kNumState; ++i) {
    const StTensor *t = file.find(kStateNames[i]);
    bool ok = t && t->dtype == "I64" && t->shape.empty();
    if (ok)
      std::memcpy(fields[i], file.data.data() + t->begin, 8);
    // Anything but format 1 is not ours, whatever else it holds.
    if (i == 0 && (!ok || st.format != 1)) {
      error = path +
              ": not a trainer checkpoint (format 1): trainer.format is " +
              (ok ? std::to_string(st.format) : std::string("missing"));
      return false;
    }
    if (!ok) {
      error = path + ": " + kStateNames[i] + " is " +
              (t ? "not an I64 scalar" : "missing");
      return false;
    }
  }
  return true;
}

} // namespace pipe_rt
