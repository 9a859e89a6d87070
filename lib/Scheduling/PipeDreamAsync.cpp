//===- PipeDreamAsync.cpp - Asynchronous 1F1B (PipeDream) -----------------===//
//
// PipeDream never flushes: the micro-batches of `steps` consecutive
// optimizer steps stream through one 1F1B pipeline, and each stage updates
// its weights as soon as it has the gradients of its last micro-batch of a
// step, while later micro-batches are already in flight. A micro-batch's
// forward therefore uses whatever weight version its stage has at that
// moment (recorded as `version` = the number of updates done before it).
// With weight stashing its backward uses the same version (the stage keeps
// a copy); with stale weights it uses the latest one, and with weight
// prediction its forward uses the weights extrapolated to that version.
//
//===----------------------------------------------------------------------===//

#include "pipe/Scheduling/ScheduleGenerator.h"

#include <map>

using namespace mlir;
using namespace mlir::pipe;

namespace {
class PipeDreamAsyncGenerator : public ScheduleGenerator {
public:
  StringRef getName() const override { return "pipedream-async"; }
  ScheduleTraits getTraits() const override {
    ScheduleTraits traits;
    traits.asynchronous = true;
    traits.keepsWeightVersions = true;
    return traits;
  }

  FailureOr<Schedule> generate(const Pipeline &pipeline,
                               const ScheduleOptions &options,
                               ScheduleDiagFn diag) const override {
    unsigned m = options.microbatches;
    unsigned steps = options.steps;
    ListSchedulingPolicy policy = makeOneFOneBPolicy(pipeline, options);
    // One long 1F1B over all steps' micro-batches, then split back.
    ListScheduleTrace trace;
    auto streamed = listSchedule(pipeline, m * steps, policy, 0, &trace);
    // Stages tied by shared parameters update together, once all of them
    // have their step's gradients (the reduction needs every part).
    unsigned numStages = pipeline.getNumStages();
    SmallVector<unsigned> group(numStages);
    for (unsigned s = 0; s < numStages; ++s)
      group[s] = s;
    auto find = [&](unsigned s) {
      while (group[s] != s)
        s = group[s] = group[group[s]];
      return s;
    };
    for (const SharedParam &param : pipeline.sharedParams)
      for (unsigned s : param.stages)
        group[find(s)] = find(param.stages.front());

    // The reduction of a group's shared gradients for one step is a
    // collective: every device hosting a reader must reach it, and none may
    // need, before it, work another participant only does after it. Each
    // (group, step) becomes an event at the end of the group's last backward
    // of that step in the list scheduler's play: on every participating
    // device it goes after the tasks that started before that moment or
    // were picked no later than that backward, and before all others. Those
    // sets are closed under data dependencies (a task's inputs finish before
    // it starts and are picked before it), and, with events sorted by time
    // and the pick bound made monotone, nested; so all devices meet the
    // collectives in the same order with everything each of them waits for
    // already issued, and lists built this way cannot deadlock.
    struct Event {
      unsigned group, step;
      double time;
      unsigned pick;
    };
    SmallVector<Event> events;
    SmallVector<bool> collective(numStages, false);
    for (unsigned s = 0; s < numStages; ++s)
      if (!pipeline.getSharedParamsOf(s).empty())
        collective[find(s)] = true;
    if (!options.forwardOnly) {
      std::map<std::pair<unsigned, unsigned>, unsigned> eventOf;
      for (unsigned d = 0; d < pipeline.numDevices; ++d)
        for (unsigned i = 0; i < streamed[d].size(); ++i) {
          const ComputeItem &item = streamed[d][i];
          unsigned g = find(item.stage);
          if (item.kind != ActionKind::Backward || !collective[g])
            continue;
          auto [it, inserted] =
              eventOf.try_emplace({g, item.microbatch / m}, events.size());
          if (inserted)
            events.push_back({g, item.microbatch / m, 0, 0});
          Event &event = events[it->second];
          event.time = std::max(event.time, trace.finish[d][i]);
          event.pick = std::max(event.pick, trace.pick[d][i]);
        }
      llvm::stable_sort(events, [](const Event &a, const Event &b) {
        return std::make_pair(a.time, a.pick) < std::make_pair(b.time, b.pick);
      });
      for (unsigned e = 1; e < events.size(); ++e)
        events[e].pick = std::max(events[e].pick, events[e - 1].pick);
    }

    SmallVector<SmallVector<ComputeItem>> orders(pipeline.numDevices);
    for (unsigned d = 0; d < pipeline.numDevices; ++d) {
      SmallVector<unsigned> stagesHere = pipeline.getStagesOnDevice(d);
      SmallVector<unsigned> updates(numStages, 0);
      // Backwards left per (stage, step) for stages updating on their own.
      std::map<std::pair<unsigned, unsigned>, unsigned> backwardsLeft;
      std::map<std::pair<unsigned, unsigned>, int> forwardVersion;
      auto emitEvent = [&](const Event &event) {
        for (unsigned p = 0; p < pipeline.sharedParams.size(); ++p) {
          const SharedParam &param = pipeline.sharedParams[p];
          if (param.stages.empty() || find(param.stages.front()) != event.group)
            continue;
          if (llvm::any_of(param.stages, [&](unsigned s) {
                return pipeline.stages[s].device == d;
              })) {
            ComputeItem reduce;
            reduce.kind = ActionKind::ReduceGrad;
            reduce.step = event.step;
            reduce.param = p;
            orders[d].push_back(reduce);
          }
        }
        for (unsigned s : stagesHere)
          if (find(s) == event.group) {
            orders[d].push_back({ActionKind::Update, s, 0, event.step, -1});
            ++updates[s];
          }
      };
      unsigned nextEvent = 0;
      for (unsigned i = 0; i < streamed[d].size(); ++i) {
        while (nextEvent < events.size() &&
               !(trace.start[d][i] < events[nextEvent].time ||
                 trace.pick[d][i] <= events[nextEvent].pick))
          emitEvent(events[nextEvent++]);
        ComputeItem item = streamed[d][i];
        unsigned global = item.microbatch;
        item.step = global / m;
        item.microbatch = global % m;
        if (item.kind == ActionKind::Forward) {
          item.version = updates[item.stage];
          forwardVersion[{item.stage, global}] = item.version;
        } else {
          item.version = options.stashWeights
                             ? forwardVersion[{item.stage, global}]
                             : (int)updates[item.stage];
        }
        orders[d].push_back(item);
        if (item.kind == ActionKind::Backward &&
            !collective[find(item.stage)] &&
            ++backwardsLeft[{item.stage, item.step}] == m) {
          orders[d].push_back(
              {ActionKind::Update, item.stage, 0, item.step, -1});
          ++updates[item.stage];
        }
      }
      while (nextEvent < events.size())
        emitEvent(events[nextEvent++]);
      // Weight prediction: each forward looks ahead by the updates of its
      // stage that its backward (stale) will have seen.
      if (options.predictWeights && !options.forwardOnly) {
        std::map<std::tuple<unsigned, unsigned, unsigned>, ComputeItem *> fwd;
        for (ComputeItem &item : orders[d]) {
          auto key = std::make_tuple(item.stage, item.step, item.microbatch);
          if (item.kind == ActionKind::Forward)
            fwd[key] = &item;
          else if (auto it = fwd.find(key);
                   item.kind == ActionKind::Backward && it != fwd.end())
            it->second->predict = item.version - it->second->version;
        }
      }
    }
    return lowerComputeOrders(pipeline, getName(), m, steps,
                              options.forwardOnly, options.recompute, orders,
                              /*asynchronous=*/true);
  }
};
} // namespace

std::unique_ptr<ScheduleGenerator> mlir::pipe::createPipeDreamAsyncGenerator() {
  return std::make_unique<PipeDreamAsyncGenerator>();
}
