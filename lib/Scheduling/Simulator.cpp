//===- Simulator.cpp - Discrete-event simulation of a schedule ------------===//

#include "pipe/Scheduling/Simulator.h"
#include "pipe/Scheduling/ScheduleChecker.h"

#include "pipe/Support/Intervals.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <set>

using namespace mlir;
using namespace mlir::pipe;

namespace {
using TransferKey = std::tuple<bool, int, int, int, unsigned>;

TransferKey keyOf(const ScheduleAction &action) {
  return {action.gradient, action.src, action.dst, action.microbatch,
          action.step};
}

using mlir::pipe::Interval;

class Simulator {
public:
  Simulator(const Pipeline &pipeline, const Schedule &schedule,
            const MachineModel &machine, const SimulationOptions &options)
      : pipeline(pipeline), schedule(schedule), machine(machine),
        options(options) {}

  FailureOr<SimulationReport> run(ScheduleDiagFn diag);

private:
  struct DeviceState {
    unsigned pc = 0;
    double hostTime = 0;
    double computeFree = 0;
    double h2dFree = 0, d2hFree = 0;
    /// When the memory freed by the last release becomes free: a load or
    /// prefetch issued after a release reuses that memory, so it cannot
    /// start before the compute that preceded the release is done.
    double lastRelease = 0;
    /// When the device's last bucket all-reduce over the replicas ends
    /// (they run one at a time, beside the device's compute).
    double collectiveFree = 0;
    /// Its all-reduce track in the trace, once it has one.
    int collectiveTrack = -1;
    std::vector<Interval> compute, copies;
    double h2dBusy = 0, d2hBusy = 0;
  };
  struct MemoryEvent {
    double time;
    bool isEnd;
    unsigned device;
    const ScheduleAction *action;
  };

  double computeTime(const ScheduleAction &a) const;
  uint64_t transferBytes(const ScheduleAction &a) const;
  double hostCopyBytes(const ScheduleAction &a) const;
  /// What the host link carries while `a` copies: the replicas run the
  /// same action list at once, and their copies share the one host's
  /// bandwidth, so each takes as long as R copies of its bytes.
  double hostLinkBytes(const ScheduleAction &a) const {
    return hostCopyBytes(a) * pipeline.replicas;
  }
  /// Start time of `d`'s next action, or nullopt if it cannot be processed
  /// yet.
  std::optional<double> candidate(unsigned d, std::string &why);
  void process(unsigned d);
  /// When the host optimizer starts its next queued update, or nullopt when
  /// none is queued.
  std::optional<double> hostCandidate() const;
  struct HostJob;
  std::vector<HostJob>::const_iterator nextHostJob() const;
  /// Runs the queued update the host optimizer picks next, as the
  /// runtime's host queue does: among those whose gradient has arrived
  /// when it is free, the one of the earliest step and lowest stage (the
  /// next step's forward needs the low stages first, and an L2L backward
  /// pushes them last); if none has, the first to arrive.
  void runHostUpdate();
  /// The action as a trace event names it (without the "pipe." prefix).
  std::string traceLabel(const ScheduleAction &a) const;
  void traceEvent(const Twine &name, StringRef category, unsigned track,
                  double start, double end);
  unsigned linkTrack(unsigned from, unsigned to);
  /// Appends a track named `name` to the trace; returns its number.
  unsigned addTrack(std::string name);
  void memory(unsigned d, const ScheduleAction &a, double begin, double end) {
    memoryEvents.push_back({begin, false, d, &a});
    memoryEvents.push_back({end, true, d, &a});
  }

  const Pipeline &pipeline;
  const Schedule &schedule;
  const MachineModel &machine;
  const SimulationOptions &options;
  SimulationReport report;
  SmallVector<DeviceState> devices;
  std::map<std::pair<unsigned, unsigned>, double> linkFree;
  std::map<std::pair<unsigned, unsigned>, unsigned> linkIndex;
  std::map<TransferKey, double> arrival;
  std::map<std::pair<unsigned, int>, double> tokenTime;
  std::map<std::pair<int, unsigned>, double> pushTime;
  /// A ps.update issued by a device and not yet run by the host optimizer.
  struct HostJob {
    unsigned device;
    const ScheduleAction *action;
    /// When its gradient is on the host (or it was issued, if later).
    double ready;
  };
  std::vector<HostJob> hostQueue;
  /// Per stage: when each of its update runs ended, in order (a ps.load
  /// reads what the last wrote, a load of weight version v what the v-th
  /// wrote).
  std::map<int, std::vector<double>> updateEnds;
  double hostOptimizerFree = 0;
  double makespan = 0;
  std::vector<MemoryEvent> memoryEvents;
};
} // namespace

