//===- Evaluation.cpp - The partitioning objective ------------------------===//

#include "pipe/Partitioning/Evaluation.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace mlir::pipe::partitioning;

//===----------------------------------------------------------------------===//
// Partition
//===----------------------------------------------------------------------===//

std::vector<unsigned> Partition::getDeviceOfNodes() const {
  std::vector<unsigned> result(stageOf.size());
  for (auto [i, s] : llvm::enumerate(stageOf))
    result[i] = deviceOf[s];
  return result;
}

unsigned Partition::getNumUsedDevices() const {
  llvm::SmallVector<unsigned> used;
  std::vector<bool> hasNode(deviceOf.size());
  for (unsigned s : stageOf)
    hasNode[s] = true;
  for (auto [s, d] : llvm::enumerate(deviceOf))
    if (hasNode[s])
      used.push_back(d);
  llvm::sort(used);
  return std::unique(used.begin(), used.end()) - used.begin();
}

void Partition::canonicalize(const BlockGraph &graph) {
  unsigned numStages = deviceOf.size();
  constexpr unsigned none = std::numeric_limits<unsigned>::max();
  std::vector<unsigned> first(numStages, none);
  for (unsigned node : graph.getTopologicalOrder()) {
    unsigned s = stageOf[node];
    if (first[s] == none)
      first[s] = graph.getTopologicalPosition(node);
  }
  std::vector<unsigned> order;
  for (unsigned s = 0; s < numStages; ++s)
    if (first[s] != none)
      order.push_back(s);
  llvm::sort(order,
             [&](unsigned a, unsigned b) { return first[a] < first[b]; });
  std::vector<unsigned> newIndex(numStages, none);
  std::vector<unsigned> newDevice;
  for (unsigned s : order) {
    newIndex[s] = newDevice.size();
    newDevice.push_back(deviceOf[s]);
  }
  for (unsigned &s : stageOf)
    s = newIndex[s];
  deviceOf = std::move(newDevice);
}

llvm::Error Partition::verify(const BlockGraph &graph,
                              unsigned numDevices) const {
  if (stageOf.size() != graph.getNumNodes())
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("the partition places {0} blocks, the graph has {1}",
                      stageOf.size(), graph.getNumNodes()));
  for (auto [i, s] : llvm::enumerate(stageOf))
    if (s >= deviceOf.size())
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          llvm::formatv("block '{0}' is in stage {1}, but there are {2} "
                        "stages",
                        graph.getNode(i).name, s, deviceOf.size()));
  for (auto [s, d] : llvm::enumerate(deviceOf))
    if (d >= numDevices)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          llvm::formatv("stage {0} is on device {1}, but there are {2} "
                        "devices",
                        s, d, numDevices));
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// evaluate
//===----------------------------------------------------------------------===//

namespace {
/// A stage graph edge with its bytes and transfer time per micro-batch.
struct Edge {
  unsigned src, dst;
  uint64_t bytes;
  double seconds;
};

/// Evaluation::fitsSchedule: the placement rules of the schedules whose
/// generators accept only some placements.
bool fitsSchedule(const ScheduleModel &schedule, const Partition &partition,
                  const Evaluation &eval, llvm::ArrayRef<Edge> edges) {
  if (schedule.family != ScheduleFamily::Interleaved &&
      schedule.family != ScheduleFamily::LayerToLayer)
    return true;
  // Positions among the non-empty stages, which is what the schedule sees.
  std::vector<unsigned> position(partition.getNumStages());
  unsigned numUsed = 0;
  for (auto [s, stage] : llvm::enumerate(eval.stages))
    if (stage.numNodes)
      position[s] = numUsed++;
  switch (schedule.family) {
  case ScheduleFamily::Interleaved: {
    unsigned p = eval.devices.size();
    if (numUsed % p != 0)
      return false;
    for (auto [s, stage] : llvm::enumerate(eval.stages))
      if (stage.numNodes && stage.device != position[s] % p)
        return false;
    return llvm::all_of(edges, [&](const Edge &e) {
      return position[e.src] < position[e.dst];
    });
  }
  case ScheduleFamily::LayerToLayer:
    return llvm::all_of(eval.stages, [](const StageReport &stage) {
      return !stage.numNodes || stage.device == 0;
    });
  default:
    return true;
  }
}
} // namespace

std::optional<Partition> mlir::pipe::partitioning::getPartitionFixedBySchedule(
    const PartitionProblem &problem) {
  if (!problem.schedule.hasParameterServer())
    return std::nullopt;
  const BlockGraph &graph = *problem.graph;
  Partition partition;
  partition.stageOf.resize(graph.getNumNodes());
  for (unsigned node = 0; node < graph.getNumNodes(); ++node)
    partition.stageOf[node] = graph.getTopologicalPosition(node);
  partition.deviceOf.assign(graph.getNumNodes(), 0);
  return partition;
}

