//===- Trainer.h - Training loop over a program session ---------*- C++ -*-===//
//
// The training loop shared by `pipe-runner` (a compiled artifact, no MLIR)
// and `pipe-train` (the compiler driver, in-process JIT): data, learning-rate
// schedule, evaluation with the forward-only schedule, checkpoints that a
// resumed run continues bit-identically, SIGINT/SIGTERM handling, a JSON-lines
// log and a summary. C++17, standard library only, like the rest of the
// runtime; the runtime's C headers stay C. Everything a PyTorch reference
// needs to reproduce a run (data order, lr formula) is in docs/trainer.md.
//
// Typical use:
//
//   pipe_rt::TrainerOptions t;             // fill from the command line
//   pipe_rt_session_options o;
//   pipe_rt::initSessionOptions(t, o);     // optimizer, clipping
//   o.weights_path = ...;
//   pipe_rt_session_create(lookup, handle, &o, &session, err, sizeof(err));
//   pipe_rt::TrainerSummary summary;
//   std::string error;
//   if (!pipe_rt::runTraining(session, t, summary, error)) ...
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_RUNTIME_TRAINER_H
#define PIPE_RUNTIME_TRAINER_H

#include "pipe/Runtime/Program.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace pipe_rt {

/// Where micro-batches come from (formats in docs/trainer.md).
struct DataSpec {
  enum class Format {
    /// `.safetensors` suffix: Safetensors, anything else: Text.
    Auto,
    /// Byte-level language modelling on any file (vocabulary 256).
    Text,
    /// Tensors input<k> [N, <input k's shape>] (+ optional eval_input<k>).
    Safetensors,
  };
  std::string path = "/usr/share/common-licenses/GPL-3";
  Format format = Format::Auto;
  /// Text: the first floor(size * trainFraction) bytes train, the rest is
  /// held out for evaluation.
  double trainFraction = 0.9;
};

enum class LrSchedule { Constant, Cosine, Linear };

struct TrainerOptions {
  /// Schedules by name; "" = the first training (not forward-only) schedule
  /// / the first forward-only one (evaluation is skipped if there is none).
  std::string trainSchedule, evalSchedule;
  DataSpec data;
  /// Optimizer steps in total (a resumed run continues up to this count).
  int64_t steps = 1;
  /// Stop (as on SIGINT: checkpoint, `interrupted`) after this many steps of
  /// this call; 0 = no limit. For time-sliced jobs and tests.
  int64_t stopAfter = 0;
  /// With a delayed-update parameter-server schedule (L2L of several steps
  /// per run): the first this many steps run the program's plain schedule
  /// of the same kind instead (one step per run, no stale weights), as
  /// warm-up; a multiple of the delayed schedule's steps per run.
  int64_t delayAfter = 0;

  // Optimizer (applied by initSessionOptions; the session must match).
  pipe_rt_optim_kind optimizer = PIPE_RT_OPTIM_ADAMW;
  float momentum = 0, dampening = 0;               // SGD
  bool nesterov = false;                           // SGD
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f; // AdamW
  /// AdamW: decoupled, SGD: coupled (as torch); < 0 = the default, 0.01
  /// for AdamW and 0 for SGD.
  float weightDecay = -1;
  /// Global gradient-norm clipping (0 = off); synchronous schedules only.
  float clipNorm = 0;
  /// Parameter groups (applied by runTraining to the session, every time:
  /// they are configuration, not checkpointed state). Learning-rate
  /// multipliers by exact param name, each a finite float >= 0 (pipe-train's
  /// --lr-group PATTERN=MULT resolves to these; --param-lr NAME=MULT): the
  /// param's rate is learningRate(step) * multiplier, so the schedule scales
  /// every group alike. A name given twice must have one multiplier.
  std::vector<std::pair<std::string, float>> paramLrScales;
  /// Weight decay on every param. By default params of rank 0 or 1 (biases,
  /// normalisation scales and offsets) get none, as usual for AdamW.
  bool decayAll = false;

