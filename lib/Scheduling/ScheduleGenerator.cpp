//===- ScheduleGenerator.cpp - Schedule generators: registry, list scheduler
//===//

#include "pipe/Scheduling/ScheduleGenerator.h"
#include "pipe/Support/NamedFactoryRegistry.h"

#include "llvm/ADT/StringExtras.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::pipe;

ScheduleGenerator::~ScheduleGenerator() = default;

namespace {
/// The built-in kinds of Generators.def, then whatever is added at run time.
struct Registry : NamedFactoryRegistry<ScheduleGenerator> {
  Registry() {
#define PIPE_SCHEDULE_GENERATOR(NAME, FACTORY) add(NAME, FACTORY);
#include "pipe/Scheduling/Generators.def"
  }
};
Registry &getRegistry() {
  static Registry registry;
  return registry;
}
} // namespace

bool mlir::pipe::registerScheduleGenerator(StringRef name,
                                           ScheduleGeneratorFactory factory) {
  return getRegistry().add(name, std::move(factory));
}

std::unique_ptr<ScheduleGenerator>
mlir::pipe::createScheduleGenerator(StringRef name) {
  return getRegistry().create(name);
}

SmallVector<std::string> mlir::pipe::getScheduleGeneratorNames() {
  return getRegistry().getNames();
}

std::optional<ScheduleTraits>
mlir::pipe::getScheduleTraits(StringRef name) {
  if (std::unique_ptr<ScheduleGenerator> generator =
          createScheduleGenerator(name))
    return generator->getTraits();
  return std::nullopt;
}

FailureOr<Schedule> mlir::pipe::generateSchedule(StringRef kind,
                                                 const Pipeline &pipeline,
                                                 const ScheduleOptions &options,
                                                 ScheduleDiagFn diag) {
  std::unique_ptr<ScheduleGenerator> generator = createScheduleGenerator(kind);
  if (!generator) {
    diag("unknown schedule kind '" + kind +
         "'; known kinds: " + llvm::join(getScheduleGeneratorNames(), ", "));
    return failure();
  }
  if (options.microbatches == 0 || options.steps == 0) {
    diag("a schedule needs at least one micro-batch and one step");
    return failure();
  }
  if (failed(pipeline.validate(diag)))
    return failure();
  FailureOr<Schedule> schedule = generator->generate(pipeline, options, diag);
  if (failed(schedule))
    return failure();
  schedule->keepsWeightVersions =
      !schedule->forwardOnly && generator->getTraits().keepsWeightVersions;
  Schedule bucketed = bucketGradientReductions(pipeline, std::move(*schedule),
                                               options.reduceBucketBytes);
  if (options.peerOrder)
    return orderRecvsBySender(pipeline, std::move(bucketed));
  return bucketed;
}

//===----------------------------------------------------------------------===//
// List scheduling
//===----------------------------------------------------------------------===//

