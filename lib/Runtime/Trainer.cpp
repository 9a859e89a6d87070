//===- Trainer.cpp - Training loop over a program session -----------------===//
//
// The loop of Trainer.h: pick the train and eval schedules, open the data,
// load pretrained weights and/or a checkpoint, then run the train schedule
// step after step with the scheduled learning rate, evaluating, logging and
// checkpointing on the way. It lives in the runtime library (so no MLIR)
// and reads the session's manifest directly for what the C API does not
// expose (schedule kinds, param dtypes).
//
// Bit-identical resume: everything a step depends on is either in the
// checkpoint (params, optimizer state and counter, trainer step, data
// cursor, window RNG as seed + number of draws) or a pure function of the
// step (learning rate, safetensors rows). Evaluation runs forward-only
// schedules, which change no state.
//
//===----------------------------------------------------------------------===//

#include "pipe/Runtime/Trainer.h"
#include "Format.h"

#include "OutputFile.h"
#include "SafetensorsIO.h"
#include "Session.h"
#include "TrainerFiles.h"
#include "TrainingData.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <optional>
#include <sys/stat.h>
#include <unistd.h>

namespace pipe_rt {
namespace {

//===--- Stop requests ----------------------------------------------------===//

/// 0: run on; > 0: the signal that asked to stop; -1: requestStop().
volatile std::sig_atomic_t gStop = 0;

/// When the first stop signal arrived (CLOCK_MONOTONIC, milliseconds).
std::atomic<int64_t> gFirstStopMs{0};
static_assert(std::atomic<int64_t>::is_always_lock_free,
              "read and written in a signal handler");

/// Within this many milliseconds of the first, a stop signal is the same
/// request delivered twice: GNU timeout sends it to the command and again to
/// its process group, and batch systems may signal every process of a job.
constexpr int64_t kRepeatedSignalMs = 2000;

int64_t monotonicMs() {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now); // async-signal-safe
  return int64_t(now.tv_sec) * 1000 + now.tv_nsec / 1000000;
}

/// The first signal asks the run to stop at the next step boundary; one
/// that comes later than the grace above kills the process (the default
/// action), so a stuck run can still be killed with a second Ctrl-C. The
/// time is stored before the flag, so a repeat that sees the flag sees it.
extern "C" void onStopSignal(int sig) {
  if (gStop <= 0) {
    gFirstStopMs = monotonicMs();
    gStop = sig;
    return;
  }
  if (monotonicMs() - gFirstStopMs <= kRepeatedSignalMs)
    return;
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

/// Installs the SIGINT/SIGTERM handlers for its lifetime.
class SignalGuard {
public:
  explicit SignalGuard(bool enable) : enabled(enable) {
    if (!enabled)
      return;
    struct sigaction sa;
    std::memset(&sa, 0, sizeof(sa));
    sa.sa_handler = onStopSignal;
    // One handler at a time: a SIGINT during the SIGTERM handler waits.
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGINT);
    sigaddset(&sa.sa_mask, SIGTERM);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, &oldInt);
    sigaction(SIGTERM, &sa, &oldTerm);
  }
  ~SignalGuard() {
    if (!enabled)
      return;
    sigaction(SIGINT, &oldInt, nullptr);
    sigaction(SIGTERM, &oldTerm, nullptr);
  }

private:
  bool enabled;
  struct sigaction oldInt, oldTerm;
};

//===--- Formatting -------------------------------------------------------===//

/// Items per second: whole numbers, but two digits below 10, so that a
/// slow model's 0.4 samples/s does not read 0.
std::string formatRate(double perSecond) {
  return format(perSecond >= 10 ? "%.0f" : "%.2g", perSecond);
}

std::string duration(double seconds) {
  if (!(seconds >= 0) || seconds > 1e8)
    return "?";
  int64_t s = int64_t(seconds + 0.5);
  if (s < 60)
    return format("%llds", (long long)s);
  if (s < 3600)
    return format("%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
  return format("%lldh%02lldm", (long long)(s / 3600),
                (long long)(s / 60 % 60));
}

std::string bytesString(uint64_t b) {
  if (b >= (uint64_t(1) << 30))
    return format("%.2f GiB", double(b) / double(uint64_t(1) << 30));
  if (b >= (uint64_t(1) << 20))
    return format("%.2f MiB", double(b) / double(1 << 20));
  if (b >= 1024)
    return format("%.1f KiB", double(b) / 1024);
  return format("%llu B", (unsigned long long)b);
}

/// A JSON number; NaN and infinities (not JSON) become null.
std::string jsonNumber(double v) {
  return std::isfinite(v) ? format("%.9g", v) : "null";
}

bool fileExists(const std::string &path) {
  return ::access(path.c_str(), F_OK) == 0;
}

/// a * b + c, saturated at INT64_MAX (the operands are >= 0).
int64_t mulAddSaturated(int64_t a, int64_t b, int64_t c) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r) || __builtin_add_overflow(r, c, &r))
    return INT64_MAX;
  return r;
}

//===--- The loop ---------------------------------------------------------===//

class Trainer {
public:
  Trainer(pipe_rt_session *session, const TrainerOptions &options,
          TrainerSummary &summary, std::string &error)
      : s(session), o(options), summary(summary), error(error),
        m(session->manifest) {
    print = o.print ? o.print : [](const std::string &line) {
      std::fputs((line + "\n").c_str(), stdout);
      std::fflush(stdout);
    };
  }
  ~Trainer() {
    if (log)
      std::fclose(log);
  }

  bool run();

private:
  bool fail(const std::string &msg) {
    error = msg;
    return false;
  }
  bool checkOptions();
  bool applyParamGroups();
  bool pickSchedules();
  bool pickWarmupSchedule();
  bool openData();
  bool resumeFrom(TrainerState &st);
  bool openLog(bool resumed, int64_t start);
  bool cutLog(int64_t start);
  bool writeLog(const std::string &line);
  bool evaluate(int64_t step, double &loss);
  /// The last evaluation's metrics as JSON members (",\"eval_accuracy\":x").
  std::string evalMetricsJson() const;
  bool checkpoint(int64_t step, bool periodic);
  bool share(int64_t step);
  int64_t sharedStep = -1;
  bool finish(int64_t step);
  bool writeProfile();
  TrainerState state(int64_t step) const;
  std::string keptNote() const;

