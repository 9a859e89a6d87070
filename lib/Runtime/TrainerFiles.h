//===- TrainerFiles.h - What the trainer reads and writes besides data -----===//
//
// Initial weights, saved params and checkpoints of the training loop, and
// the finiteness checks that keep a diverged step out of them.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_LIB_RUNTIME_TRAINERFILES_H
#define PIPE_LIB_RUNTIME_TRAINERFILES_H

#include "SafetensorsIO.h"
#include "Session.h"

#include <cstdint>
#include <functional>
#include <string>

namespace pipe_rt {

/// A NaN or infinity in a message (printf would print some NaNs "-nan").
const char *nonFinite(double v);

/// Checks every float tensor of `file` (read from `path`).
bool checkFiniteFile(const StFile &file, const std::string &path,
                     std::string &error);

/// Checks the session's params and optimizer state, which a diverged step
/// may have filled with NaN while its loss still looked finite.
bool checkFiniteState(pipe_rt_session *session, std::string &error);

/// Loads every tensor of `path` named like a param (exact name; dtype and
/// shape checked), reporting through `print` what matched, what is new (a
/// param the file lacks keeps its value) and what is ignored (a tensor
/// naming no param). `strict`: a new or ignored name is an error. Validates
/// the whole file before changing anything.
bool loadInitWeights(pipe_rt_session *session, const std::string &path,
                     bool strict,
                     const std::function<void(const std::string &)> &print,
                     std::string &error);

/// Writes every param (manifest dtypes, by name) atomically.
bool saveParams(pipe_rt_session *session, const std::string &path,
                std::string &error);

/// The trainer's scalars in a checkpoint, besides what pipe_rt_session_save
/// writes (names in docs/trainer.md).
struct TrainerState {
  int64_t format = 1;
  int64_t step = 0;
  int64_t seed = 0;     // the uint64 seed, bit-cast
  int64_t rngDraws = 0; // mt19937_64 outputs consumed so far
  int64_t cursor = 0;   // training micro-batches consumed so far
};

extern const char *const kStateNames[];
constexpr int kNumState = 5;

bool saveCheckpoint(pipe_rt_session *session, const std::string &path,
                    const TrainerState &st, std::string &error);

/// Reads the trainer's scalars of checkpoint `file` (at `path`) into `st`,
/// without checking their values.
bool readTrainerState(const StFile &file, const std::string &path,
                      TrainerState &st, std::string &error);

} // namespace pipe_rt

#endif // PIPE_LIB_RUNTIME_TRAINERFILES_H