Evaluation mlir::pipe::partitioning::evaluate(const PartitionProblem &problem,
                                              const Partition &partition,
                                              bool useStepTimeFn) {
  const BlockGraph &graph = *problem.graph;
  const ClusterInfo &cluster = problem.cluster;
  const ScheduleModel &schedule = problem.schedule;
  unsigned numNodes = graph.getNumNodes();
  unsigned numStages = partition.getNumStages();
  unsigned numDevices = cluster.size();
  unsigned m = schedule.microbatches;

  // Only zb-h1's closed form moves weight gradients into the drain.
  bool drain = schedule.family == ScheduleFamily::ZeroBubble;

  Evaluation eval;
  eval.stages.resize(numStages);
  eval.devices.resize(numDevices);
  for (unsigned s = 0; s < numStages; ++s)
    eval.stages[s].device = partition.deviceOf[s];

  // Compute and saved activations per stage.
  for (unsigned node = 0; node < numNodes; ++node) {
    unsigned s = partition.stageOf[node];
    StageReport &stage = eval.stages[s];
    stage.numNodes++;
    stage.forwardSeconds += problem.getForwardSeconds(node, stage.device);
    // A split-backward schedule runs the two parts, which may have been
    // measured apart from (and cost more than) the fused backward.
    if (drain) {
      double weight = problem.getBackwardWeightSeconds(node, stage.device);
      stage.backwardSeconds +=
          problem.getBackwardInputSeconds(node, stage.device) + weight;
      stage.backwardWeightSeconds += weight;
    } else {
      stage.backwardSeconds += problem.getBackwardSeconds(node, stage.device);
    }
    stage.savedBytes += graph.getNode(node).savedBytes;
  }

  // Distinct parameters per stage and per device.
  unsigned numParams = graph.getNumParams();
  std::vector<llvm::SmallVector<unsigned, 2>> paramStages(numParams),
      paramDevices(numParams);
  for (unsigned node = 0; node < numNodes; ++node) {
    unsigned s = partition.stageOf[node];
    unsigned d = partition.deviceOf[s];
    for (unsigned p : graph.getNode(node).params) {
      if (!llvm::is_contained(paramStages[p], s))
        paramStages[p].push_back(s);
      if (!llvm::is_contained(paramDevices[p], d))
        paramDevices[p].push_back(d);
    }
  }
  std::vector<uint64_t> stageTrainableBytes(numStages);
  for (unsigned p = 0; p < numParams; ++p) {
    const ParamInfo &param = graph.getParam(p);
    for (unsigned s : paramStages[p]) {
      eval.stages[s].paramBytes += param.bytes;
      if (param.trainable)
        stageTrainableBytes[s] += param.bytes;
    }
  }

  // Stage edges: each value crosses once to every other stage reading it.
  llvm::DenseMap<uint64_t, uint64_t> pairBytes;
  for (const BlockValue &value : graph.getValues()) {
    unsigned src = partition.stageOf[value.producer];
    llvm::SmallVector<unsigned, 4> seen;
    for (unsigned c : value.consumers) {
      unsigned dst = partition.stageOf[c];
      if (dst == src || llvm::is_contained(seen, dst))
        continue;
      seen.push_back(dst);
      pairBytes[uint64_t(src) * numStages + dst] += value.bytes;
    }
  }
  std::vector<Edge> edges;
  edges.reserve(pairBytes.size());
  for (auto &[key, bytes] : pairBytes) {
    unsigned src = key / numStages, dst = key % numStages;
    double seconds = cluster.getTransferSeconds(partition.deviceOf[src],
                                                partition.deviceOf[dst], bytes);
    edges.push_back({src, dst, bytes, seconds});
  }
  llvm::sort(edges, [](const Edge &a, const Edge &b) {
    return std::make_pair(a.src, a.dst) < std::make_pair(b.src, b.dst);
  });
  for (const Edge &e : edges) {
    eval.stageEdges.push_back({e.src, e.dst});
    eval.stageEdgeBytes.push_back(e.bytes);
  }

  // Topological order of the non-empty stages (Kahn).
  std::vector<llvm::SmallVector<unsigned, 4>> outEdges(numStages),
      inEdges(numStages);
  for (auto [i, e] : llvm::enumerate(edges)) {
    outEdges[e.src].push_back(i);
    inEdges[e.dst].push_back(i);
  }
  std::vector<unsigned> indegree(numStages), order;
  for (unsigned s = 0; s < numStages; ++s) {
    indegree[s] = inEdges[s].size();
    if (indegree[s] == 0 && eval.stages[s].numNodes)
      order.push_back(s);
  }
  for (unsigned i = 0; i < order.size(); ++i)
    for (unsigned e : outEdges[order[i]])
      if (--indegree[edges[e].dst] == 0)
        order.push_back(edges[e].dst);
  unsigned nonEmpty = llvm::count_if(
      eval.stages, [](const StageReport &s) { return s.numNodes > 0; });
  eval.acyclic = order.size() == nonEmpty;

  // Heights (stages on the longest path to a sink). On a cyclic graph the
  // stages on the cycle keep height 1; the evaluation is infeasible anyway.
  for (StageReport &stage : eval.stages)
    stage.height = 1;
  for (unsigned s : llvm::reverse(order))
    for (unsigned e : outEdges[s])
      eval.stages[s].height =
          std::max(eval.stages[s].height, eval.stages[edges[e].dst].height + 1);

  unsigned depth = 0;
  for (const StageReport &stage : eval.stages)
    depth = std::max(depth, stage.height);

  for (const Edge &e : edges)
    eval.stages[e.dst].inputBytes += e.bytes;
  for (StageReport &stage : eval.stages)
    if (stage.numNodes && schedule.recomputes(stage.height)) {
      stage.recomputed = true;
      stage.backwardSeconds += stage.forwardSeconds;
    }

  eval.fitsSchedule = fitsSchedule(schedule, partition, eval, edges);

  // Per-device compute and communication.
  for (const StageReport &stage : eval.stages) {
    if (!stage.numNodes)
      continue;
    DeviceReport &dev = eval.devices[stage.device];
    dev.numStages++;
    dev.forwardSeconds += stage.forwardSeconds;
    dev.backwardSeconds += stage.backwardSeconds;
  }
  for (const Edge &e : edges) {
    unsigned a = partition.deviceOf[e.src], b = partition.deviceOf[e.dst];
    if (a == b)
      continue;
    eval.devices[a].sendSeconds += e.seconds;
    eval.devices[a].sentBytes += e.bytes;
    eval.devices[b].recvSeconds += e.seconds;
    eval.devices[b].receivedBytes += e.bytes;
    eval.commBytesPerMicrobatch += e.bytes;
  }
  for (DeviceReport &dev : eval.devices) {
    double x = std::max(dev.recvSeconds, dev.sendSeconds);
    dev.costSeconds = dev.forwardSeconds + dev.backwardSeconds +
                      std::max(0.0, x - dev.forwardSeconds) +
                      std::max(0.0, x - dev.backwardSeconds);
    eval.bottleneckSeconds = std::max(eval.bottleneckSeconds, dev.costSeconds);
  }

  // Memory.
  double perTrainable = problem.memory.getBytesPerTrainableByte();
  std::vector<double> paramMemory(numDevices);
  // A parameter server keeps every stage's parameters and optimizer state
  // on the host; the device holds weights and gradients of the stage it
  // computes and of the one it loads next, at most the two largest.
  if (schedule.hasParameterServer()) {
    std::vector<llvm::SmallVector<double, 3>> largestStages(numDevices);
    for (unsigned s = 0; s < numStages; ++s) {
      const StageReport &stage = eval.stages[s];
      double bytes = stage.paramBytes * problem.memory.weightCopies +
                     stageTrainableBytes[s] * problem.memory.gradientCopies;
      llvm::SmallVector<double, 3> &largest = largestStages[stage.device];
      largest.push_back(bytes);
      llvm::sort(largest, std::greater<double>());
      if (largest.size() > 2)
        largest.pop_back();
    }
    for (unsigned d = 0; d < numDevices; ++d)
      for (double bytes : largestStages[d])
        paramMemory[d] += bytes;
  }
  for (unsigned p = 0; p < numParams; ++p) {
    const ParamInfo &param = graph.getParam(p);
    double bytes = param.trainable ? param.bytes * perTrainable
                                   : param.bytes * problem.memory.weightCopies;
    for (unsigned d : paramDevices[p]) {
      eval.devices[d].paramBytes += param.bytes;
      if (!schedule.hasParameterServer())
        paramMemory[d] += bytes;
    }
  }
  for (StageReport &stage : eval.stages) {
    if (!stage.numNodes)
      continue;
    stage.activationsInFlight =
        schedule.getActivationsInFlight(stage.height, depth);
    DeviceReport &dev = eval.devices[stage.device];
    dev.activationMemoryBytes +=
        stage.recomputed
            ? stage.inputBytes * stage.activationsInFlight + stage.savedBytes
            : stage.savedBytes * stage.activationsInFlight;
  }
  // Layer by layer, one stage's saved activations are on the device at a
  // time: count the largest once instead of every stage's.
  if (schedule.hasParameterServer()) {
    std::vector<uint64_t> largestSaved(numDevices);
    for (const StageReport &stage : eval.stages) {
      if (!stage.numNodes)
        continue;
      eval.devices[stage.device].activationMemoryBytes -= stage.savedBytes;
      largestSaved[stage.device] =
          std::max(largestSaved[stage.device], stage.savedBytes);
    }
    for (unsigned d = 0; d < numDevices; ++d)
      eval.devices[d].activationMemoryBytes += largestSaved[d];
  }
  for (unsigned s = 0; s < numStages; ++s) {
    unsigned versions = schedule.getWeightVersions(eval.stages[s].height);
    if (eval.stages[s].numNodes && versions > 1)
      paramMemory[eval.stages[s].device] +=
          double(versions - 1) * stageTrainableBytes[s];
  }
  for (unsigned d = 0; d < numDevices; ++d) {
    DeviceReport &dev = eval.devices[d];
    dev.paramMemoryBytes = uint64_t(std::ceil(paramMemory[d]));
    dev.memoryBytes = dev.paramMemoryBytes + dev.activationMemoryBytes;
    dev.capacityBytes = cluster.devices[d].getUsableBytes();
    if (dev.memoryBytes > dev.capacityBytes)
      eval.fitsMemory = false;
    double ratio = dev.capacityBytes
                       ? double(dev.memoryBytes) / dev.capacityBytes
                       : (dev.memoryBytes ? HUGE_VAL : 0.0);
    eval.maxMemoryRatio = std::max(eval.maxMemoryRatio, ratio);
  }

  // Gradient reductions of parameters split across devices.
  for (unsigned p = 0; p < numParams; ++p) {
    const ParamInfo &param = graph.getParam(p);
    unsigned k = paramDevices[p].size();
    if (!param.trainable || k < 2)
      continue;
    double minBandwidth = HUGE_VAL, maxLatency = 0;
    for (unsigned a : paramDevices[p])
      for (unsigned b : paramDevices[p])
        if (a != b) {
          minBandwidth = std::min(minBandwidth, cluster.getBandwidth(a, b));
          maxLatency = std::max(maxLatency, cluster.getLatency(a, b));
        }
    eval.numSplitParams++;
    eval.reductionSeconds += 2.0 * (k - 1) / k * param.bytes / minBandwidth +
                             2.0 * (k - 1) * maxLatency;
    eval.reductionBytes += 2 * uint64_t(k - 1) * param.bytes;
  }

  // The longest path of one micro-batch, forward then back.
  if (eval.acyclic) {
    // `drained`: the same path with each stage's weight gradients moved
    // into the drain (zb-h1), which only the last stage's cannot leave.
    std::vector<double> dist(numStages, 0), drained(drain ? numStages : 0, 0);
    double drainedPath = 0;
    for (unsigned s : order) {
      double best = 0, bestDrained = 0;
      for (unsigned e : inEdges[s]) {
        best = std::max(best, dist[edges[e].src] + 2 * edges[e].seconds);
        if (drain)
          bestDrained = std::max(bestDrained,
                                 drained[edges[e].src] + 2 * edges[e].seconds);
      }
      const StageReport &stage = eval.stages[s];
      dist[s] = best + stage.forwardSeconds + stage.backwardSeconds;
      eval.pathSeconds = std::max(eval.pathSeconds, dist[s]);
      if (drain) {
        drained[s] = bestDrained + stage.forwardSeconds +
                     stage.backwardSeconds - 2 * stage.backwardWeightSeconds;
        drainedPath =
            std::max(drainedPath, drained[s] + 2 * stage.backwardWeightSeconds);
      }
    }
    switch (schedule.family) {
    case ScheduleFamily::Async:
    case ScheduleFamily::LayerToLayer:
      // No fill or drain: steps overlap (async), or one device runs every
      // stage back to back (l2l).
      eval.analyticStepSeconds = m * eval.bottleneckSeconds;
      break;
    case ScheduleFamily::ZeroBubble:
      eval.analyticStepSeconds =
          std::max(m * eval.bottleneckSeconds,
                   (m - 1) * eval.bottleneckSeconds + drainedPath);
      break;
    case ScheduleFamily::Interleaved: {
      // Megatron: v stages per device fill and drain in chunk-sized steps,
      // so the bubble (path - bottleneck) shrinks v times.
      unsigned v = std::max(1u, nonEmpty / numDevices);
      eval.analyticStepSeconds =
          m * eval.bottleneckSeconds +
          (eval.pathSeconds - eval.bottleneckSeconds) / v;
      break;
    }
    default:
      eval.analyticStepSeconds =
          (m - 1) * eval.bottleneckSeconds + eval.pathSeconds;
      break;
    }
    eval.analyticStepSeconds += eval.reductionSeconds;
  } else {
    eval.analyticStepSeconds = HUGE_VAL;
  }
  eval.stepSeconds = eval.analyticStepSeconds;

  if (useStepTimeFn && problem.stepTime && eval.isFeasible()) {
    if (std::optional<double> simulated =
            problem.stepTime(problem, partition, eval)) {
      eval.stepSeconds = *simulated;
      eval.simulated = true;
    }
  }
  return eval;
}