  pipe_rt_session *s;
  const TrainerOptions &o;
  TrainerSummary &summary;
  std::string &error;
  const Manifest &m;
  std::function<void(const std::string &)> print;

  int train = -1, eval = -1;
  /// --l2l-delay-after: the plain schedule of steps before o.delayAfter.
  int warmup = -1;
  bool doEval = false; // an eval schedule and held-out data
  int mbs = 1, stepsPerRun = 1, evalMbs = 1, evalSteps = 1;
  /// Replicas that draw a training step's micro-batches (over the ranks
  /// and in this process), and the evaluation schedule's replicas in this
  /// process.
  int replicas = 1, evalReplicas = 1;
  /// A rank's replica's inputs of a run (its share of every step's).
  std::vector<const void *> rankShare;
  int inProcessReplicas(int schedule) const;
  std::vector<InputSpec> inputs;
  std::unique_ptr<TrainingData> data;
  int64_t itemsPerMb = 1;
  size_t numInputs = 0; // graph inputs: pointers per micro-batch
  uint64_t seed = 0;
  int64_t cursor = 0;
  std::FILE *log = nullptr;
  int64_t lastCheckpoint = -1, lastEval = -1;
  // --profile: the measured steps (after the skipped ones) and their time.
  bool profiling = false, profileMarked = false;
  int64_t profileSkip = 0, profileSteps = 0;
  double profileSeconds = 0;
  std::vector<double> profileStepSeconds; // per measured run, per step
};

bool Trainer::checkOptions() {
  if (!validateTrainerOptions(o, error) || !checkOutputPaths(o, error))
    return false;
  if (o.resume && o.checkpointPath.empty())
    return fail("resuming needs a checkpoint path");
  if (o.checkpointEvery > 0 && o.checkpointPath.empty())
    return fail("checkpointing every N steps needs a checkpoint path");
  // The session applies the optimizer; it must be the one these options
  // describe (initSessionOptions), or checkpoints and logs would lie.
  const pipe_rt_session_options &so = s->options;
  if (so.optimizer != o.optimizer || so.clip_norm != o.clipNorm)
    return fail("the session's optimizer or clipping differs from the "
                "trainer options: create it with options filled by "
                "pipe_rt::initSessionOptions");
  return true;
}

/// Sets every param's learning-rate scale and weight decay on the session
/// and reports the groups (trainable params only: frozen ones get no
/// update).
bool Trainer::applyParamGroups() {
  int params = pipe_rt_session_num_params(s);
  std::map<std::string, int> byName;
  for (int p = 0; p < params; ++p)
    byName[pipe_rt_session_param_name(s, p)] = p;
  std::vector<float> scales(size_t(params), 1.0f);
  for (const auto &[name, scale] : o.paramLrScales) {
    auto it = byName.find(name);
    if (it == byName.end())
      return fail("--param-lr " + name + "=" + format("%g", double(scale)) +
                  ": the program has no param '" + name + "'");
    scales[size_t(it->second)] = scale;
  }
  // Multiplier -> (params, elements), largest first; and the decay split.
  std::map<float, std::pair<int64_t, int64_t>, std::greater<float>> groups;
  int64_t decayed = 0, decayedElements = 0, exempt = 0, exemptElements = 0;
  for (int p = 0; p < params; ++p) {
    int rank = 0;
    pipe_rt_session_param_shape(s, p, &rank, nullptr);
    bool decay = o.decayAll || rank >= 2;
    if (pipe_rt_session_set_param_lr_scale(s, p, scales[size_t(p)]) !=
            PIPE_RT_OK ||
        pipe_rt_session_set_param_weight_decay(s, p, decay) != PIPE_RT_OK)
      return fail(pipe_rt_session_error(s));
    if (pipe_rt_session_param_trainable(s, p) != 1)
      continue;
    int64_t numel = pipe_rt_session_param_numel(s, p);
    auto &group = groups[scales[size_t(p)]];
    ++group.first;
    group.second += numel;
    (decay ? decayed : exempt) += 1;
    (decay ? decayedElements : exemptElements) += numel;
  }
  if (!o.paramLrScales.empty()) {
    std::string line = "param groups:";
    for (const auto &[scale, count] : groups)
      line += format("%s lr x%g: %lld params, %lld elements",
                     line.back() == ':' ? "" : ";", double(scale),
                     (long long)count.first, (long long)count.second);
    print(line);
  }
  const pipe_rt_session_options &so = s->options;
  float weightDecay = so.optimizer == PIPE_RT_OPTIM_ADAMW
                          ? so.adamw.weight_decay
                          : so.sgd.weight_decay;
  if (weightDecay > 0)
    print(format(
        "weight decay %g: %lld params, %lld elements; %s", double(weightDecay),
        (long long)decayed, (long long)decayedElements,
        o.decayAll ? "every param (--decay-all)"
                   : format("none on %lld of rank 0 or 1 (biases, "
                            "norm scales), %lld elements; "
                            "--decay-all decays them",
                            (long long)exempt, (long long)exemptElements)
                         .c_str()));
  return true;
}

int Trainer::inProcessReplicas(int schedule) const {
  return pipe_rt::inProcessReplicas(*s, m.schedules[size_t(schedule)]);
}

