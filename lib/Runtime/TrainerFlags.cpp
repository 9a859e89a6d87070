//===- TrainerFlags.cpp - Command-line flags of the training loop ---------===//

#include "pipe/Runtime/TrainerFlags.h"

#include <cerrno>
#include <cstdlib>

using namespace pipe_rt;

namespace {

bool parseDouble(const std::string &s, double &out) {
  char *end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return !s.empty() && !*end;
}

bool parseInt(const std::string &s, int64_t &out) {
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  out = v;
  return !s.empty() && !*end && errno == 0;
}

} // namespace

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
  --steps N              optimizer steps in total (default 1)
  --stop-after N         stop after N steps of this invocation, checkpoint,
                         exit 3 (for time-sliced jobs)
  --seed N               seed of the text data's window RNG (default 0)
  --eval-every N         evaluate every N steps (default: only at the end)
  --eval-batches N       eval schedule runs per evaluation (default: one
                         pass over the held-out data)
Optimizer:
  --optimizer sgd|adamw  (default adamw)
  --lr X                 peak learning rate (default 1e-3)
  --min-lr X             final learning rate of cosine/linear (default 0)
  --warmup N             linear warm-up steps (default 0)
  --lr-schedule S        constant, cosine or linear (default constant)
  --weight-decay X       default 0.01 (adamw) / 0 (sgd)
  --momentum X --dampening X --nesterov      SGD
  --beta1 X --beta2 X --eps X                AdamW
  --clip X               global gradient-norm clipping (synchronous
                         schedules only)
Files:
  --checkpoint PATH      checkpoint written at the end and on SIGINT/SIGTERM
  --checkpoint-every N   ... and every N steps
  --resume               continue from --checkpoint if it exists
  --init-weights PATH    pretrained params loaded over the initial ones
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
  --log-every N          progress every N steps (default: about every 2 s)
  --watchdog S           seconds before a stuck transfer fails (default 60)
  --threads N            host optimizer threads (default: all cores)
  --ps-transfer T        f32 (default) or bf16: element type of the L2L
                         parameter server's weight and gradient copies
                         (masters and optimizer stay fp32)

Exit status: 0 done, 1 error, 2 bad command line, 3 stopped by
SIGINT/SIGTERM or --stop-after (checkpoint written; rerun with --resume).)";
}

void TrainerFlags::applyTo(pipe_rt_session_options &session) const {
  initSessionOptions(options, session);
  session.watchdog_seconds = watchdogSeconds;
  session.optimizer_threads = optimizerThreads;
  session.ps_transfer = psTransfer;
}

bool pipe_rt::parseTrainerFlags(const std::vector<std::string> &args,
                                TrainerFlags &flags, std::string &error) {
  TrainerOptions &t = flags.options;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &a = args[i];
    bool hasNext = i + 1 < args.size();
    auto str = [&](std::string &out) {
      if (!hasNext)
        return false;
      out = args[++i];
      return true;
    };
    auto real = [&](float &out, double min) {
      double v;
      if (!hasNext || !parseDouble(args[++i], v) || !(v >= min))
        return false;
      out = float(v);
      return true;
    };
    auto integer = [&](int64_t &out) {
      return hasNext && parseInt(args[++i], out) && out >= 0;
    };
    bool ok = true;
    std::string v;
    if (a == "--weights")
      ok = str(flags.weights);
    else if (a == "--data")
      ok = str(t.data.path);
    else if (a == "--data-format") {
      ok = str(v);
      if (v == "auto")
        t.data.format = DataSpec::Format::Auto;
      else if (v == "text")
        t.data.format = DataSpec::Format::Text;
      else if (v == "safetensors")
        t.data.format = DataSpec::Format::Safetensors;
      else
        ok = false;
    } else if (a == "--schedule")
      ok = str(t.trainSchedule);
    else if (a == "--eval-schedule")
      ok = str(t.evalSchedule);
    else if (a == "--steps")
      ok = integer(t.steps);
    else if (a == "--stop-after")
      ok = integer(t.stopAfter);
    else if (a == "--seed") {
      int64_t seed = 0;
      ok = integer(seed);
      t.seed = uint64_t(seed);
    } else if (a == "--eval-every")
      ok = integer(t.evalEvery);
    else if (a == "--eval-batches")
      ok = integer(t.evalBatches);
    else if (a == "--optimizer") {
      ok = str(v) && (v == "sgd" || v == "adamw");
      t.optimizer = v == "sgd" ? PIPE_RT_OPTIM_SGD : PIPE_RT_OPTIM_ADAMW;
    } else if (a == "--lr")
      ok = real(t.lr, 0);
    else if (a == "--min-lr")
      ok = real(t.minLr, 0);
    else if (a == "--warmup")
      ok = integer(t.warmupSteps);
    else if (a == "--lr-schedule") {
      ok = str(v);
      if (v == "constant")
        t.lrSchedule = LrSchedule::Constant;
      else if (v == "cosine")
        t.lrSchedule = LrSchedule::Cosine;
      else if (v == "linear")
        t.lrSchedule = LrSchedule::Linear;
      else
        ok = false;
    } else if (a == "--weight-decay")
      ok = real(t.weightDecay, 0);
    else if (a == "--momentum")
      ok = real(t.momentum, 0);
    else if (a == "--dampening")
      ok = real(t.dampening, 0);
    else if (a == "--nesterov")
      t.nesterov = true;
    else if (a == "--beta1")
      ok = real(t.beta1, 0);
    else if (a == "--beta2")
      ok = real(t.beta2, 0);
    else if (a == "--eps")
      ok = real(t.eps, 0);
    else if (a == "--clip")
      ok = real(t.clipNorm, 0);
    else if (a == "--checkpoint")
      ok = str(t.checkpointPath);
    else if (a == "--checkpoint-every")
      ok = integer(t.checkpointEvery);
    else if (a == "--resume")
      t.resume = true;
    else if (a == "--init-weights")
      ok = str(t.initWeights);
    else if (a == "--save-weights" || a == "--save")
      ok = str(t.saveWeights);
    else if (a == "--log-json")
      ok = str(t.logJson);
    else if (a == "--trace")
      ok = str(t.tracePath);
    else if (a == "--profile")
      ok = str(t.profilePath);
    else if (a == "--profile-skip")
      ok = integer(t.profileSkip);
    else if (a == "--log-every")
      ok = integer(t.logEvery);
    else if (a == "--watchdog")
      ok = hasNext && parseDouble(args[++i], flags.watchdogSeconds) &&
           flags.watchdogSeconds > 0;
    else if (a == "--threads") {
      int64_t threads = 0;
      ok = integer(threads);
      flags.optimizerThreads = unsigned(threads);
    } else if (a == "--ps-transfer") {
      if (!str(v) || (v != "f32" && v != "bf16")) {
        error = hasNext ? "--ps-transfer: '" + v +
                              "' is not a transfer type (f32 or bf16)"
                        : "--ps-transfer needs a value: f32 or bf16";
        return false;
      }
      flags.psTransfer =
          v == "bf16" ? PIPE_RT_PS_TRANSFER_BF16 : PIPE_RT_PS_TRANSFER_F32;
    } else if (a.size() > 1 && a[0] == '-') {
      error = "unknown option '" + a + "' (see --help)";
      return false;
    } else
      flags.positional.push_back(a);
    if (!ok) {
      error = "bad or missing value for " + a + " (see --help)";
      return false;
    }
  }
  return true;
}
