//===- TrainingData.h - Micro-batch sources of the trainer ------*- C++ -*-===//
//
// Private to the runtime. Turns a data file (a text file for byte-level
// language modelling, or a safetensors file of pre-made rows) into the
// micro-batch input buffers pipe_rt_session_run takes. The orders are
// documented in docs/trainer.md so that a PyTorch reference can reproduce
// them exactly.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_RUNTIME_TRAININGDATA_H
#define PIPE_RUNTIME_TRAININGDATA_H

#include "Manifest.h"
#include "SafetensorsIO.h"

#include "pipe/Runtime/Trainer.h"

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace pipe_rt {

/// A graph input as the manifest declares it.
struct InputSpec {
  std::string dtype; // "f32", "f64", "i64", "i32", "i1"
  std::vector<int64_t> shape;
  /// Integer inputs: the values the model accepts (the manifest's `range`
  /// record; no bound when it has none).
  InputRange range;
  int64_t numel() const;
  size_t elemSize() const;
  size_t bytes() const { return size_t(numel()) * elemSize(); }
  bool isInteger() const { return dtype == "i64" || dtype == "i32"; }
};

/// Draws an offset uniformly in [0, range) from `rng`, by rejection so that
/// it is exactly uniform and reproducible elsewhere: draw x until x < limit
/// = range * floor(2^64 / range), return x mod range. Counts the draws.
uint64_t drawOffset(std::mt19937_64 &rng, uint64_t range, uint64_t &draws);

/// Largest data file TrainingData reads (it holds the file in memory):
/// 16 GiB.
constexpr uint64_t kMaxDataFileBytes = uint64_t(16) << 30;

/// Micro-batch `first + m` of `count` rows, without overflow for any
/// `first` (`count` > 0, `m` >= 0): (first + m) mod count in [0, count).
int64_t wrapRow(int64_t first, int64_t m, int64_t count);

class TrainingData {
public:
  /// Opens `spec` for a program with graph inputs `inputs`. Text data needs
  /// exactly two integer inputs of one shape [..., T] (tokens, targets).
  /// Refuses what is not a regular file or is larger than
  /// kMaxDataFileBytes, and every integer element outside its input's range
  /// (text: every byte of the file; safetensors: every row of both splits),
  /// naming the file, tensor, row, element and value.
  static std::unique_ptr<TrainingData>
  open(const DataSpec &spec, const std::vector<InputSpec> &inputs,
       std::string &error);

  bool isText() const { return text; }
  /// Micro-batches a full pass over the evaluation split takes (0: none).
  int64_t evalMicrobatches() const { return evalCount; }
  /// Bytes of the train / held-out split (text), or rows (safetensors).
  int64_t trainSize() const { return trainCount; }
  int64_t evalSize() const { return evalSizeValue; }

  /// Restarts the window RNG (text data) at `seed`, then skips `draws`
  /// draws, which restores the state after that many draws.
  void seedRng(uint64_t seed, uint64_t draws);
  uint64_t rngDraws() const { return draws; }

  /// Builds training micro-batches [first, first + count) (global indices:
  /// step * microbatches + m) and returns the input pointers, laid out as
  /// pipe_rt_session_run expects; valid until the next call. Text data draws
  /// the windows from the RNG in order (so `first` only has to follow the
  /// previous call); safetensors data takes row g mod N for micro-batch g.
  const void *const *train(int64_t first, int count);
  /// Evaluation micro-batches [first, first + count): micro-batch j is the
  /// j mod evalMicrobatches()-th of the held-out split.
  const void *const *eval(int64_t first, int count);

private:
  TrainingData() = default;
  void resize(int count);
  void textWindow(uint64_t start, int mb, int row);

  std::vector<InputSpec> inputs;
  bool text = false;
  // Text: the file's bytes; the first `trainCount` are the training split,
  // the held-out split starts there.
  std::vector<unsigned char> bytes;
  int64_t rows = 1, window = 1; // windows per micro-batch, tokens per window
  // Safetensors: the file, and per input the first train / eval row and
  // the bytes of one row (micro-batches point into the file).
  StFile file;
  std::vector<const unsigned char *> trainBase, evalBase;
  int64_t trainCount = 0, evalCount = 0, evalSizeValue = 0;
  std::mt19937_64 rng;
  uint64_t draws = 0;
  // Output buffers: [mb][input].
  std::vector<std::vector<std::vector<unsigned char>>> buffers;
  std::vector<const void *> pointers;
};

} // namespace pipe_rt

#endif // PIPE_RUNTIME_TRAININGDATA_H