bool Trainer::pickSchedules() {
  const auto &xs = m.schedules;
  auto find = [&](const std::string &name) {
    for (size_t i = 0; i < xs.size(); ++i)
      if (xs[i].name == name)
        return int(i);
    return -1;
  };
  auto names = [&]() {
    std::string list;
    for (const ScheduleInfo &x : xs)
      list += (list.empty() ? "" : ", ") + x.name + " (" + x.kind +
              (x.forwardOnly ? ", forward-only)" : ")");
    return list.empty() ? std::string("none") : list;
  };
  if (!o.trainSchedule.empty()) {
    train = find(o.trainSchedule);
    if (train < 0)
      return fail("no schedule '" + o.trainSchedule +
                  "'; the program has: " + names());
    if (xs[train].forwardOnly)
      return fail("schedule '" + o.trainSchedule +
                  "' is forward-only and cannot train");
  } else {
    for (size_t i = 0; i < xs.size() && train < 0; ++i)
      if (!xs[i].forwardOnly)
        train = int(i);
    if (train < 0)
      return fail("the program has no training schedule (only: " + names() +
                  ")");
  }
  if (!o.evalSchedule.empty()) {
    eval = find(o.evalSchedule);
    if (eval < 0)
      return fail("no schedule '" + o.evalSchedule +
                  "'; the program has: " + names());
    if (!xs[eval].forwardOnly)
      return fail("evaluation schedule '" + o.evalSchedule +
                  "' is not forward-only (it would train)");
  } else {
    for (size_t i = 0; i < xs.size() && eval < 0; ++i)
      if (xs[i].forwardOnly)
        eval = int(i);
  }
  const ScheduleInfo &x = xs[train];
  mbs = x.microbatches;
  stepsPerRun = x.steps;
  replicas = o.replicas * inProcessReplicas(train);
  if (eval >= 0) {
    evalMbs = xs[eval].microbatches;
    evalSteps = xs[eval].steps;
    evalReplicas = inProcessReplicas(eval);
  }
  if (o.clipNorm > 0 && (x.hasPsStages() || stepsPerRun > 1))
    return fail(
        "--clip is not supported with schedule " + x.kind + " ('" + x.name +
        "'): global gradient clipping needs a synchronous "
        "schedule (" +
        (x.hasPsStages() ? std::string("this one updates on the parameter "
                                       "server")
                         : "this one covers " + std::to_string(stepsPerRun) +
                               " optimizer steps per run") +
        ")");
  if (o.steps % stepsPerRun != 0)
    return fail("schedule '" + x.name + "' (" + x.kind + ") runs " +
                std::to_string(stepsPerRun) +
                " optimizer steps at a time: the number of steps (" +
                std::to_string(o.steps) + ") must be a multiple of it");
  if (o.checkpointEvery % stepsPerRun != 0 || o.evalEvery % stepsPerRun != 0 ||
      o.stopAfter % stepsPerRun != 0)
    return fail("schedule '" + x.name + "' runs " +
                std::to_string(stepsPerRun) +
                " optimizer steps at a time: checkpoint-every, eval-every "
                "and stop-after must be multiples of it");
  return o.delayAfter == 0 || pickWarmupSchedule();
}

/// The plain schedule --l2l-delay-after runs first: one of the same kind
/// that trains one step per run on the latest weights.
bool Trainer::pickWarmupSchedule() {
  const ScheduleInfo &x = m.schedules[train];
  if (!x.overlapsHostUpdates())
    return fail("--l2l-delay-after: schedule '" + x.name + "' (" + x.kind +
                ") has no delayed updates to warm up for (compile it with "
                "--schedule l2l --l2l-update delayed)");
  if (o.delayAfter % stepsPerRun != 0)
    return fail(format("--l2l-delay-after %lld: schedule '%s' runs %d "
                       "optimizer steps at a time, so the delayed steps can "
                       "start only at a multiple of %d",
                       (long long)o.delayAfter, x.name.c_str(), stepsPerRun,
                       stepsPerRun));
  for (size_t i = 0; i < m.schedules.size() && warmup < 0; ++i) {
    const ScheduleInfo &w = m.schedules[i];
    if (!w.forwardOnly && w.steps == 1 && w.kind == x.kind &&
        w.microbatches == mbs && w.replicas == x.replicas)
      warmup = int(i);
  }
  if (warmup < 0)
    return fail("--l2l-delay-after: the program has no plain '" + x.kind +
                "' schedule of one step with " + std::to_string(mbs) +
                " micro-batches for the warm-up (pipe-train and pipe-compile "
                "write one with --l2l-update delayed)");
  return true;
}

bool Trainer::openData() {
  int n = pipe_rt_session_num_inputs(s);
  for (int k = 0; k < n; ++k) {
    const char *dtype;
    int rank;
    const int64_t *shape;
    pipe_rt_session_input_type(s, k, &dtype, &rank, &shape);
    // With the values the model accepts (token ids below the vocabulary,
    // class ids below the class count), as the compiler found them.
    inputs.push_back({dtype, std::vector<int64_t>(shape, shape + rank),
                      m.inputRanges[size_t(k)]});
  }
  data = TrainingData::open(o.data, inputs, error);
  if (!data)
    return false;
  numInputs = inputs.size();
  if (!inputs.empty() && inputs[0].isInteger()) {
    summary.unit = "tok";
    itemsPerMb = inputs[0].numel();
  } else {
    summary.unit = "samples";
    itemsPerMb =
        !inputs.empty() && !inputs[0].shape.empty() ? inputs[0].shape[0] : 1;
  }
  if (data->isText())
    print(format("data: %s, %lld bytes train, %lld held out",
                 o.data.path.c_str(), (long long)data->trainSize(),
                 (long long)data->evalSize()));
  else
    print(format("data: %s, %lld rows train, %lld eval", o.data.path.c_str(),
                 (long long)data->trainSize(), (long long)data->evalSize()));
  return true;
}