  // Learning rate: see learningRate().
  float lr = 1e-3f, minLr = 0;
  int64_t warmupSteps = 0;
  LrSchedule lrSchedule = LrSchedule::Constant;

  /// Seed of the text data's window RNG.
  uint64_t seed = 0;

  /// Evaluate every this many steps (0 = only at the end) on `evalBatches`
  /// runs of the eval schedule (0 = one pass over the held-out split).
  int64_t evalEvery = 0, evalBatches = 0;

  /// Checkpoint file (safetensors, see docs/trainer.md): written every
  /// `checkpointEvery` steps (0 = never on the way), at the end and when
  /// stopped by a signal. `resume`: continue from it if it exists.
  std::string checkpointPath;
  int64_t checkpointEvery = 0;
  bool resume = false;

  /// Pretrained weights loaded before training (and before resuming): every
  /// tensor named exactly like a param is loaded (dtype and shape checked);
  /// a report lists the matched, new (params it lacks keep their value) and
  /// ignored (tensors naming no param) names.
  std::string initWeights;
  /// A new or ignored name in initWeights is an error.
  bool initWeightsStrict = false;
  /// Final params (manifest dtypes, by name; a valid --weights file).
  std::string saveWeights;
  /// Chrome trace of every action of every run.
  std::string tracePath;
  /// JSON profile of this call's steps after the first `profileSkip`
  /// (< 0: 1 when more than one step runs, else 0): docs/trainer.md.
  std::string profilePath;
  int64_t profileSkip = -1;
  /// More members for the profile's top-level object (e.g. a GPU backend's
  /// memory figures), as `"name":value` pairs separated by commas; called
  /// once at the end.
  std::function<std::string()> profileExtra;
  /// JSON-lines log, one object per optimizer step (appended to when
  /// resuming).
  std::string logJson;
  /// Files the run reads besides `data` and `initWeights`, as (flag, path):
  /// no output may replace one (the artifact, --weights).
  std::vector<std::pair<std::string, std::string>> inputs;
  /// Files the caller writes itself, as (flag, path): checked like the
  /// outputs above against the inputs and each other, but not for
  /// writability (pipe-train's --emit-scheduled, --save-init-weights and
  /// artifact files, whose directory it checks or makes itself).
  std::vector<std::pair<std::string, std::string>> callerOutputs;

  /// Progress every this many steps; 0 = about every 2 s (and the first and
  /// last step).
  int64_t logEvery = 0;
  /// Receives every line of progress, warnings and the summary (no trailing
  /// newline); null prints to stdout.
  std::function<void(const std::string &)> print;
  /// False on every rank but the first of a distributed run: it runs the
  /// same steps and reads the same checkpoint, but writes no checkpoint
  /// (the caller clears the other output paths and `print`).
  bool writesCheckpoints = true;
  /// Data parallelism: this process is replica `replica` of `replicas`.
  /// Each step draws `replicas` times the schedule's micro-batches and each
  /// replica trains on its share (the replicas' gradients are summed before
  /// each update), so a step is that of one replica with `replicas` times
  /// the micro-batches.
  int replicas = 1, replica = 0;
  /// Distributed runs: combines every rank's wish to stop (a signal) before
  /// each step, so that all ranks stop at the same one; null in one process.
  std::function<bool(bool)> agreeToStop;
  /// Distributed runs: gives every rank every param (pipe_rt::shareParams)
  /// before a checkpoint or the final outputs; false with `error` on failure.
  std::function<bool(std::string &error)> shareState;
  /// Installs SIGINT/SIGTERM handlers for the duration of runTraining (the
  /// previous ones are restored; a second signal kills the process).
  bool handleSignals = true;
};

