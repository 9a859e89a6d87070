//===- TrainerFlags.cpp - Command-line flags of the training loop ---------===//

#include "pipe/Runtime/TrainerFlags.h"
#include "Format.h"
#include "Session.h"

#include <cctype>
#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <map>

using namespace pipe_rt;

namespace {

/// A decimal number and nothing else: strtod alone would skip leading
/// spaces and accept a prefix.
bool parseDouble(const std::string &s, double &out) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0])))
    return false;
  char *end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return !*end;
}

/// Digits only, at most `max`: strtoull alone would skip spaces, accept a
/// sign (and negate "-1" to 2^64 - 1), a prefix, and saturate on overflow.
enum class IntParse { Ok, NotANumber, OutOfRange };
IntParse parseCount(const std::string &s, uint64_t max, uint64_t &out) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos)
    return IntParse::NotANumber;
  errno = 0;
  out = std::strtoull(s.c_str(), nullptr, 10);
  return errno == 0 && out <= max ? IntParse::Ok : IntParse::OutOfRange;
}

/// A value in a message: %g, but "nan" for every NaN (glibc may print
/// "-nan").
std::string number(double v) { return std::isnan(v) ? "nan" : format("%g", v); }

/// The ranges of the real-valued options: PyTorch's (torch.optim.AdamW and
/// SGD check the same), and finite, since an infinite rate or decay turns
/// every weight into NaN at the first step.
enum class Range {
  NonNegative, // [0, inf)
  Unit,        // [0, 1)
  Positive,    // (0, inf); 0 is "off" for TrainerOptions
};
struct RealOption {
  const char *flag;
  float TrainerOptions::*field;
  Range range;
};
const RealOption kRealOptions[] = {
    {"--lr", &TrainerOptions::lr, Range::NonNegative},
    {"--min-lr", &TrainerOptions::minLr, Range::NonNegative},
    {"--weight-decay", &TrainerOptions::weightDecay, Range::NonNegative},
    {"--momentum", &TrainerOptions::momentum, Range::NonNegative},
    {"--dampening", &TrainerOptions::dampening, Range::NonNegative},
    {"--beta1", &TrainerOptions::beta1, Range::Unit},
    {"--beta2", &TrainerOptions::beta2, Range::Unit},
    {"--eps", &TrainerOptions::eps, Range::NonNegative},
    {"--clip", &TrainerOptions::clipNorm, Range::Positive},
};

/// Checks `v` (written `text`) against `r`'s range.
bool checkReal(const RealOption &r, float v, const std::string &text,
               std::string &error) {
  bool ok = std::isfinite(v) && v >= 0;
  const char *range = "a finite number >= 0";
  if (r.range == Range::Unit) {
    ok = ok && v < 1;
    range = "in [0, 1)";
  } else if (r.range == Range::Positive) {
    ok = ok && v > 0;
    range = "a finite number > 0";
  }
  if (!ok)
    error =
        std::string(r.flag) + " " + text + ": out of range, must be " + range;
  return ok;
}

/// The step counts of TrainerOptions, all in [0, kMaxSteps].
const std::pair<const char *, int64_t TrainerOptions::*> kCountOptions[] = {
    {"--steps", &TrainerOptions::steps},
    {"--stop-after", &TrainerOptions::stopAfter},
    {"--l2l-delay-after", &TrainerOptions::delayAfter},
    {"--warmup", &TrainerOptions::warmupSteps},
    {"--eval-every", &TrainerOptions::evalEvery},
    {"--eval-batches", &TrainerOptions::evalBatches},
    {"--checkpoint-every", &TrainerOptions::checkpointEvery},
    {"--log-every", &TrainerOptions::logEvery},
    {"--profile-skip", &TrainerOptions::profileSkip},
};

} // namespace