bool Trainer::evaluate(int64_t step, double &loss) {
  int perRun = evalMbs * evalSteps;
  // In-process replicas each evaluate their share of a run's micro-batches;
  // the run reports each slot's mean over them.
  int drawn = perRun * evalReplicas;
  int64_t runs = o.evalBatches;
  if (runs == 0)
    runs = (data->evalMicrobatches() + drawn - 1) / drawn;
  std::vector<float> losses(static_cast<size_t>(perRun));
  double sum = 0;
  int numMetrics = pipe_rt_session_num_metrics(s);
  std::vector<int64_t> hits(numMetrics, 0), counted(numMetrics, 0);
  int64_t done = 0;
  for (; done < runs; ++done) {
    // A long evaluation (a large held-out split, --eval-batches) stops at
    // a signal like training does, between runs.
    if (gStop != 0) {
      summary.interrupted = true;
      summary.signal = gStop;
      break;
    }
    const void *const *in = data->eval(done * drawn, drawn);
    if (pipe_rt_session_run(s, eval, in, losses.data()) != PIPE_RT_OK)
      return fail(format("evaluation at step %lld: ", (long long)step) +
                  pipe_rt_session_error(s));
    for (float l : losses)
      sum += l;
    for (int k = 0; k < numMetrics; ++k) {
      int64_t h = 0, c = 0;
      pipe_rt_session_metric(s, k, nullptr, &h, &c);
      hits[k] += h;
      counted[k] += c;
    }
  }
  if (done < runs) {
    print(format("eval step %lld: stopped after %lld of %lld runs: %s",
                 (long long)step, (long long)done, (long long)runs,
                 gStop == SIGINT    ? "received SIGINT"
                 : gStop == SIGTERM ? "received SIGTERM"
                                    : "asked to stop"));
    loss = std::nan("");
    return true;
  }
  loss = sum / double(runs * perRun);
  lastEval = step;
  summary.evalLoss = loss;
  summary.evalMetrics.clear();
  std::string metricsText;
  for (int k = 0; k < numMetrics; ++k) {
    const char *name = "";
    pipe_rt_session_metric(s, k, &name, nullptr, nullptr);
    double value = counted[k] ? double(hits[k]) / double(counted[k]) : NAN;
    summary.evalMetrics.emplace_back(name, value);
    metricsText += format(", %s %.4f (%lld/%lld)", name, value,
                          (long long)hits[k], (long long)counted[k]);
  }
  print(format("eval step %lld: loss %.4f%s (%lld micro-batches)",
               (long long)step, loss, metricsText.c_str(),
               (long long)(runs * drawn)));
  return true;
}

std::string Trainer::evalMetricsJson() const {
  std::string out;
  for (const auto &[name, value] : summary.evalMetrics)
    out += ",\"eval_" + name + "\":" + jsonNumber(value);
  return out;
}

TrainerState Trainer::state(int64_t step) const {
  TrainerState st;
  st.step = step;
  st.seed = int64_t(seed);
  st.rngDraws = int64_t(data->rngDraws());
  st.cursor = cursor;
  return st;
}

/// After an error: " (PATH keeps step N)" if there is a checkpoint.
std::string Trainer::keptNote() const {
  if (lastCheckpoint < 0 || o.checkpointPath.empty())
    return "";
  return format(" (%s keeps step %lld)", o.checkpointPath.c_str(),
                (long long)lastCheckpoint);
}

/// Loads --checkpoint after checking everything the trainer reads from it
/// against what this run can have produced (each field would otherwise
/// index data out of bounds or hang the RNG's skip-ahead); changes nothing
/// on error.
bool Trainer::resumeFrom(TrainerState &st) {
  const std::string &path = o.checkpointPath;
  StFile file;
  if (!readSafetensors(path, file, error) ||
      !readTrainerState(file, path, st, error))
    return false;
  const ScheduleInfo &x = m.schedules[train];
  auto bad = [&](const char *field, int64_t value, const std::string &why) {
    return fail(path + ": " + field + " is " + std::to_string(value) + ": " +
                why);
  };
  if (st.step < 0 || st.step > kMaxSteps)
    return bad("trainer.step", st.step,
               "must be in [0, " + std::to_string(kMaxSteps) + "]");
  if (st.step % stepsPerRun != 0 && st.step >= o.delayAfter)
    return bad("trainer.step", st.step,
               "not a multiple of the " + std::to_string(stepsPerRun) +
                   " steps per run of schedule '" + x.name + "'");
  // Each step consumes the schedule's micro-batches (no overflow: kMaxSteps
  // x the manifest's 2^24).
  int64_t consumed = st.step * mbs * replicas;
  if (st.cursor != consumed)
    return bad("trainer.data_cursor", st.cursor,
               format("%lld steps of schedule '%s' consume %lld micro-batches "
                      "(%d each); not a checkpoint of this program and "
                      "schedule",
                      (long long)st.step, x.name.c_str(), (long long)consumed,
                      mbs * replicas));
  // Text data draws one offset per window, and redraws with a probability
  // below (L - T) / 2^64 < 2^-20: twice the windows (+ a margin) is more
  // than any run draws, and bounds the skip-ahead to the run's own cost.
  int64_t windows = 1;
  if (!inputs.empty() && !inputs[0].shape.empty() && inputs[0].shape.back() > 0)
    windows = inputs[0].numel() / inputs[0].shape.back();
  int64_t maxDraws =
      mulAddSaturated(mulAddSaturated(consumed, windows, 0), 2, 64);
  if (st.rngDraws < 0 || st.rngDraws > maxDraws)
    return bad("trainer.rng_draws", st.rngDraws,
               format("must be in [0, %lld]: %lld micro-batches of %lld "
                      "windows draw about one offset per window",
                      (long long)maxDraws, (long long)consumed,
                      (long long)windows));
  if (!checkFiniteFile(file, path, error))
    return false;
  int64_t values[kNumState];
  if (pipe_rt_session_load(s, path.c_str(), kStateNames, values, kNumState) !=
      PIPE_RT_OK)
    return fail(pipe_rt_session_error(s));
  return true;
}

