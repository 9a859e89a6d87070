//===- MemoryTracker.cpp - Device memory of a schedule as it plays --------===//
//
// What a device holds is what the runtime charges to it (docs/runtime.md,
// "What is charged"): parameters, gradients from a stage's first backward
// of a step to its update (or push), kept activations, each compute's
// output, received and prefetched values, and the weight versions a stash
// schedule keeps. Optimizer state stays in host memory.
//
//===----------------------------------------------------------------------===//

#include "pipe/Scheduling/ScheduleChecker.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::pipe;

MemoryTracker::MemoryTracker(const Pipeline &pipeline, const Schedule &schedule)
    : pipeline(pipeline), schedule(schedule) {
  keepsVersions = schedule.keepsWeightVersions;
  updates.assign(pipeline.getNumStages(), 0);
  unsigned numDevices = std::max<unsigned>(schedule.devices.size(), 1);
  current.assign(numDevices, 0);
  peak.assign(numDevices, 0);
  activations.assign(numDevices, 0);
  peakActivations.assign(numDevices, 0);
  loadedStage.assign(pipeline.getNumStages(), false);
  for (const auto &actions : schedule.devices)
    for (const ScheduleAction &action : actions) {
      if (action.stage < 0 || action.stage >= (int)pipeline.getNumStages())
        continue;
      if (action.kind == ActionKind::Load)
        loadedStage[action.stage] = true;
      if (action.kind == ActionKind::Recompute && action.microbatch >= 0)
        recomputed[{(unsigned)action.stage, (unsigned)action.microbatch,
                    action.step}] = true;
    }
  for (unsigned s = 0; s < pipeline.getNumStages(); ++s) {
    const PipelineStage &stage = pipeline.stages[s];
    if (!loadedStage[s] && stage.device < numDevices)
      add(stage.device, stage.paramBytes, /*activation=*/false);
  }
}

void MemoryTracker::add(unsigned device, int64_t bytes, bool activation) {
  if (device >= current.size())
    return;
  current[device] += bytes;
  peak[device] = std::max(peak[device], current[device]);
  if (activation) {
    activations[device] += bytes;
    peakActivations[device] =
        std::max(peakActivations[device], activations[device]);
  }
}

void MemoryTracker::reach(unsigned device, int64_t bytes) {
  if (device < current.size())
    peak[device] = std::max(peak[device], current[device] + bytes);
}

uint64_t MemoryTracker::workingBytes(const ScheduleAction &action) const {
  const PipelineStage &stage = pipeline.stages[action.stage];
  switch (action.kind) {
  case ActionKind::Forward:
    return stage.forwardWorkingBytes;
  case ActionKind::Recompute:
    return stage.recomputeWorkingBytes;
  case ActionKind::Backward:
    return stage.backwardWorkingBytes;
  case ActionKind::BackwardInput:
    return stage.backwardInputWorkingBytes;
  case ActionKind::BackwardWeight:
    return stage.backwardWeightWorkingBytes;
  default:
    return 0;
  }
}

uint64_t MemoryTracker::keptBytes(unsigned stage, unsigned mb,
                                  unsigned step) const {
  const PipelineStage &info = pipeline.stages[stage];
  return recomputed.count({stage, mb, step}) ? info.inputBytes
                                             : info.savedBytes;
}

void MemoryTracker::begin(unsigned device, const ScheduleAction &action) {
  if (action.stage < 0 || action.stage >= (int)pipeline.getNumStages())
    return;
  unsigned s = action.stage;
  const PipelineStage &stage = pipeline.stages[s];
  auto key =
      std::make_tuple(s, (unsigned)std::max(action.microbatch, 0), action.step);
  // A measured working set covers what the part allocates while it runs
  // (outputs, kept activations, gradients, temporaries); without one only
  // the forward's outputs are charged for its duration.
  uint64_t working = workingBytes(action);
  switch (action.kind) {
  case ActionKind::Forward:
    // Weight prediction: the predicted copy lives for the forward.
    if (action.predict > 0)
      add(device, stage.paramBytes, false);
    if (working)
      reach(device, working);
    else
      add(device, stage.outputBytes, false);
    break;
  case ActionKind::Recompute:
    reach(device, working);
    if (!recomputedHeld.count(key)) {
      recomputedHeld[key] = stage.savedBytes;
      add(device, stage.savedBytes, true);
    }
    break;
  case ActionKind::Backward:
  case ActionKind::BackwardInput:
  case ActionKind::BackwardWeight:
    reach(device, working);
    // The step's gradients, accumulated over its micro-batches.
    if (!gradBuffer[{s, action.step}]) {
      gradBuffer[{s, action.step}] = true;
      add(device, stage.paramBytes, false);
    }
    break;
  case ActionKind::Update:
    // Before updating in place, a copy of the weights that forwards still
    // in flight read (their backward uses that version).
    if (keepsVersions && versionUsers.count({s, updates[s]})) {
      versionCopies.insert({s, updates[s]});
      add(device, stage.paramBytes, false);
    }
    ++updates[s];
    break;
  case ActionKind::Load:
    add(device, stage.paramBytes, false);
    break;
  case ActionKind::Release:
    add(device, -(int64_t)stage.paramBytes, false);
    break;
  case ActionKind::Prefetch: {
    int64_t bytes = keptBytes(s, action.microbatch, action.step);
    kept[key] = bytes;
    add(device, bytes, true);
    break;
  }
  default:
    break;
  }
}