bool pipe_rt::validateTrainerOptions(const TrainerOptions &o,
                                     std::string &error) {
  for (auto &[flag, field] : kCountOptions) {
    int64_t v = o.*field;
    // profileSkip -1: the default (1 when more than one step runs).
    if ((v < 0 && !(field == &TrainerOptions::profileSkip && v == -1)) ||
        v > kMaxSteps) {
      error = std::string(flag) + " " + std::to_string(v) +
              ": out of range, must be in [0, " + std::to_string(kMaxSteps) +
              "]";
      return false;
    }
  }
  for (const RealOption &r : kRealOptions) {
    float v = o.*r.field;
    // Negative weight decay: the optimizer's default; clip 0: off.
    if ((r.field == &TrainerOptions::weightDecay && v < 0) ||
        (r.field == &TrainerOptions::clipNorm && v == 0))
      continue;
    if (!checkReal(r, v, number(v), error))
      return false;
  }
  // Found out only after training otherwise: no step would be profiled.
  if (!o.profilePath.empty() && o.profileSkip >= o.steps) {
    error = "--profile-skip " + std::to_string(o.profileSkip) +
            ": leaves out every one of the " + std::to_string(o.steps) +
            " steps, so --profile would measure none";
    return false;
  }
  if (o.minLr > o.lr) {
    error = "--min-lr " + number(o.minLr) +
            ": out of range, must be at most --lr (" + number(o.lr) + ")";
    return false;
  }
  std::map<std::string, float> scales;
  for (const auto &[name, scale] : o.paramLrScales) {
    std::string flag = "--param-lr " + name + "=" + number(scale);
    if (!std::isfinite(scale) || scale < 0) {
      error = flag + ": out of range, the multiplier must be a finite number "
                     ">= 0";
      return false;
    }
    if (!std::isfinite(o.lr * scale)) {
      error = flag + ": --lr " + number(o.lr) +
              " times the multiplier is too large for a float";
      return false;
    }
    auto [it, added] = scales.emplace(name, scale);
    if (!added && it->second != scale) {
      error =
          flag + ": the param already has the multiplier " + number(it->second);
      return false;
    }
  }
  if (o.optimizer == PIPE_RT_OPTIM_SGD && o.nesterov &&
      (!(o.momentum > 0) || o.dampening != 0)) {
    error = "--nesterov needs a --momentum > 0 and no --dampening (as "
            "torch.optim.SGD), not momentum " +
            number(o.momentum) + ", dampening " + number(o.dampening);
    return false;
  }
  return true;
}

const char *pipe_rt::trainerFlagsUsage() {
  return R"(Data and schedules:
  --data PATH            text file (byte-level LM, default
                         /usr/share/common-licenses/GPL-3) or .safetensors
                         with input<k> [N, ...] (+ eval_input<k>)
  --data-format F        auto (by suffix), text or safetensors
  --schedule NAME        training schedule (default: first non-forward-only)
  --eval-schedule NAME   forward-only schedule for evaluation (default: the
                         first forward-only one, if any)
Loop:
  --steps N              optimizer steps in total (default 1); every count
                         N below is in [0, 10^11]
  --stop-after N         stop after N steps of this invocation, checkpoint,
                         exit 3 (for time-sliced jobs)
  --l2l-delay-after N    delayed-update L2L: the first N steps run the
                         program's plain L2L schedule (default 0)
  --seed N               seed of the text data's window RNG (default 0,
                         at most 2^64 - 1)
  --eval-every N         evaluate every N steps (default: only at the end)
  --eval-batches N       eval schedule runs per evaluation (default: one
                         pass over the held-out data)
Optimizer:
  --optimizer sgd|adamw  (default adamw)
  --lr X                 peak learning rate (default 1e-3); every X is a
                         finite float >= 0
  --min-lr X             final learning rate of cosine/linear (default 0,
                         at most --lr)
  --warmup N             linear warm-up steps (default 0)
  --lr-schedule S        constant, cosine or linear (default constant)
  --weight-decay X       default 0.01 (adamw) / 0 (sgd); params of rank 0
                         or 1 (biases, norm scales) get none
  --decay-all            weight decay on every param, those too
  --param-lr NAME=MULT   the param NAME trains at MULT times the scheduled
                         rate (repeatable; MULT a finite float >= 0;
                         pipe-train's --lr-group resolves to these)
  --momentum X --dampening X --nesterov      SGD (--nesterov needs a
                         momentum > 0 and no dampening)
  --beta1 X --beta2 X --eps X                AdamW (betas in [0, 1))
  --clip X               global gradient-norm clipping, X > 0
                         (synchronous schedules only)
Files:
  --checkpoint PATH      checkpoint written at the end and on SIGINT/SIGTERM
  --checkpoint-every N   ... and every N steps
  --resume               continue from --checkpoint if it exists
  --init-weights PATH    pretrained params loaded over the initial ones, by
                         exact name; reports what matched, what is new and
                         what is ignored
  --init-weights-strict  a param not in the file or a tensor naming no
                         param is an error
  --save-weights PATH    final params (a valid --weights file); --save is
                         an alias
  --log-json PATH        JSON lines, one object per step
  --trace PATH           Chrome trace of every action
  --profile PATH         JSON phase breakdown of the measured steps: step
                         time, compute per phase, copy time and the part no
                         compute hid, host optimizer time, peak memory
  --profile-skip N       warm-up steps left out of --profile (default 1
                         when more than one step runs, else 0)
Misc:
  --device-memory BYTES  capacity of every device (over the program's own,
                         from the compile's device model; default 0: the
                         program's); an allocation over it fails the run
                         naming the device, action and bytes
  --log-every N          progress every N steps (default: about every 2 s)
  --watchdog S           seconds before a stuck transfer fails (default 60,
                         in (0, 1e6])
  --threads N            host optimizer threads (default 0: this rank's
                         cores, less one per device thread of an overlapped
                         or delayed L2L schedule; at most 1024)
  --ps-transfer T        f32 (default) or bf16: element type of the L2L
                         parameter server's weight and gradient copies
                         (masters and optimizer stay fp32)

Output paths are checked before anything runs; every file but the log is
written to PATH.tmp.<pid> and renamed over PATH.

Exit status: 0 done, 1 error (also a non-finite loss or state), 2 bad
command line, 3 stopped by SIGINT/SIGTERM or --stop-after (checkpoint
written; rerun with --resume).)";
}