/// Opens --log-json: a new log, or when resuming the existing one, cut back
/// to the checkpoint's step first (the steps after it run again).
bool Trainer::openLog(bool resumed, int64_t start) {
  if (o.logJson.empty())
    return true;
  struct stat st;
  if (resumed && ::stat(o.logJson.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
      !cutLog(start))
    return false;
  log = std::fopen(o.logJson.c_str(), resumed ? "a" : "w");
  if (!log)
    return fail(o.logJson + ": cannot write the log: " + std::strerror(errno));
  return true;
}

/// Drops the log's records of steps after `start` and a last line cut short
/// (a kill while it was written), atomically.
bool Trainer::cutLog(int64_t start) {
  std::string text;
  if (std::FILE *f = std::fopen(o.logJson.c_str(), "rb")) {
    char buf[1 << 16];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0)
      text.append(buf, n);
    bool readOk = !std::ferror(f);
    std::fclose(f);
    if (!readOk)
      return fail(o.logJson + ": cannot read the log to resume it: " +
                  std::strerror(errno));
  } else {
    return fail(o.logJson +
                ": cannot read the log to resume it: " + std::strerror(errno));
  }
  std::string kept;
  for (size_t pos = 0, nl; (nl = text.find('\n', pos)) != std::string::npos;
       pos = nl + 1) {
    long long step;
    if (std::sscanf(text.c_str() + pos, "{\"step\":%lld", &step) == 1 &&
        step > start)
      continue;
    kept.append(text, pos, nl + 1 - pos);
  }
  return kept.size() == text.size() ||
         writeFileAtomically(o.logJson, kept, error);
}

/// Appends a line to the log; a full disk or a closed pipe is an error.
bool Trainer::writeLog(const std::string &line) {
  if (std::fputs(line.c_str(), log) < 0 || std::fflush(log) != 0)
    return fail(o.logJson + ": cannot write the log: " + std::strerror(errno));
  return true;
}

/// Distributed runs: every rank gets every param before anything is
/// written (once per step).
bool Trainer::share(int64_t step) {
  if (!o.shareState || sharedStep == step)
    return true;
  sharedStep = step;
  return o.shareState(error);
}

/// Writes the checkpoint of `step`. A periodic one that cannot be written is
/// a warning (the previous one stays and training goes on: the disk may
/// have room again by the next); a non-finite state is never written.
bool Trainer::checkpoint(int64_t step, bool periodic) {
  if (o.checkpointPath.empty() || lastCheckpoint == step)
    return true;
  if (!share(step))
    return false;
  if (!o.writesCheckpoints) {
    lastCheckpoint = step;
    return true;
  }
  std::string why;
  if (!checkFiniteState(s, why))
    return fail(format("step %lld: ", (long long)step) + why +
                ": training diverged; the checkpoint is not written" +
                keptNote());
  if (!saveCheckpoint(s, o.checkpointPath, state(step), why)) {
    if (!periodic)
      return fail(why);
    print(format("warning: step %lld: %s; training goes on%s", (long long)step,
                 why.c_str(), keptNote().c_str()));
    return true;
  }
  lastCheckpoint = step;
  summary.checkpointWritten = o.checkpointPath;
  print(format("checkpoint: step %lld -> %s", (long long)step,
               o.checkpointPath.c_str()));
  return true;
}

/// Writes every output at the end (or at a stop): each is attempted even if
/// another failed, so that one bad output does not lose the others.
bool Trainer::finish(int64_t step) {
  std::vector<std::string> errors;
  auto attempt = [&](bool ok) {
    if (!ok)
      errors.push_back(error);
  };
  if (!summary.interrupted && doEval && lastEval != step) {
    double loss;
    attempt(evaluate(step, loss));
  }
  attempt(share(step));
  attempt(checkpoint(step, false));
  if (!summary.interrupted && !o.saveWeights.empty()) {
    std::string why;
    if (!checkFiniteState(s, why))
      attempt(fail(format("step %lld: ", (long long)step) + why +
                   ": not writing " + o.saveWeights));
    else if (saveParams(s, o.saveWeights, error))
      summary.weightsWritten = o.saveWeights;
    else
      attempt(false);
  }
  if (profiling)
    attempt(writeProfile());
  if (!o.tracePath.empty())
    attempt(pipe_rt_session_write_trace(s, o.tracePath.c_str()) == PIPE_RT_OK ||
            fail(pipe_rt_session_error(s)));
  if (log) {
    bool closed = std::fclose(log) == 0;
    log = nullptr;
    attempt(closed || fail(o.logJson +
                           ": cannot write the log: " + std::strerror(errno)));
  }
  if (errors.empty())
    return true;
  error.clear();
  for (const std::string &e : errors)
    error += (error.empty() ? "" : "; ") + e;
  return false;
}

