//===- FromDeviceModel.cpp - Clusters from the device model ---------------===//

#include "pipe/Partitioning/FromDeviceModel.h"

#include "pipe/Analysis/DeviceModel.h"

using namespace mlir;
using namespace mlir::pipe;
using namespace mlir::pipe::partitioning;

ClusterInfo mlir::pipe::partitioning::buildClusterInfo(
    const ClusterModel &model, unsigned numDevices, StringRef dtype) {
  ClusterModel sized = model.getNumDevices() == numDevices
                           ? model
                           : model.withDeviceCount(numDevices);
  ClusterInfo cluster;
  for (const DeviceSpec &spec : sized.devices)
    cluster.devices.push_back(
        DeviceInfo{spec.name, spec.memoryBytes, 0, spec.getFlops(dtype),
                   spec.memoryBandwidth, spec.backwardFlops,
                   spec.backwardMemoryBandwidth});
  size_t n = cluster.size();
  cluster.bandwidth.assign(n * n, 0);
  cluster.latency.assign(n * n, 0);
  for (size_t a = 0; a < n; ++a)
    for (size_t b = 0; b < n; ++b) {
      if (a == b)
        continue;
      const LinkSpec &link = sized.getLink(unsigned(a), unsigned(b));
      cluster.bandwidth[a * n + b] = link.bandwidth;
      cluster.latency[a * n + b] = link.latency;
    }
  return cluster;
}

MachineModel
mlir::pipe::partitioning::buildMachineModel(const ClusterInfo &cluster) {
  MachineModel machine;
  machine.name = "partitioning";
  for (const DeviceInfo &d : cluster.devices) {
    MachineModel::Device device;
    device.memoryBytes = d.getUsableBytes();
    device.flops = d.flopsPerSecond;
    device.memoryBandwidth = d.memoryBandwidth;
    device.backwardFlops = d.backwardFlopsPerSecond;
    device.backwardMemoryBandwidth = d.backwardMemoryBandwidth;
    machine.devices.push_back(device);
  }
  unsigned n = cluster.size();
  if (n > 1) {
    machine.defaultLink = {cluster.getBandwidth(0, 1),
                           cluster.getLatency(0, 1)};
    // Only the pairs that differ from the default: a uniform cluster of
    // thousands of devices needs no map of millions of equal links.
    for (unsigned a = 0; a < n; ++a)
      for (unsigned b = 0; b < n; ++b)
        if (a != b &&
            (cluster.getBandwidth(a, b) != machine.defaultLink.bandwidth ||
             cluster.getLatency(a, b) != machine.defaultLink.latency))
          machine.links[{a, b}] = {cluster.getBandwidth(a, b),
                                   cluster.getLatency(a, b)};
  }
  return machine;
}