double Simulator::computeTime(const ScheduleAction &a) const {
  const PipelineStage &stage = pipeline.stages[a.stage];
  // A device-side optimizer update of the stage: measured, else
  // memory-bound.
  auto updateTime = [&] {
    if (stage.updateTime > 0)
      return stage.updateTime;
    double bandwidth = machine.getDevice(stage.device).memoryBandwidth;
    return bandwidth > 0
               ? stage.paramCount * machine.updateBytesPerParam / bandwidth
               : 0.0;
  };
  switch (a.kind) {
  case ActionKind::Forward:
    // Weight prediction first builds the predicted copy: it reads the
    // weights and the optimizer state and writes the copy, about half an
    // update's memory traffic.
    return stage.forwardTime + (a.predict > 0 ? updateTime() / 2 : 0.0);
  case ActionKind::Recompute:
    return stage.forwardTime;
  case ActionKind::Backward:
    return stage.getBackwardTime();
  case ActionKind::BackwardInput:
    return stage.backwardInputTime;
  case ActionKind::BackwardWeight:
    return stage.backwardWeightTime;
  case ActionKind::Update:
    return updateTime();
  default:
    return 0;
  }
}

uint64_t Simulator::transferBytes(const ScheduleAction &a) const {
  int producer = a.gradient ? a.dst : a.src;
  int consumer = a.gradient ? a.src : a.dst;
  if (const PipelineEdge *edge = pipeline.findEdge(producer, consumer))
    return edge->bytes;
  return 0;
}

double Simulator::hostCopyBytes(const ScheduleAction &a) const {
  const PipelineStage &stage = pipeline.stages[a.stage];
  switch (a.kind) {
  case ActionKind::Load:
  case ActionKind::Push:
    return stage.paramBytes;
  case ActionKind::Offload:
  case ActionKind::Prefetch:
    return stage.inputBytes;
  default:
    return 0;
  }
}

unsigned Simulator::addTrack(std::string name) {
  report.trackNames.push_back(std::move(name));
  return report.trackNames.size() - 1;
}

unsigned Simulator::linkTrack(unsigned from, unsigned to) {
  auto [it, inserted] = linkIndex.try_emplace({from, to}, linkIndex.size());
  if (inserted) {
    LinkSimReport link;
    link.from = from;
    link.to = to;
    link.track =
        addTrack("link " + std::to_string(from) + "->" + std::to_string(to));
    report.links.push_back(link);
  }
  return report.links[it->second].track;
}

std::string Simulator::traceLabel(const ScheduleAction &a) const {
  std::string label = a.describe(pipeline);
  if (label.compare(0, 5, "pipe.") == 0)
    label = label.substr(5);
  return label;
}

void Simulator::traceEvent(const Twine &name, StringRef category,
                           unsigned track, double start, double end) {
  makespan = std::max(makespan, end);
  if (!options.recordTrace || end <= start)
    return;
  report.trace.push_back(
      {name.str(), category.str(), track, start, end - start});
}

