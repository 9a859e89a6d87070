//===- Problem.cpp - The partitioning problem model -----------------------===//

#include "pipe/Partitioning/Problem.h"

#include "pipe/Scheduling/Pipeline.h"
#include "pipe/Scheduling/ScheduleGenerator.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <queue>

using namespace mlir::pipe;
using namespace mlir::pipe::partitioning;
using llvm::createStringError;
using llvm::inconvertibleErrorCode;

//===----------------------------------------------------------------------===//
// BlockGraph
//===----------------------------------------------------------------------===//

unsigned BlockGraph::addParam(llvm::StringRef name, uint64_t bytes,
                              bool trainable) {
  finalized = false;
  params.push_back(ParamInfo{name.str(), bytes, trainable});
  return params.size() - 1;
}

unsigned BlockGraph::addNode(BlockNode node) {
  finalized = false;
  nodes.push_back(std::move(node));
  return nodes.size() - 1;
}

unsigned BlockGraph::addValue(unsigned producer, uint64_t bytes) {
  finalized = false;
  BlockValue value;
  value.producer = producer;
  value.bytes = bytes;
  values.push_back(std::move(value));
  return values.size() - 1;
}

void BlockGraph::addUse(unsigned value, unsigned consumer) {
  finalized = false;
  values[value].consumers.push_back(consumer);
}

unsigned BlockGraph::addEdge(unsigned src, unsigned dst, uint64_t bytes) {
  unsigned value = addValue(src, bytes);
  addUse(value, dst);
  return value;
}

