//===- Pipeline.cpp - Abstract pipeline description -----------------------===//

#include "pipe/Scheduling/Pipeline.h"

#include "pipe/Analysis/DeviceModel.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::pipe;

SmallVector<unsigned> Pipeline::getProducers(unsigned stage) const {
  SmallVector<unsigned> result;
  for (const PipelineEdge &edge : edges)
    if (edge.consumer == stage)
      result.push_back(edge.producer);
  return result;
}

SmallVector<unsigned> Pipeline::getConsumers(unsigned stage) const {
  SmallVector<unsigned> result;
  for (const PipelineEdge &edge : edges)
    if (edge.producer == stage)
      result.push_back(edge.consumer);
  return result;
}

const PipelineEdge *Pipeline::findEdge(unsigned producer,
                                       unsigned consumer) const {
  for (const PipelineEdge &edge : edges)
    if (edge.producer == producer && edge.consumer == consumer)
      return &edge;
  return nullptr;
}

SmallVector<unsigned> Pipeline::getStagesOnDevice(unsigned device) const {
  SmallVector<unsigned> result;
  for (unsigned s = 0; s < stages.size(); ++s)
    if (stages[s].device == device)
      result.push_back(s);
  return result;
}

SmallVector<unsigned> Pipeline::getTopologicalOrder() const {
  SmallVector<unsigned> inDegree(stages.size(), 0);
  for (const PipelineEdge &edge : edges)
    ++inDegree[edge.consumer];
  SmallVector<unsigned> order;
  for (unsigned s = 0; s < stages.size(); ++s)
    if (inDegree[s] == 0)
      order.push_back(s);
  for (unsigned head = 0; head < order.size(); ++head)
    for (const PipelineEdge &edge : edges)
      if (edge.producer == order[head] && --inDegree[edge.consumer] == 0)
        order.push_back(edge.consumer);
  return order;
}

SmallVector<unsigned> Pipeline::getDepths() const {
  SmallVector<unsigned> depth(stages.size(), 0);
  for (unsigned s : getTopologicalOrder())
    for (unsigned c : getConsumers(s))
      depth[c] = std::max(depth[c], depth[s] + 1);
  return depth;
}

SmallVector<unsigned> Pipeline::getHeights() const {
  SmallVector<unsigned> height(stages.size(), 1);
  SmallVector<unsigned> order = getTopologicalOrder();
  for (unsigned s : llvm::reverse(order))
    for (unsigned c : getConsumers(s))
      height[s] = std::max(height[s], height[c] + 1);
  return height;
}

SmallVector<unsigned> Pipeline::getSharedParamsOf(unsigned stage) const {
  SmallVector<unsigned> result;
  for (unsigned i = 0; i < sharedParams.size(); ++i)
    if (llvm::is_contained(sharedParams[i].stages, stage))
      result.push_back(i);
  return result;
}

SmallVector<unsigned>
Pipeline::getStagesSharingParamsWith(unsigned stage) const {
  SmallVector<unsigned> result = {stage};
  for (unsigned p : getSharedParamsOf(stage))
    llvm::append_range(result, sharedParams[p].stages);
  llvm::sort(result);
  result.erase(llvm::unique(result), result.end());
  return result;
}

LogicalResult Pipeline::validate(ScheduleDiagFn diag) const {
  if (stages.empty()) {
    diag("the pipeline has no stages");
    return failure();
  }
  if (numDevices == 0) {
    diag("the pipeline has no devices");
    return failure();
  }
  for (const PipelineStage &stage : stages)
    if (stage.device >= numDevices) {
      diag("stage '" + stage.name + "' is on device " +
           llvm::Twine(stage.device) + ", but there are only " +
           llvm::Twine(numDevices) + " devices");
      return failure();
    }
  for (const PipelineEdge &edge : edges)
    if (edge.producer >= stages.size() || edge.consumer >= stages.size() ||
        edge.producer == edge.consumer) {
      diag("an edge of the stage graph names stage " +
           llvm::Twine(edge.producer) + " -> " + llvm::Twine(edge.consumer) +
           ", which is not a pair of distinct stages");
      return failure();
    }
  if (getTopologicalOrder().size() != stages.size()) {
    diag("the stage graph has a cycle; stages cannot be pipelined");
    return failure();
  }
  for (const SharedParam &param : sharedParams)
    for (unsigned s : param.stages)
      if (s >= stages.size()) {
        diag("shared parameter '" + param.name + "' names stage " +
             llvm::Twine(s) + ", which does not exist");
        return failure();
      }
  return success();
}