bool Trainer::run() {
  using Clock = std::chrono::steady_clock;
  auto t0 = Clock::now();
  auto since = [](Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  };
  summary = TrainerSummary();
  summary.trainLoss = summary.evalLoss = std::nan("");
  gStop = 0;
  if (!checkOptions() || !applyParamGroups() || !pickSchedules() || !openData())
    return false;
  doEval = eval >= 0 && data->evalMicrobatches() > 0;
  if (eval >= 0 && !doEval)
    print("note: the data has no evaluation split: no evaluation");
  // NaN in, NaN out: a non-finite initial weight would make every loss NaN.
  std::string why;
  if (!checkFiniteState(s, why))
    return fail(s->weightsPath + ": " + why);
  if (!o.initWeights.empty() &&
      !loadInitWeights(s, o.initWeights, o.initWeightsStrict, print, error))
    return false;

  // Resume.
  int64_t start = 0;
  seed = o.seed;
  data->seedRng(seed, 0);
  bool resumed = false;
  if (o.resume) {
    if (fileExists(o.checkpointPath)) {
      TrainerState st;
      if (!resumeFrom(st))
        return false;
      start = st.step;
      cursor = st.cursor;
      if (uint64_t(st.seed) != o.seed)
        print(format("warning: the checkpoint was made with seed %llu, not "
                     "%llu: continuing its data order",
                     (unsigned long long)st.seed, (unsigned long long)o.seed));
      seed = uint64_t(st.seed);
      data->seedRng(seed, uint64_t(st.rngDraws));
      lastCheckpoint = start;
      resumed = true;
      print(format("resumed from %s at step %lld", o.checkpointPath.c_str(),
                   (long long)start));
      if (start > o.steps)
        print(format("warning: the checkpoint is past the last step (%lld)",
                     (long long)o.steps));
    } else {
      print("no checkpoint at " + o.checkpointPath + ": starting from step 0");
    }
  }
  summary.startStep = start;
  summary.steps = start;

  if (!openLog(resumed, start))
    return false;
  profiling = !o.profilePath.empty();
  if (!o.tracePath.empty() || profiling)
    pipe_rt_session_enable_trace(s, 1);
  profileSkip =
      o.profileSkip >= 0 ? o.profileSkip : (o.steps - start > 1 ? 1 : 0);

  const ScheduleInfo &x = m.schedules[train];
  print(format(
      "training '%s' (%s, %d devices, %d micro-batches%s%s%s) from step "
      "%lld to %lld",
      x.name.c_str(), x.kind.c_str(), x.devices, mbs,
      inProcessReplicas(train) > 1
          ? format(" each, %d data-parallel replicas in this process%s",
                   inProcessReplicas(train),
                   x.hasPsStages() ? " on one parameter server" : "")
                .c_str()
          : "",
      stepsPerRun > 1 ? format(", %d steps per run", stepsPerRun).c_str() : "",
      warmup >= 0 && start < o.delayAfter
          ? format(", '%s' until step %lld", m.schedules[warmup].name.c_str(),
                   (long long)o.delayAfter)
                .c_str()
          : "",
      (long long)start, (long long)o.steps));

  SignalGuard guard(o.handleSignals);
  std::vector<float> losses(static_cast<size_t>(mbs * stepsPerRun));
  std::vector<double> recent; // last 10 step losses
  double trainSeconds = 0;
  int64_t items = 0;
  // Progress accumulators since the last line.
  auto lastLine = Clock::now();
  double lineLoss = 0, lineSeconds = 0;
  int64_t lineSteps = 0, lineItems = 0;
  int64_t step = start;
  while (step < o.steps) {
    bool stop = gStop != 0;
    if (o.agreeToStop && o.agreeToStop(stop) && !stop)
      gStop = -1; // another rank was signalled
    if (gStop != 0)
      break;
    if (o.stopAfter > 0 && step - start >= o.stopAfter) {
      gStop = -1;
      break;
    }
    // --l2l-delay-after: plain steps, one per run, before the delayed ones.
    bool warming = step < o.delayAfter;
    int schedule = warming ? warmup : train;
    int runSteps = warming ? 1 : stepsPerRun;
    int perRun = mbs * runSteps;
    // A run of several optimizer steps follows the schedule step by step.
    std::vector<float> lrs;
    for (int k = 0; k < runSteps; ++k)
      lrs.push_back(learningRate(o, step + k));
    pipe_rt_session_set_step_lrs(s, lrs.data(), runSteps);
    float lr = lrs.back(); // the progress line reports the run's last step
    // Every replica draws the run's micro-batches and takes its share of
    // each step's: step k's R x M micro-batches in replica order, as
    // in-process replicas take them (ComputeActions.cpp).
    const void *const *in = data->train(cursor, perRun * replicas);
    if (in && o.replicas > 1) {
      // This rank's replicas' shares: local x M micro-batches a step.
      size_t perStep = size_t(mbs) * inProcessReplicas(schedule) * numInputs;
      rankShare.resize(size_t(runSteps) * perStep);
      for (int k = 0; k < runSteps; ++k)
        std::copy_n(in + (size_t(k) * o.replicas + o.replica) * perStep,
                    perStep, rankShare.begin() + size_t(k) * perStep);
      in = rankShare.data();
    }
    if (profiling && !profileMarked && step - start >= profileSkip) {
      pipe_rt_session_profile_mark(s);
      profileMarked = true;
    }
    auto tr = Clock::now();
    if (pipe_rt_session_run(s, schedule, in, losses.data()) != PIPE_RT_OK)
      return fail(format("step %lld: ", (long long)step + 1) +
                  pipe_rt_session_error(s));
    double runSeconds = since(tr);
    trainSeconds += runSeconds;
    if (profileMarked) {
      profileSeconds += runSeconds;
      profileSteps += runSteps;
      profileStepSeconds.push_back(runSeconds / double(runSteps));
    }
    cursor += perRun * replicas;
    items += itemsPerMb * perRun * replicas;
    double rate = runSeconds > 0
                      ? double(itemsPerMb * perRun * replicas) / runSeconds
                      : 0.0;
    int64_t first = step;
    step += runSteps;
    summary.steps = step;

    // Per-step losses: the mean over the step's micro-batches. A NaN or
    // infinite loss means the weights are (or are about to be) garbage:
    // stop before anything is written over the last good files.
    std::vector<double> stepLosses;
    for (int k = 0; k < runSteps; ++k) {
      double sum = 0;
      for (int mb = 0; mb < mbs; ++mb)
        sum += losses[size_t(k) * mbs + mb];
      if (!std::isfinite(sum))
        return fail(format("step %lld: the loss is %s: training diverged "
                           "(lower --lr, or --clip?); nothing of it is "
                           "written%s",
                           (long long)(first + k + 1), nonFinite(sum),
                           keptNote().c_str()));
      stepLosses.push_back(sum / mbs);
      recent.push_back(stepLosses.back());
      if (recent.size() > 10)
        recent.erase(recent.begin());
      lineLoss += stepLosses.back();
      ++lineSteps;
    }
    lineItems += itemsPerMb * perRun * replicas;
    lineSeconds += runSeconds;

    bool last = step >= o.steps;
    bool due = o.logEvery > 0 ? step % o.logEvery == 0
                              : first == start || since(lastLine) >= 2.0;
    if (due || last) {
      double done = double(step - start);
      double eta = done > 0 ? since(t0) / done * double(o.steps - step) : 0;
      print(format(
          "step %lld/%lld  loss %.4f  lr %.1e  %s %s/s  eta %s",
          (long long)step, (long long)o.steps, lineLoss / double(lineSteps),
          double(lr),
          formatRate(lineSeconds > 0 ? double(lineItems) / lineSeconds : 0.0)
              .c_str(),
          summary.unit.c_str(), duration(eta).c_str()));
      lastLine = Clock::now();
      lineLoss = lineSeconds = 0;
      lineSteps = lineItems = 0;
    }

    bool evalNow = doEval && o.evalEvery > 0 && step % o.evalEvery == 0;
    double evalLoss = std::nan("");
    // Evaluation runs stay out of the profile (and of the trace when only
    // the profile asked for one).
    if (evalNow && profiling && o.tracePath.empty())
      pipe_rt_session_enable_trace(s, 0);
    if (evalNow && !evaluate(step, evalLoss))
      return false;
    if (evalNow && profiling && o.tracePath.empty())
      pipe_rt_session_enable_trace(s, 1);

    for (int k = 0; log && k < runSteps; ++k) {
      std::string rec =
          format("{\"step\":%lld,\"loss\":%s,\"lr\":%s,\"%s_per_s\":%s,"
                 "\"time\":%s",
                 (long long)(first + k + 1), jsonNumber(stepLosses[k]).c_str(),
                 jsonNumber(lrs[k]).c_str(),
                 summary.unit == "tok" ? "tokens" : "samples",
                 jsonNumber(rate).c_str(), jsonNumber(since(t0)).c_str());
      if (evalNow && k == runSteps - 1)
        rec += ",\"eval_loss\":" + jsonNumber(evalLoss) + evalMetricsJson();
      if (!writeLog(rec + "}\n"))
        return false;
    }
    if (o.checkpointEvery > 0 && step % o.checkpointEvery == 0 && !last &&
        !checkpoint(step, true))
      return false;
  }

  if (gStop != 0) {
    summary.interrupted = true;
    summary.signal = gStop;
    print(gStop > 0
              ? format("stopping at step %lld: received %s", (long long)step,
                       gStop == SIGINT ? "SIGINT" : "SIGTERM")
              : format("stopping at step %lld as asked", (long long)step));
  }
  if (!finish(step))
    return false;

  if (!recent.empty()) {
    double sum = 0;
    for (double l : recent)
      sum += l;
    summary.trainLoss = sum / double(recent.size());
  }
  summary.itemsPerSecond = trainSeconds > 0 ? double(items) / trainSeconds : 0;
  summary.wallSeconds = since(t0);
  for (int d = 0; d < x.devices; ++d)
    summary.peakBytes.push_back(pipe_rt_session_peak_bytes(s, d));
  summary.optimizerThreads = pipe_rt_session_optimizer_threads(s);
  print(formatSummary(summary));
  return true;
}