SmallVector<SmallVector<ComputeItem>>
mlir::pipe::listSchedule(const Pipeline &pipeline, unsigned microbatches,
                         const ListSchedulingPolicy &policy, unsigned step,
                         ListScheduleTrace *trace) {
  unsigned numStages = pipeline.getNumStages();
  unsigned numDevices = pipeline.numDevices;
  enum Phase { F = 0, B = 1, W = 2 };
  constexpr double kUnscheduled = -1;
  // finish[phase][stage][mb]; B is the full backward or its input part.
  std::vector<std::vector<std::vector<double>>> finish(
      3, std::vector<std::vector<double>>(
             numStages, std::vector<double>(microbatches, kUnscheduled)));
  SmallVector<SmallVector<unsigned>> producers(numStages), consumers(numStages);
  for (unsigned s = 0; s < numStages; ++s) {
    producers[s] = pipeline.getProducers(s);
    consumers[s] = pipeline.getConsumers(s);
  }
  // Micro-batches between forward and (weight-)backward, per stage.
  SmallVector<unsigned> inFlight(numStages, 0);
  SmallVector<unsigned> nextForward(numStages, 0);
  SmallVector<double> freeAt(numDevices, 0);
  SmallVector<SmallVector<ComputeItem>> orders(numDevices);
  SmallVector<SmallVector<unsigned>> stagesOf(numDevices);
  for (unsigned d = 0; d < numDevices; ++d)
    stagesOf[d] = pipeline.getStagesOnDevice(d);
  if (trace) {
    trace->pick.assign(numDevices, {});
    trace->start.assign(numDevices, {});
    trace->finish.assign(numDevices, {});
  }
  unsigned picked = 0;

  auto duration = [&](Phase phase, unsigned s) {
    const PipelineStage &stage = pipeline.stages[s];
    if (phase == F)
      return stage.forwardTime;
    if (phase == W)
      return stage.backwardWeightTime;
    return policy.splitBackward ? stage.backwardInputTime
                                : stage.getBackwardTime();
  };
  ActionKind kinds[3] = {ActionKind::Forward,
                         policy.splitBackward ? ActionKind::BackwardInput
                                              : ActionKind::Backward,
                         ActionKind::BackwardWeight};

  unsigned remaining =
      numStages * microbatches *
      (policy.forwardOnly ? 1 : (policy.splitBackward ? 3 : 2));
  while (remaining > 0) {
    // Each device's next decision time and its candidate tasks.
    int bestDevice = -1;
    double bestTime = 0;
    struct Task {
      Phase phase;
      unsigned stage, mb;
      double ready;
    };
    SmallVector<Task> bestTasks;
    for (unsigned d = 0; d < numDevices; ++d) {
      SmallVector<Task> tasks;
      for (unsigned s : stagesOf[d]) {
        // Forwards are started in micro-batch order.
        unsigned mb = nextForward[s];
        unsigned cap = policy.maxInFlight ? policy.maxInFlight(s) : 0;
        if (mb < microbatches && (cap == 0 || inFlight[s] < cap)) {
          double ready = 0;
          bool ok = true;
          for (unsigned p : producers[s]) {
            ok &= finish[F][p][mb] >= 0;
            ready = std::max(ready, finish[F][p][mb]);
          }
          if (ok)
            tasks.push_back({F, s, mb, ready});
        }
        if (policy.forwardOnly)
          continue;
        for (unsigned i = 0; i < microbatches; ++i) {
          if (finish[F][s][i] < 0)
            break;
          if (finish[B][s][i] < 0) {
            double ready = finish[F][s][i];
            bool ok = true;
            for (unsigned c : consumers[s]) {
              ok &= finish[B][c][i] >= 0;
              ready = std::max(ready, finish[B][c][i]);
            }
            if (ok)
              tasks.push_back({B, s, i, ready});
          } else if (policy.splitBackward && finish[W][s][i] < 0) {
            tasks.push_back({W, s, i, finish[B][s][i]});
          }
        }
      }
      if (tasks.empty())
        continue;
      double earliest = tasks.front().ready;
      for (const Task &task : tasks)
        earliest = std::min(earliest, task.ready);
      double decision = std::max(freeAt[d], earliest);
      SmallVector<Task> readyTasks;
      for (const Task &task : tasks)
        if (task.ready <= decision)
          readyTasks.push_back(task);
      if (bestDevice < 0 || decision < bestTime) {
        bestDevice = d;
        bestTime = decision;
        bestTasks = std::move(readyTasks);
      }
    }
    assert(bestDevice >= 0 && "list scheduling stalled on an acyclic graph");
    if (bestDevice < 0)
      break;
    auto itemOf = [&](const Task &task) {
      ComputeItem item;
      item.kind = kinds[task.phase];
      item.stage = task.stage;
      item.microbatch = task.mb;
      item.step = step;
      return item;
    };
    const Task *chosen = &bestTasks.front();
    for (const Task &task : bestTasks)
      if (policy.priority(itemOf(task)) < policy.priority(itemOf(*chosen)))
        chosen = &task;
    Task task = *chosen;
    double end = bestTime + duration(task.phase, task.stage);
    finish[task.phase][task.stage][task.mb] = end;
    freeAt[bestDevice] = end;
    orders[bestDevice].push_back(itemOf(task));
    if (trace) {
      trace->pick[bestDevice].push_back(picked);
      trace->start[bestDevice].push_back(bestTime);
      trace->finish[bestDevice].push_back(end);
    }
    ++picked;
    --remaining;
    if (task.phase == F) {
      ++nextForward[task.stage];
      if (!policy.forwardOnly)
        ++inFlight[task.stage];
    } else if (task.phase == W || (task.phase == B && !policy.splitBackward)) {
      --inFlight[task.stage];
    }
  }
  return orders;
}

ListSchedulingPolicy
mlir::pipe::makeOneFOneBPolicy(const Pipeline &pipeline,
                               const ScheduleOptions &options) {
  ListSchedulingPolicy policy;
  policy.forwardOnly = options.forwardOnly;
  policy.maxInFlight = [height = pipeline.getHeights()](unsigned s) {
    return height[s];
  };
  policy.priority = [](const ComputeItem &item) -> std::array<int64_t, 4> {
    bool isForward = item.kind == ActionKind::Forward;
    return {isForward ? 1 : 0, (int64_t)item.microbatch, (int64_t)item.stage,
            0};
  };
  return policy;
}

Schedule
mlir::pipe::scheduleStepsWithPolicy(const Pipeline &pipeline, StringRef kind,
                                    const ScheduleOptions &options,
                                    const ListSchedulingPolicy &policy) {
  SmallVector<SmallVector<ComputeItem>> orders(pipeline.numDevices);
  for (unsigned step = 0; step < options.steps; ++step) {
    auto stepOrders =
        listSchedule(pipeline, options.microbatches, policy, step);
    for (unsigned d = 0; d < orders.size(); ++d)
      orders[d].append(stepOrders[d]);
  }
  return lowerComputeOrders(pipeline, kind, options.microbatches, options.steps,
                            options.forwardOnly, options.recompute, orders);
}