bool mlir::pipe::partitioning::isBetter(const Evaluation &a,
                                        const Evaluation &b,
                                        unsigned microbatches) {
  if (a.isFeasible() != b.isFeasible())
    return a.isFeasible();
  if (!a.isFeasible()) {
    // Among infeasible ones prefer acyclic, then the smaller overshoot, so
    // local search can walk towards feasibility.
    if (a.acyclic != b.acyclic)
      return a.acyclic;
    if (a.maxMemoryRatio != b.maxMemoryRatio)
      return a.maxMemoryRatio < b.maxMemoryRatio;
  }
  if (std::isfinite(a.stepSeconds) != std::isfinite(b.stepSeconds))
    return std::isfinite(a.stepSeconds);
  constexpr double tolerance = 1e-9;
  double scale =
      std::isfinite(a.stepSeconds)
          ? std::max(std::fabs(a.stepSeconds), std::fabs(b.stepSeconds))
          : 0.0;
  if (a.stepSeconds < b.stepSeconds - tolerance * scale)
    return true;
  if (b.stepSeconds < a.stepSeconds - tolerance * scale)
    return false;
  double commA = a.getCommBytesPerStep(microbatches);
  double commB = b.getCommBytesPerStep(microbatches);
  if (commA != commB)
    return commA < commB;
  auto stages = [](const Evaluation &e) {
    return llvm::count_if(e.stages,
                          [](const StageReport &s) { return s.numNodes > 0; });
  };
  return stages(a) < stages(b);
}

