//===- Session.cpp - Program sessions: create, params, save/load, trace ---===//
//
// The session API of Program.h except running, which is in Executor.cpp.
// The session's param values and optimizer state are the canonical copies;
// devices and the parameter server only hold copies during a run.
//
//===----------------------------------------------------------------------===//

#include "Session.h"
#include "Cores.h"
#include "Format.h"
#include "OutputFile.h"
#include "Profile.h"
#include "SafetensorsIO.h"
#include "pipe/Runtime/ManifestSchema.h"

#include <algorithm>
#include <cmath>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <tuple>

using namespace pipe_rt;

namespace {

void copyError(const std::string &msg, char *error, size_t size) {
  if (!error || !size)
    return;
  std::snprintf(error, size, "%s", msg.c_str());
}

} // namespace

/// optimizer_threads 0: the host optimizer's share of the process's cores
/// (Cores.h: ranks on one host split them). A parameter-server schedule of
/// several steps per run (overlapped or delayed host updates) runs the
/// optimizer beside its device threads by design, so each of those keeps a
/// core: on 2 cores the width-scaled delayed L2L step is 2.1% faster with 1
/// worker than with 2 (docs/benchmarks.md), while plain L2L, whose device
/// waits for the last updates, is 4.6% faster with both.
unsigned pipe_rt::defaultOptimizerThreads(const pipe_rt_session &session) {
  unsigned cores = processCores();
  // The device threads of this process: in-process replicas count, the
  // devices of other ranks do not.
  unsigned busyDevices = 0;
  for (const ScheduleInfo &x : session.manifest.schedules) {
    if (!x.overlapsHostUpdates())
      continue;
    unsigned own = 0;
    for (int d = 0; d < x.devices; ++d)
      own += session.ranks.isLocal(d);
    busyDevices =
        std::max(busyDevices, own * unsigned(inProcessReplicas(session, x)));
  }
  return cores > busyDevices ? cores - busyDevices : 1;
}

int pipe_rt::resizeHostOptimizer(pipe_rt_session &session, std::string &error) {
  unsigned threads = session.options.optimizer_threads
                         ? session.options.optimizer_threads
                         : defaultOptimizerThreads(session);
  if (session.optimizer &&
      pipe_rt_host_optimizer_num_threads(session.optimizer) == threads)
    return PIPE_RT_OK;
  pipe_rt_host_optimizer_destroy(session.optimizer);
  session.optimizer = pipe_rt_host_optimizer_create(threads);
  if (!session.optimizer) {
    error = "cannot start the host optimizer's " + std::to_string(threads) +
            " threads";
    return PIPE_RT_OUT_OF_MEMORY;
  }
  return PIPE_RT_OK;
}