std::optional<double> Simulator::candidate(unsigned d, std::string &why) {
  DeviceState &state = devices[d];
  const ScheduleAction &a = schedule.devices[d][state.pc];
  double afterCompute = std::max(state.hostTime, state.computeFree);
  switch (a.kind) {
  case ActionKind::Recv:
    if (!arrival.count(keyOf(a))) {
      why = "its matching send is never issued";
      return std::nullopt;
    }
    return state.hostTime;
  case ActionKind::Wait: {
    double time = state.hostTime;
    for (int t : a.waits) {
      auto it = tokenTime.find({d, t});
      if (it == tokenTime.end()) {
        why = "it waits on a token that never completes";
        return std::nullopt;
      }
      time = std::max(time, it->second);
    }
    return time;
  }
  case ActionKind::ReduceGrad: {
    if (a.param < 0 || a.param >= (int)pipeline.sharedParams.size())
      return afterCompute;
    double time = 0;
    for (unsigned s : pipeline.sharedParams[a.param].stages) {
      unsigned other = pipeline.stages[s].device;
      DeviceState &os = devices[other];
      if (os.pc >= schedule.devices[other].size()) {
        why = "device " + std::to_string(other) +
              " never reaches the same gradient reduction";
        return std::nullopt;
      }
      const ScheduleAction &oa = schedule.devices[other][os.pc];
      if (oa.kind != ActionKind::ReduceGrad || oa.param != a.param ||
          oa.step != a.step) {
        why = "device " + std::to_string(other) +
              " is not at the same gradient reduction";
        return std::nullopt;
      }
      time = std::max(time, std::max(os.hostTime, os.computeFree));
    }
    return time;
  }
  case ActionKind::ReduceBucket:
    // Its gradients are final once the device's earlier computes are done.
    return afterCompute;
  case ActionKind::Load: {
    const std::vector<double> &ends = updateEnds[a.stage];
    double written = 0.0;
    if (a.version >= 0) {
      if (ends.size() < size_t(a.version)) {
        why = "the host update that writes the weight version it loads has "
              "not run";
        return std::nullopt;
      }
      if (a.version > 0)
        written = ends[a.version - 1];
    } else {
      if (llvm::any_of(hostQueue, [&](const HostJob &job) {
            return job.action->stage == a.stage;
          })) {
        why = "the host update of its stage has not run";
        return std::nullopt;
      }
      if (!ends.empty())
        written = ends.back();
    }
    return std::max(
        {state.hostTime, state.h2dFree, state.lastRelease, written});
  }
  case ActionKind::Prefetch:
    return std::max({state.hostTime, state.h2dFree, state.lastRelease});
  case ActionKind::Push:
  case ActionKind::Offload:
    return std::max(afterCompute, state.d2hFree);
  default:
    return afterCompute;
  }
}

std::vector<Simulator::HostJob>::const_iterator Simulator::nextHostJob() const {
  // Ready jobs first, by (step, stage); then the others by arrival.
  auto rank = [&](const HostJob &job) {
    bool ready = job.ready <= hostOptimizerFree;
    return ready ? std::make_tuple(false, 0.0, job.action->step,
                                   job.action->stage)
                 : std::make_tuple(true, job.ready, 0u, 0);
  };
  return llvm::min_element(hostQueue, [&](const HostJob &a, const HostJob &b) {
    return rank(a) < rank(b);
  });
}

std::optional<double> Simulator::hostCandidate() const {
  if (hostQueue.empty())
    return std::nullopt;
  return std::max(hostOptimizerFree, nextHostJob()->ready);
}

void Simulator::runHostUpdate() {
  auto next = nextHostJob();
  double start = std::max(hostOptimizerFree, next->ready);
  HostJob job = *next;
  hostQueue.erase(next);
  const ScheduleAction &a = *job.action;
  const PipelineStage &stage = pipeline.stages[a.stage];
  double rate = machine.optimizerParamsPerSecond;
  // With replicas, the ps.reduce before it sums their R pushed f32
  // gradients on the same host: R passes that each read the sum and a
  // gradient and write the sum (12 bytes a param), at the memory-bound
  // optimizer's rate scaled by the bytes an update moves per param.
  double passes = 1.0;
  if (pipeline.replicas > 1)
    passes += pipeline.replicas * (machine.updateBytesPerParam > 0
                                       ? 12.0 / machine.updateBytesPerParam
                                       : 1.0);
  double end = start + (rate > 0 ? passes * stage.paramCount / rate : 0.0);
  hostOptimizerFree = end;
  report.hostOptimizerBusy += end - start;
  tokenTime[{job.device, a.token}] = end;
  updateEnds[a.stage].push_back(end);
  traceEvent(traceLabel(a), "host", 3 * devices.size(), start, end);
}