void TrainerFlags::applyTo(pipe_rt_session_options &session) const {
  initSessionOptions(options, session);
  session.watchdog_seconds = watchdogSeconds;
  session.optimizer_threads = optimizerThreads;
  session.ps_transfer = psTransfer;
  session.capacity_bytes = deviceMemory;
}

bool pipe_rt::parseTrainerFlags(const std::vector<std::string> &args,
                                TrainerFlags &flags, std::string &error) {
  TrainerOptions &t = flags.options;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &a = args[i];
    bool hasNext = i + 1 < args.size();
    // Every failure below sets `error` naming the flag and returns false.
    auto fail = [&](const std::string &msg) {
      error = msg;
      return false;
    };
    auto str = [&](std::string &out) {
      if (!hasNext)
        return fail(a + " needs a value (see --help)");
      out = args[++i];
      return true;
    };
    // An empty path would read as "no output" later.
    auto output = [&](std::string &out) {
      if (!str(out))
        return false;
      return !out.empty() || fail(a + " '': empty path");
    };
    // The range of this flag, with the value as written; those between
    // flags (min-lr <= lr) once every flag is in.
    auto real = [&]() {
      const RealOption *r = nullptr;
      for (const RealOption &x : kRealOptions)
        if (a == x.flag)
          r = &x;
      std::string v;
      double d;
      if (!str(v))
        return false;
      if (!parseDouble(v, d))
        return fail(a + ": '" + v + "' is not a number");
      if (std::isfinite(d) && !std::isfinite(float(d)))
        return fail(a + " " + v + ": too large for a float (at most " +
                    number(FLT_MAX) + ")");
      t.*r->field = float(d);
      return checkReal(*r, float(d), v, error);
    };
    auto count = [&](uint64_t &out, uint64_t max, const char *note) {
      std::string v;
      if (!str(v))
        return false;
      switch (parseCount(v, max, out)) {
      case IntParse::Ok:
        return true;
      case IntParse::NotANumber:
        return fail(a + ": '" + v + "' is not a non-negative integer");
      case IntParse::OutOfRange:
        break;
      }
      return fail(a + " " + v + ": out of range, must be in [0, " +
                  std::to_string(max) + "]" + note);
    };
    auto steps = [&](int64_t &out) {
      uint64_t v;
      if (!count(v, uint64_t(kMaxSteps), ""))
        return false;
      out = int64_t(v);
      return true;
    };
    bool ok = true;
    std::string v;
    if (a == "--weights")
      ok = str(flags.weights);
    else if (a == "--data")
      ok = str(t.data.path);
    else if (a == "--data-format") {
      ok = str(v);
      if (ok && v == "auto")
        t.data.format = DataSpec::Format::Auto;
      else if (ok && v == "text")
        t.data.format = DataSpec::Format::Text;
      else if (ok && v == "safetensors")
        t.data.format = DataSpec::Format::Safetensors;
      else if (ok)
        ok = fail(a + ": '" + v +
                  "' is not a format (auto, text or safetensors)");
    } else if (a == "--schedule")
      ok = str(t.trainSchedule);
    else if (a == "--eval-schedule")
      ok = str(t.evalSchedule);
    else if (a == "--steps")
      ok = steps(t.steps);
    else if (a == "--stop-after")
      ok = steps(t.stopAfter);
    else if (a == "--l2l-delay-after")
      ok = steps(t.delayAfter);
    else if (a == "--seed")
      ok = count(t.seed, UINT64_MAX, "");
    else if (a == "--eval-every")
      ok = steps(t.evalEvery);
    else if (a == "--eval-batches")
      ok = steps(t.evalBatches);
    else if (a == "--optimizer") {
      ok = str(v);
      if (ok && v != "sgd" && v != "adamw")
        ok = fail(a + ": '" + v + "' is not an optimizer (sgd or adamw)");
      t.optimizer = v == "sgd" ? PIPE_RT_OPTIM_SGD : PIPE_RT_OPTIM_ADAMW;
    } else if (a == "--lr")
      ok = real();
    else if (a == "--min-lr")
      ok = real();
    else if (a == "--warmup")
      ok = steps(t.warmupSteps);
    else if (a == "--lr-schedule") {
      ok = str(v);
      if (ok && v == "constant")
        t.lrSchedule = LrSchedule::Constant;
      else if (ok && v == "cosine")
        t.lrSchedule = LrSchedule::Cosine;
      else if (ok && v == "linear")
        t.lrSchedule = LrSchedule::Linear;
      else if (ok)
        ok = fail(a + ": '" + v +
                  "' is not a schedule (constant, cosine or linear)");
    } else if (a == "--weight-decay")
      ok = real();
    else if (a == "--decay-all")
      t.decayAll = true;
    else if (a == "--param-lr") {
      // NAME=MULT, split at the last '=': a name may hold one, a number not.
      ok = str(v);
      size_t eq = ok ? v.rfind('=') : std::string::npos;
      double d = 0;
      if (ok && (eq == std::string::npos || eq == 0))
        ok = fail(a + " '" + v + "': expected NAME=MULT");
      else if (ok && !parseDouble(v.substr(eq + 1), d))
        ok = fail(a + " '" + v + "': '" + v.substr(eq + 1) +
                  "' is not a number");
      else if (ok && !(std::isfinite(d) && d >= 0 && std::isfinite(float(d))))
        ok = fail(a + " '" + v +
                  "': out of range, the multiplier must be a finite float "
                  ">= 0");
      if (ok)
        t.paramLrScales.emplace_back(v.substr(0, eq), float(d));
    } else if (a == "--momentum")
      ok = real();
    else if (a == "--dampening")
      ok = real();
    else if (a == "--nesterov")
      t.nesterov = true;
    else if (a == "--beta1")
      ok = real();
    else if (a == "--beta2")
      ok = real();
    else if (a == "--eps")
      ok = real();
    else if (a == "--clip")
      ok = real();
    else if (a == "--checkpoint")
      ok = output(t.checkpointPath);
    else if (a == "--checkpoint-every")
      ok = steps(t.checkpointEvery);
    else if (a == "--resume")
      t.resume = true;
    else if (a == "--init-weights")
      ok = str(t.initWeights);
    else if (a == "--init-weights-strict")
      t.initWeightsStrict = true;
    else if (a == "--save-weights" || a == "--save")
      ok = output(t.saveWeights);
    else if (a == "--log-json")
      ok = output(t.logJson);
    else if (a == "--trace")
      ok = output(t.tracePath);
    else if (a == "--profile")
      ok = output(t.profilePath);
    else if (a == "--profile-skip")
      ok = steps(t.profileSkip);
    else if (a == "--log-every")
      ok = steps(t.logEvery);
    else if (a == "--watchdog") {
      double &w = flags.watchdogSeconds;
      ok = str(v);
      if (ok && !parseDouble(v, w))
        ok = fail(a + ": '" + v + "' is not a number");
      else if (ok && !(w > 0 && w <= kMaxWatchdogSeconds))
        ok = fail(a + " " + v + ": out of range, must be in (0, " +
                  format("%g", kMaxWatchdogSeconds) + "] seconds");
    } else if (a == "--threads") {
      uint64_t threads = 0;
      ok = count(threads, kMaxOptimizerThreads, " (0: one per core)");
      flags.optimizerThreads = unsigned(threads);
    } else if (a == "--device-memory") {
      ok = count(flags.deviceMemory, UINT64_MAX, " bytes (0: the program's)");
    } else if (a == "--ps-transfer") {
      if (!str(v))
        return fail("--ps-transfer needs a value: f32 or bf16");
      if (v != "f32" && v != "bf16")
        return fail("--ps-transfer: '" + v +
                    "' is not a transfer type (f32 or bf16)");
      flags.psTransfer =
          v == "bf16" ? PIPE_RT_PS_TRANSFER_BF16 : PIPE_RT_PS_TRANSFER_F32;
    } else if (a.size() > 1 && a[0] == '-') {
      return fail("unknown option '" + a + "' (see --help)");
    } else
      flags.positional.push_back(a);
    if (!ok)
      return false;
  }
  // Everything a run would find out late (a diverging optimizer, an
  // unwritable output after hours of training) is checked here, before
  // pipe-train compiles or pipe-runner loads anything.
  return validateTrainerOptions(t, error) && checkOutputPaths(t, error);
}
