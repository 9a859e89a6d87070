//===- FromDeviceModel.h - Clusters from the device model -------*- C++ -*-===//
//
// The partitioners' ClusterInfo from a device model (pipe/Analysis/
// DeviceModel.h), and back into the scheduler's MachineModel for the
// simulator.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_PARTITIONING_FROMDEVICEMODEL_H
#define PIPE_PARTITIONING_FROMDEVICEMODEL_H

#include "pipe/Partitioning/Problem.h"
#include "pipe/Scheduling/Pipeline.h"

namespace mlir::pipe {
struct ClusterModel;
} // namespace mlir::pipe

namespace mlir::pipe::partitioning {

/// `numDevices` devices of `model` (copies of its device 0 when it has a
/// different count), FLOP rates for `dtype`, links as the model says.
ClusterInfo buildClusterInfo(const ClusterModel &model, unsigned numDevices,
                             StringRef dtype);

/// The same facts in the simulator's terms.
MachineModel buildMachineModel(const ClusterInfo &cluster);

} // namespace mlir::pipe::partitioning

#endif // PIPE_PARTITIONING_FROMDEVICEMODEL_H
