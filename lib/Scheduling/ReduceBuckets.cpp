//===- ReduceBuckets.cpp - Bucketed, overlapped gradient all-reduces ------===//
//
// Data parallelism sums every trainable gradient over the replicas before
// its update. Generators emit one blocking ReduceGrad per parameter where
// the step ends; this turns those of parameters read on one device into a
// few asynchronous bucket all-reduces that start as soon as the gradients
// are final, as data-parallel trainers do (fewer, larger messages, and the
// communication runs under the device's remaining backward work).
//
//===----------------------------------------------------------------------===//

#include "pipe/Scheduling/Schedule.h"

#include <map>

using namespace mlir;
using namespace mlir::pipe;

namespace {

/// Actions that write a stage's parameter gradients.
bool writesParamGradients(ActionKind kind) {
  return kind == ActionKind::Backward || kind == ActionKind::BackwardWeight;
}

struct Bucket {
  SmallVector<int, 4> params;
  unsigned step = 0;
  int token = -1;
  uint64_t bytes = 0;
  /// Where its wait goes: the start of the run of reductions holding the
  /// first one it replaces.
  size_t waitAt = 0;
};

} // namespace

Schedule mlir::pipe::bucketGradientReductions(const Pipeline &pipeline,
                                              Schedule schedule,
                                              uint64_t bucketBytes) {
  if (pipeline.replicas <= 1 || schedule.forwardOnly || bucketBytes == 0)
    return schedule;
  for (unsigned d = 0; d < schedule.devices.size(); ++d) {
    SmallVector<ScheduleAction> &actions = schedule.devices[d];
    auto readOnlyHere = [&](int p) {
      return p >= 0 && p < (int)pipeline.sharedParams.size() &&
             llvm::all_of(pipeline.sharedParams[p].stages, [&](unsigned s) {
               return pipeline.stages[s].device == d;
             });
    };
    int nextToken = 0;
    for (const ScheduleAction &a : actions)
      nextToken = std::max(nextToken, a.token + 1);

    // The reductions to bucket, grouped by the action after which their
    // gradients are final (-1: none before them) and their step.
    std::map<std::pair<unsigned, unsigned>, int> lastWriter; // (stage, step)
    std::map<std::pair<int, unsigned>, SmallVector<size_t>> groups;
    SmallVector<bool> replaced(actions.size(), false);
    for (size_t i = 0; i < actions.size(); ++i) {
      const ScheduleAction &a = actions[i];
      if (writesParamGradients(a.kind) && a.stage >= 0)
        lastWriter[{unsigned(a.stage), a.step}] = i;
      if (a.kind != ActionKind::ReduceGrad || !readOnlyHere(a.param))
        continue;
      int ready = -1;
      for (unsigned s : pipeline.sharedParams[a.param].stages)
        if (auto it = lastWriter.find({s, a.step}); it != lastWriter.end())
          ready = std::max(ready, it->second);
      groups[{ready, a.step}].push_back(i);
      replaced[i] = true;
    }
    if (groups.empty())
      continue;

    // The waits of the buckets replacing one run of reductions merge into
    // one, at the run's first.
    SmallVector<size_t> runStart(actions.size());
    for (size_t i = 0; i < actions.size(); ++i)
      runStart[i] =
          i > 0 && replaced[i] && replaced[i - 1] ? runStart[i - 1] : i;

    // Buckets start after the writer and the sends issued right after it
    // (the gradients the previous stage waits for go first).
    std::map<size_t, SmallVector<Bucket>> startBefore;
    std::map<size_t, SmallVector<int>> waitBefore;
    for (auto &[key, reductions] : groups) {
      int ready = key.first;
      // Without a writer before them (not in a valid schedule), where their
      // run of reductions starts, so that no wait precedes its start.
      size_t start = runStart[reductions.front()];
      if (ready >= 0) {
        start = ready + 1;
        while (start < actions.size() &&
               actions[start].kind == ActionKind::Send)
          ++start;
      }
      SmallVector<Bucket> buckets;
      for (size_t i : reductions) {
        uint64_t bytes = pipeline.sharedParams[actions[i].param].bytes;
        if (buckets.empty() || (!buckets.back().params.empty() &&
                                buckets.back().bytes + bytes > bucketBytes)) {
          buckets.emplace_back();
          buckets.back().step = key.second;
          buckets.back().token = nextToken++;
          buckets.back().waitAt = runStart[i];
        }
        buckets.back().params.push_back(actions[i].param);
        buckets.back().bytes += bytes;
      }
      for (Bucket &b : buckets) {
        waitBefore[b.waitAt].push_back(b.token);
        startBefore[start].push_back(std::move(b));
      }
    }

    SmallVector<ScheduleAction> rewritten;
    rewritten.reserve(actions.size() + 2 * startBefore.size());
    for (size_t i = 0; i <= actions.size(); ++i) {
      if (auto it = startBefore.find(i); it != startBefore.end())
        for (Bucket &b : it->second) {
          ScheduleAction start;
          start.kind = ActionKind::ReduceBucket;
          start.params = std::move(b.params);
          start.step = b.step;
          start.token = b.token;
          rewritten.push_back(std::move(start));
        }
      if (auto it = waitBefore.find(i); it != waitBefore.end()) {
        ScheduleAction wait;
        wait.kind = ActionKind::Wait;
        wait.waits.assign(it->second.begin(), it->second.end());
        rewritten.push_back(std::move(wait));
      }
      if (i < actions.size() && !replaced[i])
        rewritten.push_back(std::move(actions[i]));
    }
    actions = std::move(rewritten);
  }
  return schedule;
}