extern "C" {

void pipe_rt_session_options_init(pipe_rt_session_options *o) {
  if (!o)
    return;
  std::memset(o, 0, sizeof(*o));
  o->watchdog_seconds = 60;
  o->optimizer = PIPE_RT_OPTIM_ADAMW;
  o->adamw = {1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f};
  o->sgd = {1e-3f, 0, 0, 0, 0};
}

/// Block code allocates and frees its intermediates on every call. glibc
/// serves blocks above 128 KiB with mmap and unmaps them at free, so every
/// call would fault its buffers in again (15% of a training step of the
/// default model); kept in the heap they are reused.
static void keepBlockBuffersInHeap() {
#ifdef __GLIBC__
  static bool done = [] {
    mallopt(M_MMAP_THRESHOLD, 1 << 30);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    return true;
  }();
  (void)done;
#endif
}

int pipe_rt_session_create(pipe_rt_symbol_lookup lookup, void *userData,
                           const pipe_rt_session_options *options,
                           pipe_rt_session **out, char *error,
                           size_t errorSize) {
  if (out)
    *out = nullptr;
  auto bad = [&](int status, const std::string &msg) {
    copyError(msg, error, errorSize);
    return status;
  };
  if (!lookup || !options || !out)
    return bad(PIPE_RT_INVALID_ARGUMENT, "pipe_rt_session_create: null "
                                         "argument");
  keepBlockBuffersInHeap();
  if (!options->weights_path)
    return bad(PIPE_RT_INVALID_ARGUMENT, "no weights file given");
  if (!(options->watchdog_seconds > 0) ||
      !(options->watchdog_seconds <= kMaxWatchdogSeconds))
    return bad(PIPE_RT_INVALID_ARGUMENT,
               format("the watchdog must be in (0, %g] s, not %g",
                      kMaxWatchdogSeconds, options->watchdog_seconds));
  if (options->optimizer_threads > kMaxOptimizerThreads)
    return bad(PIPE_RT_INVALID_ARGUMENT,
               "at most " + std::to_string(kMaxOptimizerThreads) +
                   " host optimizer threads, not " +
                   std::to_string(options->optimizer_threads));
  if (options->ps_transfer != PIPE_RT_PS_TRANSFER_F32 &&
      options->ps_transfer != PIPE_RT_PS_TRANSFER_BF16)
    return bad(PIPE_RT_INVALID_ARGUMENT,
               "ps_transfer must be PIPE_RT_PS_TRANSFER_F32 (0) or "
               "PIPE_RT_PS_TRANSFER_BF16 (1), not " +
                   std::to_string(int(options->ps_transfer)));
  auto *abi = static_cast<const int32_t *>(
      lookup(userData, "pipe_program_abi_version"));
  if (!abi)
    return bad(PIPE_RT_INVALID_ARGUMENT,
               "symbol 'pipe_program_abi_version' not found (not a compiled "
               "pipe program?)");
  if (*abi != PIPE_RT_ABI_VERSION)
    return bad(PIPE_RT_INVALID_ARGUMENT,
               "the program was compiled for runtime ABI " +
                   std::to_string(*abi) + ", this runtime is " +
                   std::to_string(PIPE_RT_ABI_VERSION));
  auto *text =
      static_cast<const char *>(lookup(userData, "pipe_program_manifest"));
  if (!text)
    return bad(PIPE_RT_INVALID_ARGUMENT,
               "symbol 'pipe_program_manifest' not found");

  // Programs compiled before the checksum existed have none to compare.
  uint64_t checksum = manifestChecksum(text);
  if (auto *expected = static_cast<const uint64_t *>(
          lookup(userData, "pipe_program_manifest_checksum"));
      expected && *expected != checksum)
    return bad(PIPE_RT_INVALID_ARGUMENT,
               "the program's manifest does not match its checksum: the "
               "artifact was damaged after compiling (recompile it)");

  auto s = std::make_unique<pipe_rt_session>();
  std::string msg;
  if (!parseManifest(text, s->manifest, msg))
    return bad(PIPE_RT_INVALID_ARGUMENT, msg);
  s->manifestHash = checksum;
  // parseManifest refuses a format version other than this runtime's.
  const Manifest &m = s->manifest;
  for (size_t f = 0; f < m.functions.size(); ++f) {
    void *fn = lookup(userData, m.functions[f].symbol.c_str());
    if (!fn)
      return bad(PIPE_RT_INVALID_ARGUMENT,
                 "symbol '" + m.functions[f].symbol + "' (function " +
                     std::to_string(f) + ") not found");
    s->functions.push_back(fn);
  }
  int maxDevices = 0;
  for (const ScheduleInfo &x : m.schedules) {
    std::vector<void *> programs;
    for (const std::string &sym : x.programs) {
      void *fn = lookup(userData, sym.c_str());
      if (!fn)
        return bad(PIPE_RT_INVALID_ARGUMENT,
                   "symbol '" + sym + "' (device program of schedule '" +
                       x.name + "') not found");
      programs.push_back(fn);
    }
    s->programs.push_back(std::move(programs));
    maxDevices = std::max(maxDevices, x.devices);
  }

  // Weights.
  std::string path = options->weights_path;
  StFile file;
  if (!readSafetensors(path, file, msg))
    return bad(PIPE_RT_INVALID_ARGUMENT, msg);
  for (const ParamInfo &p : m.params) {
    const TypeInfo &t = m.types[p.type];
    const StTensor *st = file.find(p.name);
    if (!st)
      return bad(PIPE_RT_INVALID_ARGUMENT,
                 path + ": no tensor '" + p.name + "' (param of the program)");
    if (st->dtype != safetensorsDType(t.dtype) || st->shape != t.shape)
      return bad(PIPE_RT_INVALID_ARGUMENT,
                 path + ": tensor '" + p.name + "' is " + st->dtype + " " +
                     formatShape(st->shape) + ", the program expects " +
                     safetensorsDType(t.dtype) + " " + formatShape(t.shape));
    SessionParam sp;
    sp.value.assign(file.data.begin() + st->begin, file.data.begin() + st->end);
    s->params.push_back(std::move(sp));
  }
  s->paramLrScales.assign(m.params.size(), 1.0f);
  s->paramWeightDecay.assign(m.params.size(), true);
  s->options = *options;
  s->weightsPath = path;
  s->options.weights_path = s->weightsPath.c_str();
  s->peak.assign(maxDevices, 0);
  {
    std::string error;
    if (int st = resizeHostOptimizer(*s, error))
      return bad(st, error);
  }
  s->traceEpoch = std::chrono::steady_clock::now();
  *out = s.release();
  return PIPE_RT_OK;
}

pipe_rt_session::~pipe_rt_session() {
  for (PsShadow &shadow : psShadows)
    if (shadow.data)
      shadow.free(shadow.data);
}

void pipe_rt_session_destroy(pipe_rt_session *session) {
  if (!session)
    return;
  pipe_rt_host_optimizer_destroy(session->optimizer);
  delete session;
}

const char *pipe_rt_session_error(pipe_rt_session *session) {
  return session ? session->error.c_str() : "null session";
}

int pipe_rt_session_find_schedule(pipe_rt_session *session, const char *name) {
  if (!session)
    return -1;
  const auto &xs = session->manifest.schedules;
  if (!name)
    return xs.empty() ? -1 : 0;
  for (size_t i = 0; i < xs.size(); ++i)
    if (xs[i].name == name)
      return int(i);
  return -1;
}

int pipe_rt_session_run(pipe_rt_session *session, int schedule,
                        const void *const *inputs, float *losses) {
  if (!session)
    return PIPE_RT_INVALID_ARGUMENT;
  if (schedule < 0 || schedule >= int(session->manifest.schedules.size())) {
    session->error = "no schedule " + std::to_string(schedule);
    return PIPE_RT_INVALID_ARGUMENT;
  }
  return executeRun(session, schedule, inputs, losses);
}

int pipe_rt_session_schedule_info(pipe_rt_session *session, int schedule,
                                  int *devices, int *microbatches, int *steps) {
  if (!session || schedule < 0 ||
      schedule >= int(session->manifest.schedules.size()))
    return PIPE_RT_INVALID_ARGUMENT;
  const ScheduleInfo &x = session->manifest.schedules[schedule];
  if (devices)
    *devices = x.devices;
  if (microbatches)
    *microbatches = x.microbatches;
  if (steps)
    *steps = x.steps;
  return PIPE_RT_OK;
}

int pipe_rt_session_num_inputs(pipe_rt_session *session) {
  return session ? int(session->manifest.inputs.size()) : 0;
}

int pipe_rt_session_input_type(pipe_rt_session *session, int input,
                               const char **dtype, int *rank,
                               const int64_t **shape) {
  if (!session || input < 0 || input >= pipe_rt_session_num_inputs(session))
    return PIPE_RT_INVALID_ARGUMENT;
  const Manifest &m = session->manifest;
  const TypeInfo &t = m.types[m.valueTypes[m.inputs[input]]];
  static const char *names[] = {"f32", "f64", "i64", "i32", "i1"};
  if (dtype)
    *dtype = names[int(t.dtype)];
  if (rank)
    *rank = int(t.shape.size());
  if (shape)
    *shape = t.shape.data();
  return PIPE_RT_OK;
}

void pipe_rt_session_set_lr(pipe_rt_session *session, float lr) {
  if (!session)
    return;
  session->options.sgd.lr = lr;
  session->options.adamw.lr = lr;
  session->stepLrs.clear();
}

int pipe_rt_session_set_step_lrs(pipe_rt_session *session, const float *lrs,
                                 int count) {
  if (!session || !lrs || count < 1)
    return PIPE_RT_INVALID_ARGUMENT;
  for (int k = 0; k < count; ++k)
    if (!std::isfinite(lrs[k]) || lrs[k] < 0)
      return PIPE_RT_INVALID_ARGUMENT;
  pipe_rt_session_set_lr(session, lrs[0]);
  session->stepLrs.assign(lrs, lrs + count);
  return PIPE_RT_OK;
}

int pipe_rt_session_num_params(pipe_rt_session *session) {
  return session ? int(session->manifest.params.size()) : 0;
}

const char *pipe_rt_session_param_name(pipe_rt_session *session, int param) {
  if (!session || param < 0 || param >= pipe_rt_session_num_params(session))
    return nullptr;
  return session->manifest.params[param].name.c_str();
}

int64_t pipe_rt_session_param_numel(pipe_rt_session *session, int param) {
  if (!session || param < 0 || param >= pipe_rt_session_num_params(session))
    return -1;
  const Manifest &m = session->manifest;
  return m.types[m.params[param].type].numel;
}

int pipe_rt_session_param_shape(pipe_rt_session *session, int param, int *rank,
                                const int64_t **shape) {
  if (!session || param < 0 || param >= pipe_rt_session_num_params(session))
    return PIPE_RT_INVALID_ARGUMENT;
  const Manifest &m = session->manifest;
  const TypeInfo &t = m.types[m.params[param].type];
  if (rank)
    *rank = int(t.shape.size());
  if (shape)
    *shape = t.shape.data();
  return PIPE_RT_OK;
}

int pipe_rt_session_param_trainable(pipe_rt_session *session, int param) {
  if (!session || param < 0 || param >= pipe_rt_session_num_params(session))
    return -1;
  return session->manifest.params[param].trainable ? 1 : 0;
}

int pipe_rt_session_set_param_lr_scale(pipe_rt_session *session, int param,
                                       float scale) {
  if (!session || param < 0 || param >= pipe_rt_session_num_params(session))
    return PIPE_RT_INVALID_ARGUMENT;
  if (!std::isfinite(scale) || scale < 0) {
    session->error = "param '" + session->manifest.params[param].name +
                     "': learning-rate scale " + format("%g", double(scale)) +
                     " is not a finite number >= 0";
    return PIPE_RT_INVALID_ARGUMENT;
  }
  session->paramLrScales[param] = scale;
  return PIPE_RT_OK;
}

int pipe_rt_session_set_param_weight_decay(pipe_rt_session *session, int param,
                                           int enabled) {
  if (!session || param < 0 || param >= pipe_rt_session_num_params(session))
    return PIPE_RT_INVALID_ARGUMENT;
  session->paramWeightDecay[param] = enabled != 0;
  return PIPE_RT_OK;
}

/// The f32 value of `param` that read/write_param copy, or null (with the
/// session error set for a param that is not f32).
static std::vector<unsigned char> *f32ParamValue(pipe_rt_session *session,
                                                 int param) {
  if (!session || param < 0 || param >= pipe_rt_session_num_params(session))
    return nullptr;
  const Manifest &m = session->manifest;
  if (m.types[m.params[param].type].dtype != DType::F32) {
    session->error = "param '" + m.params[param].name + "' is not f32";
    return nullptr;
  }
  return &session->params[param].value;
}

int pipe_rt_session_read_param(pipe_rt_session *session, int param,
                               float *out) {
  std::vector<unsigned char> *v = f32ParamValue(session, param);
  if (!v || !out)
    return PIPE_RT_INVALID_ARGUMENT;
  std::memcpy(out, v->data(), v->size());
  return PIPE_RT_OK;
}

int pipe_rt_session_write_param(pipe_rt_session *session, int param,
                                const float *in) {
  std::vector<unsigned char> *v = f32ParamValue(session, param);
  if (!v || !in)
    return PIPE_RT_INVALID_ARGUMENT;
  std::memcpy(v->data(), in, v->size());
  pipe_rt::invalidatePsShadows(*session);
  return PIPE_RT_OK;
}

unsigned pipe_rt_session_optimizer_threads(pipe_rt_session *session) {
  return session ? pipe_rt_host_optimizer_num_threads(session->optimizer) : 0;
}

int pipe_rt_session_num_metrics(pipe_rt_session *session) {
  return session ? int(session->manifest.metrics.size()) : 0;
}

int pipe_rt_session_metric(pipe_rt_session *session, int metric,
                           const char **name, int64_t *hits, int64_t *counted) {
  if (!session || metric < 0 || metric >= int(session->manifest.metrics.size()))
    return PIPE_RT_INVALID_ARGUMENT;
  if (name)
    *name = session->manifest.metrics[metric].name.c_str();
  bool ran =
      session->metricTotals.size() == session->manifest.metrics.size() * 2;
  if (hits)
    *hits = ran ? session->metricTotals[2 * metric] : 0;
  if (counted)
    *counted = ran ? session->metricTotals[2 * metric + 1] : 0;
  return PIPE_RT_OK;
}

uint64_t pipe_rt_session_peak_bytes(pipe_rt_session *session, int device) {
  if (!session || device < 0 || device >= int(session->peak.size()))
    return 0;
  return session->peak[device];
}

int pipe_rt_session_save(pipe_rt_session *session, const char *path,
                         const char *const *extraNames, const int64_t *extra,
                         int extraCount) {
  if (!session || !path || extraCount < 0 ||
      (extraCount > 0 && (!extraNames || !extra)))
    return PIPE_RT_INVALID_ARGUMENT;
  const Manifest &m = session->manifest;
  const auto &o = session->options;
  std::vector<StWriteTensor> tensors;
  std::vector<std::vector<float>> zeros; // state not allocated yet
  zeros.reserve(2 * m.params.size());
  int64_t step = 0;
  for (size_t p = 0; p < m.params.size(); ++p) {
    const ParamInfo &info = m.params[p];
    const TypeInfo &t = m.types[info.type];
    SessionParam &sp = session->params[p];
    tensors.push_back(
        {info.name, safetensorsDType(t.dtype), t.shape, sp.value.data()});
    if (!info.trainable)
      continue;
    step = std::max(step, sp.step);
    auto state = [&](std::vector<float> &v, const char *suffix) {
      const void *data = v.data();
      if (v.size() != size_t(t.numel)) {
        zeros.emplace_back(size_t(t.numel), 0.0f);
        data = zeros.back().data();
      }
      tensors.push_back({info.name + suffix, "F32", t.shape, data});
    };
    if (o.optimizer == PIPE_RT_OPTIM_ADAMW) {
      state(sp.state0, ".exp_avg");
      state(sp.state1, ".exp_avg_sq");
    } else if (o.sgd.momentum != 0) {
      state(sp.state0, ".momentum_buffer");
    }
  }
  tensors.push_back({"optimizer.step", "I64", {}, &step});
  for (int i = 0; i < extraCount; ++i)
    tensors.push_back({extraNames[i], "I64", {}, &extra[i]});
  std::string error;
  if (!writeSafetensors(path, tensors, error)) {
    session->error = error;
    return PIPE_RT_INVALID_ARGUMENT;
  }
  return PIPE_RT_OK;
}

int pipe_rt_session_load(pipe_rt_session *session, const char *path,
                         const char *const *extraNames, int64_t *extra,
                         int extraCount) {
  if (!session || !path || extraCount < 0 ||
      (extraCount > 0 && (!extraNames || !extra)))
    return PIPE_RT_INVALID_ARGUMENT;
  const Manifest &m = session->manifest;
  StFile file;
  std::string error;
  auto bad = [&](const std::string &msg) {
    session->error = msg;
    return int(PIPE_RT_INVALID_ARGUMENT);
  };
  if (!readSafetensors(path, file, error))
    return bad(error);
  std::string file_ = path;
  auto find = [&](const std::string &name, const char *dtype,
                  const std::vector<int64_t> &shape,
                  const StTensor *&out) -> bool {
    out = file.find(name);
    if (!out) {
      error = file_ + ": no tensor '" + name + "'";
      return false;
    }
    if (out->dtype != dtype || out->shape != shape) {
      error = file_ + ": tensor '" + name + "' is " + out->dtype + " " +
              formatShape(out->shape) + ", expected " + dtype + " " +
              formatShape(shape);
      return false;
    }
    return true;
  };
  // Validate everything first, then apply.
  const auto &o = session->options;
  std::vector<const StTensor *> values, s0(m.params.size()),
      s1(m.params.size());
  for (size_t p = 0; p < m.params.size(); ++p) {
    const ParamInfo &info = m.params[p];
    const TypeInfo &t = m.types[info.type];
    const StTensor *st;
    if (!find(info.name, safetensorsDType(t.dtype), t.shape, st))
      return bad(error);
    values.push_back(st);
    if (!info.trainable)
      continue;
    bool adamw = o.optimizer == PIPE_RT_OPTIM_ADAMW;
    bool momentum = !adamw && o.sgd.momentum != 0;
    if (adamw) {
      if (!find(info.name + ".exp_avg", "F32", t.shape, s0[p]) ||
          !find(info.name + ".exp_avg_sq", "F32", t.shape, s1[p]))
        return bad(error);
    } else if (momentum) {
      if (!find(info.name + ".momentum_buffer", "F32", t.shape, s0[p]))
        return bad(error);
    }
    // State of another optimizer would be dropped, and the checkpoint
    // rewritten without it.
    for (auto [suffix, owner, used] :
         {std::tuple<const char *, const char *, bool>{".exp_avg", "AdamW",
                                                       adamw},
          {".momentum_buffer", "SGD with momentum", momentum}})
      if (!used && file.find(info.name + suffix))
        return bad(file_ + ": holds the " + owner + " state of param '" +
                   info.name + "' ('" + info.name + suffix +
                   "'), which this run's optimizer does not use: resume "
                   "with the optimizer (and momentum) that wrote it");
  }
  const StTensor *stepT;
  if (!find("optimizer.step", "I64", {}, stepT))
    return bad(error);
  std::vector<const StTensor *> extras;
  for (int i = 0; i < extraCount; ++i) {
    const StTensor *e;
    if (!find(extraNames[i], "I64", {}, e))
      return bad(error);
    extras.push_back(e);
  }
  int64_t step;
  std::memcpy(&step, file.data.data() + stepT->begin, 8);
  if (step < 0)
    return bad(file_ + ": optimizer.step is negative");
  auto bytesOf = [&](const StTensor *t) {
    return std::vector<unsigned char>(file.data.begin() + t->begin,
                                      file.data.begin() + t->end);
  };
  auto floatsOf = [&](const StTensor *t) {
    std::vector<float> v((t->end - t->begin) / 4);
    std::memcpy(v.data(), file.data.data() + t->begin, t->end - t->begin);
    return v;
  };
  for (size_t p = 0; p < m.params.size(); ++p) {
    SessionParam &sp = session->params[p];
    sp.value = bytesOf(values[p]);
    sp.state0 = s0[p] ? floatsOf(s0[p]) : std::vector<float>();
    sp.state1 = s1[p] ? floatsOf(s1[p]) : std::vector<float>();
    sp.step = m.params[p].trainable ? step : 0;
  }
  pipe_rt::invalidatePsShadows(*session);
  for (int i = 0; i < extraCount; ++i)
    std::memcpy(&extra[i], file.data.data() + extras[i]->begin, 8);
  return PIPE_RT_OK;
}

void pipe_rt_session_enable_trace(pipe_rt_session *session, int enable) {
  if (!session)
    return;
  std::lock_guard<std::mutex> lock(session->traceMu);
  session->tracing = enable != 0;
  for (const ScheduleInfo &x : session->manifest.schedules)
    session->traceDevices = std::max(session->traceDevices, x.devices);
}

void pipe_rt_session_profile_mark(pipe_rt_session *session) {
  if (!session)
    return;
  std::lock_guard<std::mutex> lock(session->traceMu);
  session->profileFrom =
      std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                    session->traceEpoch)
          .count();
}

