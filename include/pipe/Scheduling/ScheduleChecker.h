//===- ScheduleChecker.h - Checks a schedule by playing it ------*- C++ -*-===//
//
// Plays every device's action list the way a runtime would (each device
// advances while its next action is ready; a receive is ready once its send
// was issued, a wait once its tokens completed, a gradient reduction once
// every device taking part reached it) and reports what a runtime would hit:
// missing or repeated actions, data used before it exists, deadlocks,
// parameters used while not loaded, offloaded activations used before they
// come back, and devices running out of memory.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_SCHEDULING_SCHEDULECHECKER_H
#define PIPE_SCHEDULING_SCHEDULECHECKER_H

#include "pipe/Scheduling/Schedule.h"

#include <map>
#include <set>
#include <tuple>

namespace mlir::pipe {

struct ScheduleViolation {
  unsigned device = 0;
  /// Index of the offending action in the device's list, or -1 when the
  /// problem is something missing.
  int action = -1;
  /// Says device, action and reason.
  std::string message;
};

struct ScheduleCheckOptions {
  /// Check each device's peak memory against `machine`'s capacities.
  bool checkMemory = true;
  /// Overrides every device's capacity when non-zero.
  uint64_t memoryLimit = 0;
  /// Require, between every two devices, the sends of one and the recvs of
  /// the other in the same order: what a transport that matches messages
  /// only by order (NCCL) needs.
  bool checkPeerOrder = false;
};

/// All violations found, in the order they were found; empty when the
/// schedule is correct. `machine` may be null (no memory check).
SmallVector<ScheduleViolation>
checkSchedule(const Pipeline &pipeline, const Schedule &schedule,
              const MachineModel *machine,
              const ScheduleCheckOptions &options = {});

/// Tracks one schedule's device memory as actions start and finish: the
/// parameters of stages kept resident (with gradient and optimizer state
/// when they are updated on the device), loaded parameters and their
/// gradient buffers, the activations each micro-batch keeps between forward
/// and backward (its inputs only when it is recomputed), recomputed
/// activations, and each compute action's output buffer while it runs.
/// Offloads free a micro-batch's kept activations when they complete and
/// prefetches bring them back when issued. Shared by checker and simulator.
class MemoryTracker {
public:
  MemoryTracker(const Pipeline &pipeline, const Schedule &schedule);
  /// At issue (async actions) or start (compute).
  void begin(unsigned device, const ScheduleAction &action);
  /// At completion.
  void end(unsigned device, const ScheduleAction &action);

  int64_t getCurrent(unsigned device) const { return current[device]; }
  int64_t getPeak(unsigned device) const { return peak[device]; }
  /// Bytes of kept activations (forward to backward) only.
  int64_t getPeakActivations(unsigned device) const {
    return peakActivations[device];
  }

private:
  void add(unsigned device, int64_t bytes, bool activation);
  /// A moment at which the device holds `bytes` more than now.
  void reach(unsigned device, int64_t bytes);
  /// The measured working memory of a compute action (0: not measured).
  uint64_t workingBytes(const ScheduleAction &action) const;
  uint64_t keptBytes(unsigned stage, unsigned mb, unsigned step) const;

  const Pipeline &pipeline;
  const Schedule &schedule;
  SmallVector<bool> loadedStage;
  std::map<std::tuple<unsigned, unsigned, unsigned>, bool> recomputed;
  /// (stage, mb, step) -> bytes kept on the device now.
  std::map<std::tuple<unsigned, unsigned, unsigned>, int64_t> kept;
  std::map<std::tuple<unsigned, unsigned, unsigned>, int64_t> recomputedHeld;
  std::map<std::pair<unsigned, unsigned>, bool> gradBuffer;
  /// (device, token) of an offload -> the bytes of kept activations it
  /// frees at its wait; of a push -> the (stage, step) whose gradients it
  /// frees then.
  std::map<std::pair<unsigned, int>, int64_t> offloading;
  std::map<std::pair<unsigned, int>, std::pair<unsigned, unsigned>> pushing;
  /// Weight stash (schedules that keep versions): whether the schedule
  /// does; per stage the updates so far; the version each kept forward
  /// read; per (stage, version) those forwards, and the versions copied.
  bool keepsVersions = false;
  SmallVector<int> updates;
  std::map<std::tuple<unsigned, unsigned, unsigned>, int> forwardVersion;
  std::map<std::pair<unsigned, int>, unsigned> versionUsers;
  std::set<std::pair<unsigned, int>> versionCopies;
  SmallVector<int64_t> current, peak, activations, peakActivations;
};

} // namespace mlir::pipe

#endif // PIPE_SCHEDULING_SCHEDULECHECKER_H