Pipeline Pipeline::makeChain(unsigned numStages, unsigned numDevices,
                             double forwardTime, double backwardInputTime,
                             double backwardWeightTime, uint64_t savedBytes,
                             uint64_t edgeBytes, uint64_t paramBytes) {
  Pipeline pipeline;
  pipeline.numDevices = numDevices;
  for (unsigned s = 0; s < numStages; ++s) {
    PipelineStage stage;
    stage.name = "s" + std::to_string(s);
    stage.device = s % numDevices;
    stage.forwardTime = forwardTime;
    stage.backwardInputTime = backwardInputTime;
    stage.backwardWeightTime = backwardWeightTime;
    stage.savedBytes = savedBytes;
    stage.inputBytes = edgeBytes;
    stage.outputBytes = edgeBytes;
    stage.paramBytes = paramBytes;
    stage.paramCount = paramBytes / 2;
    pipeline.stages.push_back(stage);
    if (s > 0)
      pipeline.edges.push_back({s - 1, s, edgeBytes});
  }
  return pipeline;
}

//===----------------------------------------------------------------------===//
// MachineModel
//===----------------------------------------------------------------------===//

const MachineModel::Link &MachineModel::getLink(unsigned from,
                                                unsigned to) const {
  static const Link self;
  if (from == to)
    return self;
  auto it = links.find({from, to});
  if (it != links.end())
    return it->second;
  if (devicesPerHost && from / devicesPerHost != to / devicesPerHost)
    return interHostLink;
  return defaultLink;
}

double MachineModel::getAllReduceTime(ArrayRef<unsigned> members,
                                      double bytes) const {
  double k = members.size();
  if (members.size() < 2)
    return 0;
  double share = 2 * (k - 1) / k * bytes, slowest = 0;
  for (unsigned i = 0; i < members.size(); ++i)
    slowest = std::max(
        slowest,
        getLink(members[i], members[(i + 1) % members.size()]).getTime(share));
  return slowest;
}

double MachineModel::getReplicaAllReduceTime(unsigned device,
                                             unsigned devices,
                                             unsigned replicas,
                                             double bytes) const {
  SmallVector<unsigned> ring;
  for (unsigned r = 0; r < replicas; ++r)
    ring.push_back(r * devices + device);
  return getAllReduceTime(ring, bytes);
}

const MachineModel::Device &MachineModel::getDevice(unsigned index) const {
  static const Device unknown;
  if (index < devices.size())
    return devices[index];
  return devices.empty() ? unknown : devices.front();
}

MachineModel MachineModel::makeIdeal(unsigned numDevices) {
  MachineModel machine;
  machine.devices.resize(numDevices);
  machine.updateBytesPerParam = 0;
  return machine;
}

MachineModel MachineModel::fromCluster(const ClusterModel &cluster,
                                       unsigned numDevices,
                                       llvm::StringRef dtype) {
  // Reads the model's fields directly so that only the data layout of
  // DeviceModel.h is relied upon.
  auto flopsOf = [&](const DeviceSpec &spec) {
    for (const llvm::StringMap<double> *rates :
         {&spec.achievedFlops, &spec.peakFlops}) {
      auto it = rates->find(dtype);
      if (it != rates->end() && it->second > 0)
        return it->second;
    }
    for (const llvm::StringMap<double> *rates :
         {&spec.achievedFlops, &spec.peakFlops}) {
      auto it = rates->find("f32");
      if (it != rates->end() && it->second > 0)
        return it->second;
    }
    return 1e12;
  };
  MachineModel machine;
  machine.name = cluster.name;
  unsigned count = std::max<unsigned>(numDevices, 1);
  for (unsigned i = 0; i < count; ++i) {
    Device device;
    if (!cluster.devices.empty()) {
      const DeviceSpec &spec =
          cluster.devices[i < cluster.devices.size() ? i : 0];
      device.memoryBytes = spec.memoryBytes;
      device.flops = flopsOf(spec);
      device.memoryBandwidth = spec.memoryBandwidth;
      device.backwardFlops = spec.backwardFlops;
      device.backwardMemoryBandwidth = spec.backwardMemoryBandwidth;
    }
    machine.devices.push_back(device);
  }
  machine.defaultLink = {cluster.defaultLink.bandwidth,
                         cluster.defaultLink.latency};
  for (const auto &[pair, link] : cluster.links)
    machine.links[pair] = {link.bandwidth, link.latency};
  machine.devicesPerHost = cluster.devicesPerHost;
  machine.interHostLink = {cluster.interHostLink.bandwidth,
                           cluster.interHostLink.latency};
  machine.hostToDevice = {cluster.host.h2dPinned, 0};
  machine.deviceToHost = {cluster.host.d2hPinned, 0};
  machine.optimizerParamsPerSecond = cluster.host.optimizerParamsPerSecond;
  machine.runOverhead = cluster.host.runOverhead;
  return machine;
}

FailureOr<MachineModel> MachineModel::lookup(StringRef presetNameOrPath,
                                             unsigned numDevices,
                                             ScheduleDiagFn diag) {
  llvm::Expected<ClusterModel> cluster = ClusterModel::lookup(presetNameOrPath);
  if (!cluster) {
    diag("cannot use device model '" + presetNameOrPath +
         "': " + llvm::toString(cluster.takeError()));
    return failure();
  }
  return fromCluster(*cluster, numDevices);
}