const char *pipe_rt_session_profile_json(pipe_rt_session *session) {
  if (!session)
    return "";
  std::lock_guard<std::mutex> lock(session->traceMu);
  session->profileText = pipe_rt::profileJson(
      pipe_rt::summarize(session->trace, session->traceLinks,
                         session->traceDevices, session->profileFrom));
  return session->profileText.c_str();
}

int pipe_rt_session_write_trace(pipe_rt_session *session, const char *path) {
  if (!session || !path)
    return PIPE_RT_INVALID_ARGUMENT;
  std::lock_guard<std::mutex> lock(session->traceMu);
  int numDevices = session->traceDevices;
  // The simulator's tracks: compute d, then an h2d/d2h pair per device, the
  // host optimizer, then one per link in order of first use.
  std::vector<std::string> names;
  for (int d = 0; d < numDevices; ++d)
    names.push_back("device " + std::to_string(d) + " compute");
  for (int d = 0; d < numDevices; ++d) {
    names.push_back("device " + std::to_string(d) + " h2d copy");
    names.push_back("device " + std::to_string(d) + " d2h copy");
  }
  names.push_back("host optimizer");
  for (auto &[from, to] : session->traceLinks)
    names.push_back("link " + std::to_string(from) + "->" + std::to_string(to));
  auto trackOf = [&](const TraceEvent &e) {
    switch (e.kind) {
    case TrackKind::Compute:
      return e.index;
    case TrackKind::H2D:
      return numDevices + 2 * e.index;
    case TrackKind::D2H:
      return numDevices + 2 * e.index + 1;
    case TrackKind::Host:
      return 3 * numDevices;
    case TrackKind::Link:
      return 3 * numDevices + 1 + e.index;
    }
    return 0;
  };
  auto quote = [](const std::string &s) {
    std::string out = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\')
        out.push_back('\\');
      if ((unsigned char)c >= 0x20)
        out.push_back(c);
    }
    return out + "\"";
  };
  std::string text = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":["
                     "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,"
                     "\"args\":{\"name\":\"runtime\"}}";
  for (size_t t = 0; t < names.size(); ++t)
    text += format(",{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,"
                   "\"tid\":%zu,\"args\":{\"name\":%s}}",
                   t, quote(names[t]).c_str());
  for (const TraceEvent &e : session->trace) {
    text += format(",{\"name\":%s,\"cat\":%s,\"ph\":\"X\",\"pid\":0,"
                   "\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f",
                   quote(e.name).c_str(), quote(e.category).c_str(), trackOf(e),
                   e.start * 1e6, (e.end - e.start) * 1e6);
    if (e.workingBytes >= 0)
      text += format(",\"args\":{\"working_bytes\":%lld}",
                     (long long)e.workingBytes);
    text += "}";
  }
  text += "]}\n";
  std::string error;
  if (!writeFileAtomically(path, text, error)) {
    session->error = "cannot write the trace: " + error;
    return PIPE_RT_INVALID_ARGUMENT;
  }
  session->trace.clear();
  session->traceLinks.clear();
  return PIPE_RT_OK;
}

} // extern "C"