unsigned
mlir::pipe::partitioning::rankCandidates(const PartitionProblem &problem,
                                         llvm::ArrayRef<Partition> candidates,
                                         std::vector<Evaluation> &evaluations) {
  evaluations.clear();
  for (const Partition &p : candidates)
    evaluations.push_back(evaluate(problem, p));
  if (problem.stepTime) {
    std::vector<std::optional<double>> simulated;
    bool any = false;
    for (auto [p, e] : llvm::zip(candidates, evaluations)) {
      simulated.push_back(e.isFeasible() ? problem.stepTime(problem, p, e)
                                         : std::nullopt);
      any |= simulated.back().has_value();
    }
    // A feasible candidate the simulator cannot play (its schedule
    // deadlocks) cannot run under that schedule: it ranks last among the
    // feasible ones. When none can be played, all keep analytic figures.
    if (any)
      for (auto [e, t] : llvm::zip(evaluations, simulated)) {
        if (!e.isFeasible())
          continue;
        e.simulated = true;
        e.stepSeconds = t ? *t : HUGE_VAL;
      }
  }
  unsigned best = 0;
  for (unsigned i = 1; i < evaluations.size(); ++i)
    if (isBetter(evaluations[i], evaluations[best],
                 problem.schedule.microbatches))
      best = i;
  return best;
}

std::string mlir::pipe::partitioning::formatBytes(double bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  unsigned unit = 0;
  while (std::fabs(bytes) >= 1024 && unit + 1 < std::size(units)) {
    bytes /= 1024;
    ++unit;
  }
  if (unit == 0)
    return llvm::formatv("{0} B", uint64_t(bytes)).str();
  return llvm::formatv("{0:f2} {1}", bytes, units[unit]).str();
}

std::string mlir::pipe::partitioning::formatSeconds(double seconds) {
  if (!std::isfinite(seconds))
    return "inf";
  if (seconds >= 1)
    return llvm::formatv("{0:f3} s", seconds).str();
  if (seconds >= 1e-3)
    return llvm::formatv("{0:f3} ms", seconds * 1e3).str();
  return llvm::formatv("{0:f3} us", seconds * 1e6).str();
}