void Simulator::process(unsigned d) {
  DeviceState &state = devices[d];
  const ScheduleAction &a = schedule.devices[d][state.pc];
  std::string why;
  double start = *candidate(d, why);
  double afterCompute = std::max(state.hostTime, state.computeFree);
  std::string label = traceLabel(a);
  unsigned numDevices = devices.size();
  auto complete = [&](double time) {
    if (a.token >= 0)
      tokenTime[{d, a.token}] = time;
  };
  switch (a.kind) {
  case ActionKind::Forward:
  case ActionKind::Backward:
  case ActionKind::BackwardInput:
  case ActionKind::BackwardWeight:
  case ActionKind::Recompute:
  case ActionKind::Update: {
    double end = start + computeTime(a);
    state.computeFree = end;
    state.compute.push_back({start, end});
    traceEvent(label, "compute", d, start, end);
    memory(d, a, start, end);
    makespan = std::max(makespan, end);
    break;
  }
  case ActionKind::ReduceGrad: {
    const SharedParam &param = pipeline.sharedParams[a.param];
    std::set<unsigned> participants;
    for (unsigned s : param.stages)
      participants.insert(pipeline.stages[s].device);
    // Over the stages' devices, then over the replicas' copies of this
    // device; the replicas run the same schedule, so one replica's timeline
    // stands for all.
    double duration = machine.getAllReduceTime(
        SmallVector<unsigned>(participants.begin(), participants.end()),
        param.bytes);
    duration += machine.getReplicaAllReduceTime(d, pipeline.numDevices,
                                                pipeline.replicas, param.bytes);
    // Every participant runs it at once; all of them advance here.
    for (unsigned other : participants) {
      DeviceState &os = devices[other];
      os.computeFree = start + duration;
      os.compute.push_back({start, start + duration});
      traceEvent(label, "collective", other, start, start + duration);
      if (other != d)
        ++os.pc;
    }
    makespan = std::max(makespan, start + duration);
    break;
  }
  case ActionKind::ReduceBucket: {
    // Over the replicas' copies of this device, beside its compute; the
    // replicas run the same schedule, so one replica's timeline stands for
    // all.
    uint64_t bytes = 0;
    for (int p : a.params)
      if (p >= 0 && p < (int)pipeline.sharedParams.size())
        bytes += pipeline.sharedParams[p].bytes;
    double begin = std::max(start, state.collectiveFree);
    double end = begin + machine.getReplicaAllReduceTime(
                             d, pipeline.numDevices, pipeline.replicas, bytes);
    state.collectiveFree = end;
    complete(end);
    if (state.collectiveTrack < 0)
      state.collectiveTrack =
          addTrack("device " + std::to_string(d) + " all-reduce");
    traceEvent(label, "collective", state.collectiveTrack, begin, end);
    break;
  }
  case ActionKind::Send: {
    unsigned to = pipeline.stages[a.dst].device;
    const MachineModel::Link &link = machine.getLink(d, to);
    double &free = linkFree[{d, to}];
    double begin = std::max(start, free);
    double end = begin + link.getTime(transferBytes(a));
    free = end;
    arrival[keyOf(a)] = end;
    complete(end);
    unsigned track = linkTrack(d, to);
    LinkSimReport &lr = report.links[linkIndex[{d, to}]];
    lr.busyTime += end - begin;
    lr.bytes += transferBytes(a);
    traceEvent(label, "transfer", track, begin, end);
    break;
  }
  case ActionKind::Recv:
    complete(arrival[keyOf(a)]);
    break;
  case ActionKind::Wait:
    state.hostTime = start;
    // What a wait frees (offloaded and pushed buffers) is free once the
    // device's earlier computes are done too: the runtime runs them in order.
    memory(d, a, std::max(start, afterCompute), std::max(start, afterCompute));
    break;
  case ActionKind::Load:
  case ActionKind::Prefetch: {
    double end = start + machine.hostToDevice.getTime(hostLinkBytes(a));
    state.h2dFree = end;
    state.h2dBusy += end - start;
    state.copies.push_back({start, end});
    complete(end);
    traceEvent(label, "h2d", numDevices + 2 * d, start, end);
    memory(d, a, start, end);
    break;
  }
  case ActionKind::Push:
  case ActionKind::Offload: {
    double end = start + machine.deviceToHost.getTime(hostLinkBytes(a));
    state.d2hFree = end;
    state.d2hBusy += end - start;
    state.copies.push_back({start, end});
    complete(end);
    if (a.kind == ActionKind::Push)
      pushTime[{a.stage, a.step}] = end;
    traceEvent(label, "d2h", numDevices + 2 * d + 1, start, end);
    memory(d, a, start, end);
    break;
  }
  case ActionKind::HostUpdate: {
    auto it = pushTime.find({a.stage, a.step});
    double ready = it == pushTime.end() ? start : std::max(start, it->second);
    hostQueue.push_back({d, &a, ready});
    break;
  }
  case ActionKind::HostReduce:
    // Runs with the ps.update that follows it (runHostUpdate).
    break;
  case ActionKind::Release:
    state.lastRelease = afterCompute;
    memory(d, a, afterCompute, afterCompute);
    break;
  }
  ++state.pc;
}

