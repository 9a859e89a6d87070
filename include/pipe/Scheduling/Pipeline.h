//===- Pipeline.h - Abstract pipeline description for schedulers -*- C++
//-*-===//
//
// What schedule generators, the schedule checker and the simulator know about
// a placed model, independent of the IR: stages with their costs and device,
// the stage DAG with the bytes crossing each edge, parameters shared by
// several stages, and the machine the stages run on. Built from IR on the
// pass side (pipe/Dialect/Pipe/Transforms/ScheduleIR.h), or by hand in tests
// and benchmarks.
//
// All times are seconds, all sizes bytes.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_SCHEDULING_PIPELINE_H
#define PIPE_SCHEDULING_PIPELINE_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"

#include <cstdint>
#include <limits>
#include <map>
#include <string>

namespace mlir::pipe {

struct ClusterModel;

/// The analytic time of a compute part: `flops` at `flopsPerSecond` plus
/// `bytes` at `bytesPerSecond` (0: memory traffic is free). The simulator
/// and the partitioners charge it, and pipe-profile --fit-device-model fits
/// its two rates.
inline double getAnalyticPartTime(double flops, double bytes,
                                  double flopsPerSecond,
                                  double bytesPerSecond) {
  return flops / flopsPerSecond +
         (bytesPerSecond > 0 ? bytes / bytesPerSecond : 0.0);
}

/// A block's backward: fused, and its input- and weight-gradient parts run
/// apart (zero-bubble schedules).
struct BackwardTimes {
  double fused = 0, input = 0, weight = 0;
};

/// A block's backward times from what was measured (seconds; 0: not
/// measured) and, for the rest, its parts' FLOPs and the forward's bytes at
/// the given rates. Split parts measured apart are taken as they are (the
/// fused time, unless measured, is their sum); a measured fused time alone
/// is split by the parts' FLOPs (all of it to the input part without
/// FLOPs); analytic, the fused backward passes over the bytes once for its
/// FLOPs (`fusedFlops`, 0: the parts' sum) and each part run apart pays
/// them. A part without FLOPs takes no time. The simulator and the
/// partitioners both use it.
inline BackwardTimes getBackwardTimes(double measuredFused,
                                      double measuredInput,
                                      double measuredWeight, double inputFlops,
                                      double weightFlops, double fusedFlops,
                                      double bytes, double flopsPerSecond,
                                      double bytesPerSecond) {
  BackwardTimes t;
  double flops = inputFlops + weightFlops;
  if (measuredInput > 0 || measuredWeight > 0) {
    t.input = measuredInput;
    t.weight = measuredWeight;
  } else if (measuredFused > 0) {
    t.input = flops > 0 ? measuredFused * inputFlops / flops : measuredFused;
    t.weight = flops > 0 ? measuredFused * weightFlops / flops : 0.0;
  } else {
    auto analytic = [&](double partFlops) {
      return partFlops > 0 ? getAnalyticPartTime(partFlops, bytes,
                                                 flopsPerSecond, bytesPerSecond)
                           : 0.0;
    };
    t.input = analytic(inputFlops);
    t.weight = analytic(weightFlops);
    t.fused = analytic(fusedFlops > 0 ? fusedFlops : flops);
    return t;
  }
  t.fused = measuredFused > 0 ? measuredFused : t.input + t.weight;
  return t;
}

/// Receives one error message from a scheduling algorithm. The caller turns
/// it into a diagnostic on the op it is working on.
using ScheduleDiagFn = llvm::function_ref<void(const llvm::Twine &)>;

/// One stage of a pipeline: the costs of one micro-batch.
struct PipelineStage {
  std::string name;
  unsigned device = 0;
  double forwardTime = 0;
  double backwardInputTime = 0;
  double backwardWeightTime = 0;
  /// The fused backward, which may have been measured apart from (and cost
  /// less than) its split parts (0: their sum).
  double fusedBackwardTime = 0;
  /// The measured optimizer update of the stage's parameters on its device
  /// (0: the memory-bound analytic one).
  double updateTime = 0;
  /// Bytes of the device copy of the stage's parameters, and their count
  /// (the host optimizer's work).
  uint64_t paramBytes = 0;
  uint64_t paramCount = 0;
  /// Activations kept from the forward for the backward of one micro-batch
  /// when the stage is not recomputed.
  uint64_t savedBytes = 0;
  /// Bytes of the stage's inputs (what must be kept when the stage is
  /// recomputed from its boundary) and outputs, per micro-batch.
  uint64_t inputBytes = 0;
  uint64_t outputBytes = 0;
  /// Measured working memory of each compute part (0: not measured): the
  /// most bytes above those the device held when the part began, its
  /// outputs, kept activations and the lowered code's temporaries included.
  uint64_t forwardWorkingBytes = 0, recomputeWorkingBytes = 0,
           backwardWorkingBytes = 0, backwardInputWorkingBytes = 0,
           backwardWeightWorkingBytes = 0;

  double getBackwardTime() const {
    return fusedBackwardTime > 0 ? fusedBackwardTime
                                 : backwardInputTime + backwardWeightTime;
  }
};

/// Values produced in `producer` and read in `consumer`.
struct PipelineEdge {
  unsigned producer = 0;
  unsigned consumer = 0;
  uint64_t bytes = 0;
};

/// A parameter whose gradient is reduced before any stage updates it: one
/// read by several stages (tied embeddings), and with data parallelism
/// every trainable one, reduced over the stages that read it and then over
/// the replicas.
struct SharedParam {
  std::string name;
  uint64_t bytes = 0;
  SmallVector<unsigned> stages;
};

struct Pipeline {
  SmallVector<PipelineStage> stages;
  SmallVector<PipelineEdge> edges;
  SmallVector<SharedParam> sharedParams;
  unsigned numDevices = 1;
  /// Data-parallel copies of the pipeline (pipe.placement replicas). Replica
  /// r runs device d of the schedule as machine device r * numDevices + d;
  /// the stages, costs and schedule are those of one replica.
  unsigned replicas = 1;

