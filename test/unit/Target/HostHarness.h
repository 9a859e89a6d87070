//===- HostHarness.h - Compile and train generated models on the host ----===//
//
// Generates a tiny transformer, takes it through lifting, block formation,
// differentiation, placement and one schedule, lowers it with
// --pipe-lower-to-host, JIT-compiles it and opens a runtime session on it;
// or loads the same program from a shared library written by
// writeSharedLibrary. Used by the schedule-equivalence tests.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_TEST_UNIT_TARGET_HOSTHARNESS_H
#define PIPE_TEST_UNIT_TARGET_HOSTHARNESS_H

#include "pipe/ModelGen/TransformerGen.h"
#include "pipe/Runtime/Program.h"
#include "pipe/Target/Host/HostTarget.h"

#include "mlir/IR/MLIRContext.h"

#include <memory>
#include <string>
#include <vector>

namespace pipetest {

/// How to place and schedule the model.
struct ScheduleConfig {
  std::string kind = "gpipe";
  unsigned devices = 1;
  /// 0: one stage per block instance on one device (L2L).
  unsigned stagesPerDevice = 1;
  unsigned microbatches = 2;
  /// Optimizer steps one run of the schedule covers (asynchronous kinds).
  unsigned steps = 1;
  bool constantMemory = false;
  std::string weights = "stash";
  bool recompute = false;
  /// Lower with `--pipe-host-to-llvm=fuse-elementwise=true`.
  bool fuseElementwise = false;
  /// `false`: lower with `--pipe-host-to-llvm=vectorize=false`.
  bool vectorize = true;
  std::string describe() const;
};

class HostProgram {
public:
  /// Compiles `model` under `schedule` and JITs it (or, with `libraryPath`,
  /// writes a shared library there and dlopens it). On failure `error()`
  /// says why.
  HostProgram(const mlir::pipe::modelgen::TransformerConfig &model,
              const ScheduleConfig &schedule, const std::string &libraryPath,
              const std::string &scratchDir);
  ~HostProgram();

  bool ok() const { return session != nullptr; }
  const std::string &error() const { return errorText; }
  pipe_rt_session *getSession() const { return session; }

  /// Runs the schedule `runs` times on deterministic data (run r, step s,
  /// micro-batch m draws from seed (r * steps + s) * microbatches + m) and
  /// returns the losses; an empty vector and error() on failure.
  std::vector<float> train(unsigned runs);
  /// Every param's current value, in manifest order.
  std::vector<std::vector<float>> params();

private:
  mlir::MLIRContext context;
  std::unique_ptr<mlir::pipe::HostJIT> jit;
  void *library = nullptr;
  pipe_rt_session *session = nullptr;
  std::string errorText;
  mlir::pipe::modelgen::TransformerConfig model;
  ScheduleConfig schedule;
};

/// The tiny models of these tests: GPT-2 with the LM head tied to the token
/// embedding, and T5 with `layers` encoder and as many decoder layers; both
/// d 16, 2 heads, ff 32, vocabulary 32, sequence 8, batch 2.
mlir::pipe::modelgen::TransformerConfig tinyGptConfig(unsigned layers);
mlir::pipe::modelgen::TransformerConfig tinyT5Config(unsigned layers);

/// Largest norm-wise relative error ||a - b|| / ||b|| over the tensors.
double maxRelativeError(const std::vector<std::vector<float>> &a,
                        const std::vector<std::vector<float>> &b,
                        unsigned *worst = nullptr);

} // namespace pipetest

#endif // PIPE_TEST_UNIT_TARGET_HOSTHARNESS_H