/// Writes the --profile file atomically.
bool Trainer::writeProfile() {
  if (profileSteps == 0)
    return fail(format("--profile %s: no step ran after the %lld skipped "
                       "(--profile-skip)",
                       o.profilePath.c_str(), (long long)profileSkip));
  const ScheduleInfo &x = m.schedules[train];
  std::string peaks;
  for (int d = 0; d < x.devices; ++d)
    peaks += format("%s%llu", d ? "," : "",
                    (unsigned long long)pipe_rt_session_peak_bytes(s, d));
  double stepSeconds = profileSeconds / double(profileSteps);
  // The median resists the occasional slow step of a shared machine.
  std::vector<double> sorted = profileStepSeconds;
  std::sort(sorted.begin(), sorted.end());
  size_t n = sorted.size();
  double medianSeconds =
      n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  std::string text =
      format("{\"schedule\":\"%s\",\"kind\":\"%s\",\"devices\":%d,"
             "\"microbatches\":%d,\"steps\":%lld,\"step_ms\":%s,"
             "\"step_ms_median\":%s,"
             "\"%s_per_s\":%s,\"peak_device_bytes\":[%s],"
             "\"backend\":\"%s\"",
             x.name.c_str(), x.kind.c_str(), x.devices, mbs,
             (long long)profileSteps, jsonNumber(stepSeconds * 1e3).c_str(),
             jsonNumber(medianSeconds * 1e3).c_str(),
             summary.unit == "tok" ? "tokens" : "samples",
             jsonNumber(stepSeconds > 0
                            ? double(itemsPerMb * mbs * replicas) / stepSeconds
                            : 0)
                 .c_str(),
             peaks.c_str(), backendOf(*s)->name());
  if (o.profileExtra) {
    std::string extra = o.profileExtra();
    if (!extra.empty())
      text += "," + extra;
  }
  text +=
      ",\"runtime\":" + std::string(pipe_rt_session_profile_json(s)) + "}\n";
  std::string why;
  if (!writeFileAtomically(o.profilePath, text, why))
    return fail("cannot write the profile: " + why);
  return true;
}

} // namespace