void MemoryTracker::end(unsigned device, const ScheduleAction &action) {
  // Offloads and pushes: the runtime frees their device buffers inside the
  // copy job, at the latest when their wait returns. They are counted until
  // then, so the peak does not depend on when the copy engine gets to them.
  if (action.kind == ActionKind::Wait) {
    for (int token : action.waits) {
      auto offload = offloading.find({device, token});
      if (offload != offloading.end()) {
        add(device, -offload->second, true);
        offloading.erase(offload);
      }
      auto push = pushing.find({device, token});
      if (push != pushing.end()) {
        auto [s, step] = push->second;
        if (gradBuffer[{s, step}]) {
          gradBuffer[{s, step}] = false;
          add(device, -(int64_t)pipeline.stages[s].paramBytes, false);
        }
        pushing.erase(push);
      }
    }
    return;
  }
  if (action.stage < 0 || action.stage >= (int)pipeline.getNumStages())
    return;
  unsigned s = action.stage;
  const PipelineStage &stage = pipeline.stages[s];
  auto key =
      std::make_tuple(s, (unsigned)std::max(action.microbatch, 0), action.step);
  auto freeKept = [&]() {
    auto it = kept.find(key);
    if (it != kept.end()) {
      add(device, -it->second, true);
      kept.erase(it);
    }
    auto rit = recomputedHeld.find(key);
    if (rit != recomputedHeld.end()) {
      add(device, -rit->second, true);
      recomputedHeld.erase(rit);
    }
  };
  // The last backward of a forward that read a kept version: the copy goes
  // with the version's last one.
  auto releaseVersion = [&]() {
    auto it = forwardVersion.find(key);
    if (it == forwardVersion.end())
      return;
    std::pair<unsigned, int> version{s, it->second};
    forwardVersion.erase(it);
    if (--versionUsers[version] > 0)
      return;
    versionUsers.erase(version);
    if (versionCopies.erase(version))
      add(device, -(int64_t)stage.paramBytes, false);
  };
  switch (action.kind) {
  case ActionKind::Forward:
    if (!workingBytes(action))
      add(device, -(int64_t)stage.outputBytes, false);
    if (action.predict > 0)
      add(device, -(int64_t)stage.paramBytes, false);
    if (!schedule.forwardOnly && !kept.count(key)) {
      int64_t bytes = keptBytes(s, action.microbatch, action.step);
      kept[key] = bytes;
      add(device, bytes, true);
    }
    if (keepsVersions && action.version >= 0 && !forwardVersion.count(key)) {
      forwardVersion[key] = action.version;
      ++versionUsers[{s, action.version}];
    }
    break;
  case ActionKind::Backward:
  case ActionKind::BackwardWeight:
    freeKept();
    releaseVersion();
    break;
  case ActionKind::Update:
    if (gradBuffer[{s, action.step}]) {
      gradBuffer[{s, action.step}] = false;
      add(device, -(int64_t)stage.paramBytes, false);
    }
    break;
  case ActionKind::Offload: {
    // Held apart from `kept`: a prefetch of the same micro-batch may bring
    // it back before the wait.
    auto it = kept.find(key);
    if (it != kept.end()) {
      offloading[{device, action.token}] = it->second;
      kept.erase(it);
    }
    break;
  }
  case ActionKind::Push:
    pushing[{device, action.token}] = {s, action.step};
    break;
  default:
    break;
  }
}
