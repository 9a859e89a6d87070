//===- TrainerFlags.h - Command-line flags of the training loop -*- C++ -*-===//
//
// pipe-runner and pipe-train accept the same training flags; both parse them
// here, so the two tools cannot drift apart.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_RUNTIME_TRAINERFLAGS_H
#define PIPE_RUNTIME_TRAINERFLAGS_H

#include "pipe/Runtime/Trainer.h"

#include <string>
#include <vector>

namespace pipe_rt {

/// The trainer's options plus the session settings the flags control.
struct TrainerFlags {
  TrainerOptions options;
  double watchdogSeconds = 60;
  unsigned optimizerThreads = 0;
  /// --ps-transfer f32|bf16: element type of the parameter server's copies.
  pipe_rt_ps_transfer psTransfer = PIPE_RT_PS_TRANSFER_F32;
  /// --device-memory BYTES: every device's capacity, over the manifest's
  /// (0: the manifest's).
  uint64_t deviceMemory = 0;
  /// --weights (pipe-runner only).
  std::string weights;
  /// Arguments that are not flags, in order (pipe-runner: the artifact).
  std::vector<std::string> positional;

  /// Copies the optimizer, clipping, watchdog, thread, ps-transfer and
  /// device-memory settings.
  void applyTo(pipe_rt_session_options &session) const;
};

/// Parses `args`, then checks every value against its documented range
/// (validateTrainerOptions, --watchdog, --threads) and every output path
/// (checkOutputPaths), so that nothing runs with a value that would fail
/// late. On a bad or unknown flag returns false with `error` naming the
/// flag, the value and what is accepted.
bool parseTrainerFlags(const std::vector<std::string> &args,
                       TrainerFlags &flags, std::string &error);

/// The flags' help text.
const char *trainerFlagsUsage();

} // namespace pipe_rt

#endif // PIPE_RUNTIME_TRAINERFLAGS_H