FailureOr<SimulationReport> Simulator::run(ScheduleDiagFn diag) {
  unsigned numDevices = schedule.devices.size();
  devices.resize(numDevices);
  report.kind = schedule.kind;
  report.steps = schedule.steps;
  report.microbatches = schedule.microbatches;
  for (unsigned d = 0; d < numDevices; ++d)
    report.trackNames.push_back("device " + std::to_string(d) + " compute");
  for (unsigned d = 0; d < numDevices; ++d) {
    report.trackNames.push_back("device " + std::to_string(d) + " h2d copy");
    report.trackNames.push_back("device " + std::to_string(d) + " d2h copy");
  }
  report.trackNames.push_back("host optimizer");

  while (true) {
    int best = -1;
    double bestTime = 0;
    bool unfinished = false;
    for (unsigned d = 0; d < numDevices; ++d) {
      if (devices[d].pc >= schedule.devices[d].size())
        continue;
      unfinished = true;
      std::string why;
      std::optional<double> time = candidate(d, why);
      if (time && (best < 0 || *time < bestTime)) {
        best = d;
        bestTime = *time;
      }
    }
    // Devices first at equal times, so that the host optimizer sees every
    // update issued by then.
    if (std::optional<double> host = hostCandidate();
        host && (best < 0 || *host < bestTime)) {
      runHostUpdate();
      continue;
    }
    if (!unfinished)
      break;
    if (best < 0) {
      for (unsigned d = 0; d < numDevices; ++d) {
        if (devices[d].pc >= schedule.devices[d].size())
          continue;
        std::string why;
        (void)candidate(d, why);
        diag("the schedule deadlocks: device " + Twine(d) + " is stuck at " +
             schedule.devices[d][devices[d].pc].describe(pipeline) +
             " because " + why);
        return failure();
      }
    }
    process(best);
  }

  // Memory, replayed in time order (frees before allocations at equal
  // times).
  MemoryTracker tracker(pipeline, schedule);
  llvm::stable_sort(memoryEvents,
                    [](const MemoryEvent &a, const MemoryEvent &b) {
                      if (a.time != b.time)
                        return a.time < b.time;
                      return a.isEnd > b.isEnd;
                    });
  for (const MemoryEvent &event : memoryEvents) {
    if (event.isEnd)
      tracker.end(event.device, *event.action);
    else
      tracker.begin(event.device, *event.action);
  }

  // The runtime's own time per run (starting it, collecting its results)
  // is part of every run's wall time.
  report.totalTime = makespan + machine.runOverhead;
  report.stepTime = report.totalTime / std::max(1u, schedule.steps);
  if (makespan > 0)
    // Every data-parallel replica trains on its own micro-batches.
    report.throughput = double(schedule.microbatches) * options.microbatchSize *
                        schedule.steps * pipeline.replicas / report.totalTime;
  for (unsigned d = 0; d < numDevices; ++d) {
    DeviceState &state = devices[d];
    DeviceSimReport dr;
    std::vector<Interval> compute = unite(state.compute);
    dr.busyTime = measure(compute);
    dr.bubbleFraction = makespan > 0 ? 1 - dr.busyTime / makespan : 0;
    dr.exposedCopyTime = measure(subtract(unite(state.copies), compute));
    dr.h2dBusy = state.h2dBusy;
    dr.d2hBusy = state.d2hBusy;
    dr.peakMemory = tracker.getPeak(d);
    dr.peakActivations = tracker.getPeakActivations(d);
    dr.capacity = machine.getDevice(d).memoryBytes;
    report.devices.push_back(dr);
  }
  for (LinkSimReport &link : report.links)
    link.utilisation = makespan > 0 ? link.busyTime / makespan : 0;
  return std::move(report);
}

FailureOr<SimulationReport>
mlir::pipe::simulate(const Pipeline &pipeline, const Schedule &schedule,
                     const MachineModel &machine,
                     const SimulationOptions &options, ScheduleDiagFn diag) {
  return Simulator(pipeline, schedule, machine, options).run(diag);
}

//===----------------------------------------------------------------------===//
// Reports
//===----------------------------------------------------------------------===//

double SimulationReport::getMaxBubbleFraction() const {
  double result = 0;
  for (const DeviceSimReport &device : devices)
    result = std::max(result, device.bubbleFraction);
  return result;
}