  unsigned getNumStages() const { return stages.size(); }
  SmallVector<unsigned> getProducers(unsigned stage) const;
  SmallVector<unsigned> getConsumers(unsigned stage) const;
  const PipelineEdge *findEdge(unsigned producer, unsigned consumer) const;
  /// Stages placed on `device`, by increasing index.
  SmallVector<unsigned> getStagesOnDevice(unsigned device) const;
  /// Stage indices in a topological order (requires validate() to pass).
  SmallVector<unsigned> getTopologicalOrder() const;
  /// Longest path, counted in stages, from a source to `stage` (0 for
  /// sources) and from `stage` to a sink (1 for sinks).
  SmallVector<unsigned> getDepths() const;
  SmallVector<unsigned> getHeights() const;
  /// Indices into sharedParams of the parameters `stage` reads.
  SmallVector<unsigned> getSharedParamsOf(unsigned stage) const;
  /// `stage` and the stages that read one of its shared parameters, in
  /// increasing order.
  SmallVector<unsigned> getStagesSharingParamsWith(unsigned stage) const;

  /// Checks devices, edges and acyclicity; reports the first problem.
  LogicalResult validate(ScheduleDiagFn diag) const;

  /// A chain of `numStages` stages with equal costs, stage i on device
  /// i % numDevices (round-robin), for tests and closed-form checks.
  static Pipeline makeChain(unsigned numStages, unsigned numDevices,
                            double forwardTime, double backwardInputTime,
                            double backwardWeightTime, uint64_t savedBytes = 0,
                            uint64_t edgeBytes = 0, uint64_t paramBytes = 0);
};

/// The hardware facts the simulator and the memory check use, flattened
/// from the device model (ClusterModel) so that tests can write them down.
struct MachineModel {
  struct Device {
    uint64_t memoryBytes = std::numeric_limits<uint64_t>::max();
    /// Sustained compute rate used to turn FLOPs into times.
    double flops = 1e12;
    /// Device memory bandwidth, used for the bytes a block reads and writes
    /// and the on-device optimizer step (0: memory traffic is free).
    double memoryBandwidth = 0;
    /// The rates of backward code where they differ (0: the forward's).
    double backwardFlops = 0;
    double backwardMemoryBandwidth = 0;

    /// The analytic time of a part of `flops` that moves `bytes`.
    double getComputeTime(double flops, double bytes) const {
      return getAnalyticPartTime(flops, bytes, this->flops, memoryBandwidth);
    }
    double getBackwardFlops() const {
      return backwardFlops > 0 ? backwardFlops : flops;
    }
    double getBackwardBandwidth() const {
      return backwardMemoryBandwidth > 0 ? backwardMemoryBandwidth
                                         : memoryBandwidth;
    }
  };
  struct Link {
    /// bytes/s; 0 means infinitely fast.
    double bandwidth = 0;
    double latency = 0;
    double getTime(double bytes) const {
      return latency + (bandwidth > 0 ? bytes / bandwidth : 0.0);
    }
  };

  std::string name = "ideal";
  SmallVector<Device> devices;
  Link defaultLink;
  std::map<std::pair<unsigned, unsigned>, Link> links;
  /// Hosts (ClusterModel::devicesPerHost; 0: one host) and the link between
  /// devices of different hosts.
  unsigned devicesPerHost = 0;
  Link interHostLink;
  /// Host<->device copy engines (pinned memory), one per direction.
  Link hostToDevice, deviceToHost;
  /// Host optimizer throughput in parameters/s (0: free).
  double optimizerParamsPerSecond = 0;
  /// Seconds per schedule run outside its actions (HostSpec::runOverhead).
  double runOverhead = 0;
  /// Device-side optimizer: bytes of state read and written per parameter
  /// (Adam: weight, gradient, two moments; read and write).
  double updateBytesPerParam = 32;

  const Link &getLink(unsigned from, unsigned to) const;
  const Device &getDevice(unsigned index) const;
  /// A ring all-reduce of `bytes` over `members` (machine devices, in ring
  /// order): 2 (k - 1) / k of the bytes cross the slowest hop of the ring.
  double getAllReduceTime(ArrayRef<unsigned> members, double bytes) const;
  /// getAllReduceTime over the `replicas` data-parallel copies of device
  /// `device` of a `devices`-device pipeline (replica r runs it as machine
  /// device r * devices + device).
  double getReplicaAllReduceTime(unsigned device, unsigned devices,
                                 unsigned replicas, double bytes) const;

  /// Infinite memory, free communication and free optimizer: what the
  /// closed forms of the schedules assume.
  static MachineModel makeIdeal(unsigned numDevices);
  /// Flattens a device model; `numDevices` copies of device 0 when the
  /// model has fewer devices than the pipeline needs.
  static MachineModel fromCluster(const ClusterModel &cluster,
                                  unsigned numDevices,
                                  llvm::StringRef dtype = "bf16");
  /// fromCluster of a device model preset name or JSON file path.
  static FailureOr<MachineModel> lookup(llvm::StringRef presetNameOrPath,
                                        unsigned numDevices,
                                        ScheduleDiagFn diag);
};

} // namespace mlir::pipe

#endif // PIPE_SCHEDULING_PIPELINE_H