bool checkOutputPaths(const TrainerOptions &o, std::string &error) {
  // The log is appended to line by line; every other output is renamed
  // into place. The caller's outputs are only compared with the others.
  struct Output {
    std::string flag;
    const std::string *path;
    std::optional<OutputKind> kind;
  };
  std::vector<Output> outputs = {
      {"--checkpoint", &o.checkpointPath, OutputKind::Replaced},
      {"--save-weights", &o.saveWeights, OutputKind::Replaced},
      {"--log-json", &o.logJson, OutputKind::Streamed},
      {"--trace", &o.tracePath, OutputKind::Replaced},
      {"--profile", &o.profilePath, OutputKind::Replaced}};
  for (const auto &[flag, path] : o.callerOutputs)
    outputs.push_back({flag, &path, std::nullopt});
  // An output written over a file the run reads would lose the user's
  // only copy of it (the initial weights, the artifact, the data).
  std::vector<std::pair<std::string, std::string>> inputs = o.inputs;
  inputs.emplace_back("--data", o.data.path);
  inputs.emplace_back("--init-weights", o.initWeights);
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string &flag = outputs[i].flag;
    const std::string *path = outputs[i].path;
    if (path->empty())
      continue;
    if (outputs[i].kind &&
        !checkOutputPath(flag, *path, *outputs[i].kind, error))
      return false;
    for (size_t j = 0; j < i; ++j)
      if (!outputs[j].path->empty() && isSameFile(*outputs[j].path, *path)) {
        error = flag + " '" + *path + "': also the " + outputs[j].flag +
                " file (each output needs its own path)";
        return false;
      }
    for (const auto &[inputFlag, inputPath] : inputs)
      if (!inputPath.empty() && isSameFile(inputPath, *path)) {
        error = flag + " '" + *path + "': also the " + inputFlag +
                " file, which the run reads (an output must not "
                "replace an input)";
        return false;
      }
  }
  return true;
}

uint64_t trainingFingerprint(const TrainerOptions &o) {
  // FNV-1a over each field's bytes.
  uint64_t hash = 1469598103934665603ull;
  auto add = [&](const void *data, size_t size) {
    for (size_t i = 0; i < size; ++i) {
      hash ^= static_cast<const unsigned char *>(data)[i];
      hash *= 1099511628211ull;
    }
  };
  auto field = [&](const auto &value) { add(&value, sizeof(value)); };
  auto text = [&](const std::string &value) {
    field(value.size());
    add(value.data(), value.size());
  };
  text(o.trainSchedule);
  text(o.evalSchedule);
  field(o.data.format);
  field(o.data.trainFraction);
  field(o.steps);
  field(o.stopAfter);
  field(o.delayAfter);
  field(o.optimizer);
  field(o.momentum);
  field(o.dampening);
  field(o.nesterov);
  field(o.beta1);
  field(o.beta2);
  field(o.eps);
  field(o.weightDecay);
  field(o.clipNorm);
  field(o.paramLrScales.size());
  for (const auto &[name, scale] : o.paramLrScales) {
    text(name);
    field(scale);
  }
  field(o.decayAll);
  field(o.lr);
  field(o.minLr);
  field(o.warmupSteps);
  field(o.lrSchedule);
  field(o.seed);
  field(o.evalEvery);
  field(o.evalBatches);
  field(o.checkpointEvery);
  field(o.resume);
  field(o.initWeightsStrict);
  field(o.replicas);
  return hash ? hash : 1;
}

void initSessionOptions(const TrainerOptions &o, pipe_rt_session_options &so) {
  so.optimizer = o.optimizer;
  so.sgd.lr = o.lr;
  so.sgd.momentum = o.momentum;
  so.sgd.dampening = o.dampening;
  so.sgd.weight_decay = o.weightDecay < 0 ? 0.0f : o.weightDecay;
  so.sgd.nesterov = o.nesterov ? 1 : 0;
  so.adamw.lr = o.lr;
  so.adamw.beta1 = o.beta1;
  so.adamw.beta2 = o.beta2;
  so.adamw.eps = o.eps;
  so.adamw.weight_decay = o.weightDecay < 0 ? 0.01f : o.weightDecay;
  so.clip_norm = o.clipNorm;
}

float learningRate(const TrainerOptions &o, int64_t step) {
  const double kPi = 3.14159265358979323846;
  double lr = o.lr, minLr = o.minLr;
  int64_t warmup = o.warmupSteps;
  if (step < warmup)
    return float(lr * double(step + 1) / double(warmup));
  double p =
      double(step - warmup) / double(std::max<int64_t>(1, o.steps - warmup));
  switch (o.lrSchedule) {
  case LrSchedule::Constant:
    return float(lr);
  case LrSchedule::Cosine:
    return float(minLr + (lr - minLr) * (1 + std::cos(kPi * p)) / 2);
  case LrSchedule::Linear:
    return float(lr + (minLr - lr) * p);
  }
  return float(lr);
}

bool runTraining(pipe_rt_session *session, const TrainerOptions &options,
                 TrainerSummary &summary, std::string &error) {
  if (!session) {
    error = "runTraining: null session";
    return false;
  }
  return Trainer(session, options, summary, error).run();
}

void requestStop() { gStop = -1; }

std::string formatSummary(const TrainerSummary &r) {
  std::string out = format("summary: %lld steps", (long long)r.steps);
  if (r.startStep > 0)
    out += format(" (resumed at %lld)", (long long)r.startStep);
  if (r.interrupted)
    out += ", interrupted";
  out += "\n  train loss (mean of last 10): " +
         (std::isnan(r.trainLoss) ? std::string("-")
                                  : format("%.4f", r.trainLoss));
  out +=
      "\n  eval loss: " +
      (std::isnan(r.evalLoss) ? std::string("-") : format("%.4f", r.evalLoss));
  for (const auto &[name, value] : r.evalMetrics)
    out += format("\n  eval %s: %.4f", name.c_str(), value);
  out += format("\n  throughput: %s %s/s, wall time %s",
                formatRate(r.itemsPerSecond).c_str(), r.unit.c_str(),
                duration(r.wallSeconds).c_str());
  out += "\n  peak memory:";
  for (size_t d = 0; d < r.peakBytes.size(); ++d)
    out += format(" device %zu %s%s", d, bytesString(r.peakBytes[d]).c_str(),
                  d + 1 < r.peakBytes.size() ? "," : "");
  if (r.optimizerThreads)
    out += format("\n  host optimizer: %u thread%s", r.optimizerThreads,
                  r.optimizerThreads == 1 ? "" : "s");
  if (!r.checkpointWritten.empty())
    out += "\n  checkpoint: " + r.checkpointWritten;
  if (!r.weightsWritten.empty())
    out += "\n  weights: " + r.weightsWritten;
  return out;
}

} // namespace pipe_rt