void SimulationReport::writeJSON(llvm::raw_ostream &os) const {
  llvm::json::OStream json(os, 2);
  writeJSON(json);
  os << "\n";
}

void SimulationReport::writeJSON(llvm::json::OStream &json) const {
  json.object([&] {
    json.attribute("kind", kind);
    json.attribute("microbatches", (int64_t)microbatches);
    json.attribute("steps", (int64_t)steps);
    json.attribute("total_time_s", totalTime);
    json.attribute("step_time_s", stepTime);
    json.attribute("throughput_samples_per_s", throughput);
    json.attribute("host_optimizer_busy_s", hostOptimizerBusy);
    json.attributeArray("devices", [&] {
      for (unsigned d = 0; d < devices.size(); ++d) {
        const DeviceSimReport &dr = devices[d];
        json.object([&] {
          json.attribute("device", (int64_t)d);
          json.attribute("busy_s", dr.busyTime);
          json.attribute("bubble_fraction", dr.bubbleFraction);
          json.attribute("peak_memory_bytes", dr.peakMemory);
          json.attribute("peak_activation_bytes", dr.peakActivations);
          if (dr.capacity != std::numeric_limits<uint64_t>::max())
            json.attribute("capacity_bytes", (int64_t)dr.capacity);
          json.attribute("exposed_copy_s", dr.exposedCopyTime);
          json.attribute("h2d_busy_s", dr.h2dBusy);
          json.attribute("d2h_busy_s", dr.d2hBusy);
        });
      }
    });
    json.attributeArray("links", [&] {
      for (const LinkSimReport &link : links)
        json.object([&] {
          json.attribute("from", (int64_t)link.from);
          json.attribute("to", (int64_t)link.to);
          json.attribute("busy_s", link.busyTime);
          json.attribute("utilisation", link.utilisation);
          json.attribute("bytes", (int64_t)link.bytes);
        });
    });
  });
}

void SimulationReport::writeChromeTrace(llvm::raw_ostream &os) const {
  llvm::json::OStream json(os);
  json.object([&] {
    json.attribute("displayTimeUnit", "ms");
    json.attributeArray("traceEvents",
                        [&] { writeTraceEvents(json, 0, kind); });
  });
  os << "\n";
}

void SimulationReport::writeTraceEvents(llvm::json::OStream &json, unsigned pid,
                                        StringRef processName) const {
  json.object([&] {
    json.attribute("name", "process_name");
    json.attribute("ph", "M");
    json.attribute("pid", (int64_t)pid);
    json.attributeObject("args", [&] { json.attribute("name", processName); });
  });
  for (unsigned t = 0; t < trackNames.size(); ++t)
    json.object([&] {
      json.attribute("name", "thread_name");
      json.attribute("ph", "M");
      json.attribute("pid", (int64_t)pid);
      json.attribute("tid", (int64_t)t);
      json.attributeObject("args",
                           [&] { json.attribute("name", trackNames[t]); });
    });
  for (const TraceEvent &event : trace)
    json.object([&] {
      json.attribute("name", event.name);
      json.attribute("cat", event.category);
      json.attribute("ph", "X");
      json.attribute("pid", (int64_t)pid);
      json.attribute("tid", (int64_t)event.track);
      json.attribute("ts", event.start * 1e6);
      json.attribute("dur", event.duration * 1e6);
    });
}

void SimulationReport::print(llvm::raw_ostream &os) const {
  os << "schedule " << kind << ": " << microbatches << " micro-batches, "
     << steps << " step(s)\n";
  os << llvm::format("  step time: %.6g s, throughput: %.6g samples/s\n",
                     stepTime, throughput);
  for (unsigned d = 0; d < devices.size(); ++d) {
    const DeviceSimReport &dr = devices[d];
    os << llvm::format("  device %u: busy %.6g s, bubble %.4f, peak memory "
                       "%lld bytes (activations %lld), exposed copy %.6g s\n",
                       d, dr.busyTime, dr.bubbleFraction,
                       (long long)dr.peakMemory, (long long)dr.peakActivations,
                       dr.exposedCopyTime);
  }
  for (const LinkSimReport &link : links)
    os << llvm::format("  link %u->%u: %llu bytes, utilisation %.4f\n",
                       link.from, link.to, (unsigned long long)link.bytes,
                       link.utilisation);
  if (hostOptimizerBusy > 0)
    os << llvm::format("  host optimizer busy %.6g s\n", hostOptimizerBusy);
}