llvm::Error BlockGraph::finalize() {
  unsigned n = nodes.size();
  for (auto [i, node] : llvm::enumerate(nodes)) {
    for (unsigned p : node.params)
      if (p >= params.size())
        return createStringError(
            inconvertibleErrorCode(),
            llvm::formatv("block '{0}' reads parameter #{1}, but there are "
                          "only {2}",
                          node.name, p, params.size()));
    // A block reading the same parameter twice holds it once.
    llvm::sort(node.params);
    node.params.erase(llvm::unique(node.params), node.params.end());
    if (node.forwardFlops < 0 || node.backwardInputFlops < 0 ||
        node.backwardWeightFlops < 0 || node.backwardFlops < 0 ||
        node.forwardSeconds < 0 || node.backwardSeconds < 0 ||
        !std::isfinite(node.forwardFlops) ||
        !std::isfinite(node.backwardInputFlops) ||
        !std::isfinite(node.backwardWeightFlops) ||
        !std::isfinite(node.backwardFlops))
      return createStringError(
          inconvertibleErrorCode(),
          llvm::formatv("block '{0}' has a negative or non-finite cost",
                        node.name));
  }
  succs.assign(n, {});
  preds.assign(n, {});
  inputs.assign(n, {});
  outputs.assign(n, {});
  for (auto [v, value] : llvm::enumerate(values)) {
    if (value.producer >= n)
      return createStringError(
          inconvertibleErrorCode(),
          llvm::formatv("value #{0} has producer #{1}, but there are only {2} "
                        "blocks",
                        v, value.producer, n));
    llvm::sort(value.consumers);
    value.consumers.erase(llvm::unique(value.consumers), value.consumers.end());
    outputs[value.producer].push_back(v);
    for (unsigned c : value.consumers) {
      if (c >= n)
        return createStringError(
            inconvertibleErrorCode(),
            llvm::formatv("value #{0} is read by block #{1}, but there are "
                          "only {2} blocks",
                          v, c, n));
      if (c == value.producer)
        return createStringError(
            inconvertibleErrorCode(),
            llvm::formatv("block '{0}' reads its own result", nodes[c].name));
      inputs[c].push_back(v);
      succs[value.producer].push_back(c);
      preds[c].push_back(value.producer);
    }
  }
  for (unsigned i = 0; i < n; ++i) {
    llvm::sort(succs[i]);
    succs[i].erase(llvm::unique(succs[i]), succs[i].end());
    llvm::sort(preds[i]);
    preds[i].erase(llvm::unique(preds[i]), preds[i].end());
  }

  // Kahn's algorithm, smallest index first, so that graphs built in program
  // order keep that order.
  std::vector<unsigned> indegree(n);
  for (unsigned i = 0; i < n; ++i)
    indegree[i] = preds[i].size();
  std::priority_queue<unsigned, std::vector<unsigned>, std::greater<unsigned>>
      ready;
  for (unsigned i = 0; i < n; ++i)
    if (indegree[i] == 0)
      ready.push(i);
  topoOrder.clear();
  topoOrder.reserve(n);
  while (!ready.empty()) {
    unsigned i = ready.top();
    ready.pop();
    topoOrder.push_back(i);
    for (unsigned s : succs[i])
      if (--indegree[s] == 0)
        ready.push(s);
  }
  if (topoOrder.size() != n) {
    for (unsigned i = 0; i < n; ++i)
      if (indegree[i] != 0)
        return createStringError(
            inconvertibleErrorCode(),
            llvm::formatv("the block graph has a cycle through block '{0}'",
                          nodes[i].name));
  }
  topoPos.assign(n, 0);
  for (unsigned i = 0; i < n; ++i)
    topoPos[topoOrder[i]] = i;
  finalized = true;
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// ClusterInfo
//===----------------------------------------------------------------------===//

double ClusterInfo::getTransferSeconds(unsigned from, unsigned to,
                                       double bytes) const {
  if (from == to || bytes <= 0)
    return 0;
  return getLatency(from, to) + bytes / getBandwidth(from, to);
}

double ClusterInfo::getMeanBandwidth() const {
  double sum = 0;
  unsigned count = 0;
  for (unsigned a = 0; a < size(); ++a)
    for (unsigned b = 0; b < size(); ++b)
      if (a != b) {
        sum += getBandwidth(a, b);
        ++count;
      }
  return count ? sum / count : 0;
}

double ClusterInfo::getMeanLatency() const {
  double sum = 0;
  unsigned count = 0;
  for (unsigned a = 0; a < size(); ++a)
    for (unsigned b = 0; b < size(); ++b)
      if (a != b) {
        sum += getLatency(a, b);
        ++count;
      }
  return count ? sum / count : 0;
}

bool ClusterInfo::isHomogeneous() const {
  for (const DeviceInfo &d : devices)
    if (d.memoryBytes != devices[0].memoryBytes ||
        d.reservedBytes != devices[0].reservedBytes ||
        d.flopsPerSecond != devices[0].flopsPerSecond ||
        d.memoryBandwidth != devices[0].memoryBandwidth ||
        d.getBackwardFlops() != devices[0].getBackwardFlops() ||
        d.getBackwardBandwidth() != devices[0].getBackwardBandwidth())
      return false;
  double bw = -1, lat = -1;
  for (unsigned a = 0; a < size(); ++a)
    for (unsigned b = 0; b < size(); ++b) {
      if (a == b)
        continue;
      if (bw < 0) {
        bw = getBandwidth(a, b);
        lat = getLatency(a, b);
      } else if (bw != getBandwidth(a, b) || lat != getLatency(a, b)) {
        return false;
      }
    }
  return true;
}

ClusterInfo ClusterInfo::uniform(unsigned n, uint64_t memoryBytes,
                                 double flopsPerSecond, double bandwidth,
                                 double latency) {
  ClusterInfo cluster;
  for (unsigned i = 0; i < n; ++i)
    cluster.devices.push_back(DeviceInfo{("dev" + llvm::Twine(i)).str(),
                                         memoryBytes, 0, flopsPerSecond});
  cluster.bandwidth.assign(n * n, bandwidth);
  cluster.latency.assign(n * n, latency);
  return cluster;
}

llvm::Error ClusterInfo::verify() const {
  unsigned n = size();
  if (n == 0)
    return createStringError(inconvertibleErrorCode(),
                             "the cluster has no devices");
  if (bandwidth.size() != n * n || latency.size() != n * n)
    return createStringError(
        inconvertibleErrorCode(),
        llvm::formatv("the cluster's link tables must be {0}x{0}", n));
  for (auto [i, d] : llvm::enumerate(devices))
    if (!(d.flopsPerSecond > 0) || !std::isfinite(d.flopsPerSecond))
      return createStringError(
          inconvertibleErrorCode(),
          llvm::formatv("device {0} ('{1}') has no positive FLOP rate", i,
                        d.name));
  for (unsigned a = 0; a < n; ++a)
    for (unsigned b = 0; b < n; ++b)
      if (a != b && (!(getBandwidth(a, b) > 0) || getLatency(a, b) < 0))
        return createStringError(
            inconvertibleErrorCode(),
            llvm::formatv("the link from device {0} to device {1} needs a "
                          "positive bandwidth and a non-negative latency",
                          a, b));
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// TrainingMemory and ScheduleModel
//===----------------------------------------------------------------------===//

TrainingMemory TrainingMemory::sgd() { return {"sgd", 1, 1, 0}; }
TrainingMemory TrainingMemory::momentum() { return {"momentum", 1, 1, 1}; }
TrainingMemory TrainingMemory::adamw() { return {"adamw", 1, 1, 2}; }
TrainingMemory TrainingMemory::adafactor() { return {"adafactor", 1, 1, 0.02}; }

std::optional<TrainingMemory> TrainingMemory::lookup(llvm::StringRef name) {
  if (name == "sgd")
    return sgd();
  if (name == "momentum")
    return momentum();
  if (name == "adamw" || name == "adam")
    return adamw();
  if (name == "adafactor")
    return adafactor();
  return std::nullopt;
}

llvm::StringRef TrainingMemory::getNames() {
  return "sgd, momentum, adamw, adafactor";
}

unsigned ScheduleModel::getActivationsInFlight(unsigned height,
                                               unsigned depth) const {
  height = std::max(height, 1u);
  switch (family) {
  case ScheduleFamily::GPipe:
  case ScheduleFamily::LayerToLayer:
    return microbatches;
  case ScheduleFamily::OneFOneB:
    return std::min(microbatches, height);
  case ScheduleFamily::Async:
    return height;
  case ScheduleFamily::ZeroBubble:
    return std::min(microbatches, std::max(height, depth));
  case ScheduleFamily::Interleaved:
    return std::min(microbatches, 2 * height - 1);
  }
  return microbatches;
}

unsigned ScheduleModel::getWeightVersions(unsigned height) const {
  if (family == ScheduleFamily::Async && weightStashing)
    return std::max(height, 1u);
  return 1;
}

namespace {
/// The synchronous kinds whose traits do not decide the closed form: the
/// one place the partitioner's model names schedule kinds
/// (docs/partitioning.md gives each rule's source). Asynchronous and
/// parameter-server kinds follow from their traits alone.
struct SynchronousKindRule {
  llvm::StringLiteral kind;
  ScheduleFamily family;
};
constexpr SynchronousKindRule kSynchronousKindRules[] = {
    {"gpipe", ScheduleFamily::GPipe},
    {"1f1b", ScheduleFamily::OneFOneB},
    {"interleaved-1f1b", ScheduleFamily::Interleaved},
    {"zb-h1", ScheduleFamily::ZeroBubble},
    // FTPipe's mixed-pipe orders work deepest stage first and bounds each
    // stage's micro-batches in flight by its height, as 1F1B does.
    {"mixed", ScheduleFamily::OneFOneB},
    // Breadth-first over micro-batches: a stage runs every micro-batch's
    // forward before its backwards, as GPipe does.
    {"looped-bfs", ScheduleFamily::GPipe},
};
} // namespace

llvm::Expected<ScheduleModel>
ScheduleModel::forSchedule(llvm::StringRef kind, unsigned microbatches,
                           bool weightStashing, bool recompute) {
  ScheduleModel model;
  model.microbatches = microbatches;
  model.recompute = recompute;
  // The aliases name a family rather than a registered kind.
  llvm::StringRef registered = kind;
  if (!getScheduleTraits(kind))
    if (std::optional<ScheduleFamily> family = parseFamily(kind))
      registered = getFamilyName(*family);
  std::optional<ScheduleTraits> traits = getScheduleTraits(registered);
  if (!traits)
    return createStringError(
        inconvertibleErrorCode(),
        llvm::formatv("unknown schedule '{0}' (known: {1})", kind,
                      llvm::join(getScheduleGeneratorNames(), ", ")));
  model.kind = registered.str();
  model.weightStashing = weightStashing && traits->keepsWeightVersions;
  if (traits->parameterServer) {
    model.family = ScheduleFamily::LayerToLayer;
  } else if (traits->asynchronous) {
    model.family = ScheduleFamily::Async;
  } else {
    model.family = ScheduleFamily::GPipe;
    for (const SynchronousKindRule &rule : kSynchronousKindRules)
      if (rule.kind == registered)
        model.family = rule.family;
  }
  return model;
}

std::optional<ScheduleFamily> ScheduleModel::parseFamily(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<ScheduleFamily>>(name)
      .Case("gpipe", ScheduleFamily::GPipe)
      .Cases({"1f1b", "pipedream-flush"}, ScheduleFamily::OneFOneB)
      .Cases({"pipedream-async", "async"}, ScheduleFamily::Async)
      .Default(std::nullopt);
}

llvm::StringRef ScheduleModel::getFamilyName(ScheduleFamily family) {
  switch (family) {
  case ScheduleFamily::GPipe:
    return "gpipe";
  case ScheduleFamily::OneFOneB:
    return "1f1b";
  case ScheduleFamily::Async:
    return "pipedream-async";
  case ScheduleFamily::ZeroBubble:
    return "zb-h1";
  case ScheduleFamily::Interleaved:
    return "interleaved-1f1b";
  case ScheduleFamily::LayerToLayer:
    return "l2l";
  }
  return "gpipe";
}

//===----------------------------------------------------------------------===//
// PartitionProblem
//===----------------------------------------------------------------------===//

double PartitionProblem::getForwardSeconds(unsigned node,
                                           unsigned device) const {
  const BlockNode &n = graph->getNode(node);
  if (n.forwardSeconds > 0)
    return n.forwardSeconds;
  const DeviceInfo &d = cluster.devices[device];
  return getAnalyticPartTime(n.forwardFlops, n.bytesAccessed, d.flopsPerSecond,
                             d.memoryBandwidth);
}

/// The node's backward times on `device` (getBackwardTimes).
static BackwardTimes backwardTimes(const BlockNode &n,
                                   const DeviceInfo &device) {
  return getBackwardTimes(n.backwardSeconds, n.backwardInputSeconds,
                          n.backwardWeightSeconds, n.backwardInputFlops,
                          n.backwardWeightFlops, n.backwardFlops,
                          n.bytesAccessed, device.getBackwardFlops(),
                          device.getBackwardBandwidth());
}

double PartitionProblem::getBackwardSeconds(unsigned node,
                                            unsigned device) const {
  return backwardTimes(graph->getNode(node), cluster.devices[device]).fused;
}

double PartitionProblem::getBackwardInputSeconds(unsigned node,
                                                 unsigned device) const {
  return backwardTimes(graph->getNode(node), cluster.devices[device]).input;
}

double PartitionProblem::getBackwardWeightSeconds(unsigned node,
                                                  unsigned device) const {
  return backwardTimes(graph->getNode(node), cluster.devices[device]).weight;
}

llvm::Error PartitionProblem::verify() const {
  if (!graph)
    return createStringError(inconvertibleErrorCode(),
                             "the partition problem has no block graph");
  if (!graph->isFinalized())
    return createStringError(inconvertibleErrorCode(),
                             "the block graph was not finalized");
  if (llvm::Error err = cluster.verify())
    return err;
  if (schedule.microbatches == 0)
    return createStringError(inconvertibleErrorCode(),
                             "the schedule needs at least one micro-batch");
  if (memory.weightCopies < 0 || memory.gradientCopies < 0 ||
      memory.stateCopies < 0)
    return createStringError(inconvertibleErrorCode(),
                             "memory multipliers must be non-negative");
  return llvm::Error::success();
}