struct TrainerSummary {
  int64_t startStep = 0; // > 0 when resumed
  int64_t steps = 0;     // optimizer steps completed in total
  /// Mean of the last (up to) 10 steps' losses of this call; NaN if none.
  double trainLoss = 0;
  /// Last evaluation's loss; NaN if none ran.
  double evalLoss = 0;
  /// Last evaluation's task metrics (name, hits / counted), in the
  /// program's order; empty if none ran or the program reports none.
  std::vector<std::pair<std::string, double>> evalMetrics;
  /// Training throughput of this call (tokens or samples, see `unit`).
  double itemsPerSecond = 0;
  std::string unit; // "tok" or "samples"
  double wallSeconds = 0;
  std::vector<uint64_t> peakBytes; // per device of the train schedule
  unsigned optimizerThreads = 0;   // host optimizer workers
  std::string checkpointWritten, weightsWritten; // "" if none
  /// Stopped early by a signal (its number) or by stopAfter (-1); the
  /// checkpoint has been written if a path was given.
  bool interrupted = false;
  int signal = 0;
};

/// The largest step count the trainer accepts (--steps, --warmup,
/// --stop-after, --eval-every, --eval-batches, --checkpoint-every,
/// --log-every, --profile-skip, and a checkpoint's trainer.step): far more
/// than any run takes, and small enough that the micro-batches consumed
/// (steps x at most 2^24 per step, the manifest's limit) fit in an int64.
constexpr int64_t kMaxSteps = 100000000000; // 10^11

/// Checks every option against its documented range (docs/trainer.md):
/// counts in [0, kMaxSteps], finite hyper-parameters in PyTorch's ranges
/// (0 <= beta1, beta2 < 1, lr, eps, weight decay, momentum, dampening >= 0,
/// min-lr <= lr, clip >= 0, Nesterov with momentum and no dampening). The
/// error names the flag, the value and the range.
bool validateTrainerOptions(const TrainerOptions &options, std::string &error);

/// Checks that every output path (checkpoint, save-weights, log-json, trace,
/// profile) can be written, before any work: an error names the flag, the
/// path and why (missing or unwritable directory, a directory, two outputs
/// on one file).
bool checkOutputPaths(const TrainerOptions &options, std::string &error);

/// A hash of what decides the numbers a run trains (optimizer, learning
/// rate and its schedule, steps, seed, clipping, parameter groups,
/// evaluation and checkpoint cadence, resuming); never 0. Not the paths:
/// ranks on other hosts may read the same data under other names.
uint64_t trainingFingerprint(const TrainerOptions &options);

/// Fills the optimizer fields and clip_norm of `session` from `options`
/// (everything else keeps what `session` had, e.g. from
/// pipe_rt_session_options_init).
void initSessionOptions(const TrainerOptions &options,
                        pipe_rt_session_options &session);

/// Learning rate of optimizer step `step` (0-based) of `options.steps`:
///   s < W:  lr * (s + 1) / W                         (linear warm-up)
///   else:   p = (s - W) / max(1, N - W)               (0 at the first)
///           Constant: lr
///           Cosine:   minLr + (lr - minLr) * (1 + cos(pi * p)) / 2
///           Linear:   lr + (minLr - lr) * p
/// evaluated in double and rounded to float.
float learningRate(const TrainerOptions &options, int64_t step);

/// Runs the training loop. Returns false with `error` set on any error
/// (bad options, data, schedule, a failed run); a stop by signal or
/// stopAfter returns true with `summary.interrupted`.
bool runTraining(pipe_rt_session *session, const TrainerOptions &options,
                 TrainerSummary &summary, std::string &error);

/// Asks a running runTraining to stop after the current step (as SIGINT
/// does). Async-signal-safe; cleared when runTraining starts.
void requestStop();

/// The summary as printed at the end of runTraining (several lines).
std::string formatSummary(const TrainerSummary &summary);

/// Exit codes of the tools driving the trainer (pipe-runner, pipe-train).
enum ExitCode {
  ExitOk = 0,
  ExitError = 1,
  ExitUsage = 2,
  /// Stopped by SIGINT/SIGTERM or --stop-after; checkpoint written.
  ExitInterrupted = 3,
};

} // namespace pipe_rt

#endif // PIPE_RUNTIME_TRAINER_H
