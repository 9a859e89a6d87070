//===- Evaluation.h - Partitions and the one objective ----------*- C++ -*-===//
//
// A partition maps every block to a stage and every stage to a device. The
// evaluation is the single objective every partitioner optimises and every
// report prints (docs/partitioning.md derives it):
//
//  per device d, per micro-batch:
//    F_d, B_d   forward / backward compute of all its stages
//    X_d        max(seconds receiving, seconds sending) of the activations
//               crossing to or from other devices (one message per pair of
//               stages; gradients cross back with the same bytes)
//    cost_d  =  F_d + B_d + max(0, X_d - F_d) + max(0, X_d - B_d)
//               (communication overlaps compute in each direction; only
//               the excess shows, as in FTPipe)
//  bottleneck  = max_d cost_d
//  path        = the longest path of one micro-batch through the stage DAG:
//               sum over its stages of (F_s + B_s) plus twice the transfer
//               time of each cross-device edge on it
//  reduction   = per step, for every trainable parameter read on k > 1
//               devices, a ring all-reduce of its gradient:
//               2 (k-1)/k bytes / slowest bandwidth + 2 (k-1) latency
//  step time   = (m - 1) bottleneck + path + reduction   (synchronous)
//              = m bottleneck + reduction                 (async, l2l)
//  zb-h1 fills the drain with weight gradients: its path counts each
//  stage's F + B - 2 W, plus 2 W of the last stage on it, and the step
//  time is at least m bottleneck. interleaved-1f1b with v stages per
//  device shrinks the bubble v times: m bottleneck + (path - bottleneck) / v.
//
//  For p equal stages of time t on p devices, no communication, the
//  synchronous formula is (m + p - 1) t, GPipe's fill-drain closed form.
//
//  Memory of device d: its distinct parameters (trainable ones times the
//  optimizer multiplier, stashed weight versions under async stashing)
//  plus, for each of its stages s, saved_s x activations in flight (which
//  depends on the stage's height in the stage DAG; see ScheduleModel).
//  With stage recomputation, a non-sink stage instead keeps input_s x in
//  flight + saved_s (one micro-batch re-run at a time) and its backward
//  includes its forward again. Under l2l every stage is recomputed, the
//  device holds the parameters and gradients of the two largest stages
//  (the one computing and the one loading) and one stage's saved
//  activations.
//
//  Ranking (isBetter): feasible (acyclic, fits) first, then smaller step
//  time, then less communication per step.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_PARTITIONING_EVALUATION_H
#define PIPE_PARTITIONING_EVALUATION_H

#include "pipe/Partitioning/Problem.h"

#include "llvm/Support/raw_ostream.h"

namespace mlir::pipe::partitioning {

class Partition {
public:
  Partition() = default;
  Partition(std::vector<unsigned> stageOfNode,
            std::vector<unsigned> deviceOfStage)
      : stageOf(std::move(stageOfNode)), deviceOf(std::move(deviceOfStage)) {}

  /// For every node, its stage.
  std::vector<unsigned> stageOf;
  /// For every stage, its device.
  std::vector<unsigned> deviceOf;

  unsigned getNumStages() const { return deviceOf.size(); }
  /// The device of every node.
  std::vector<unsigned> getDeviceOfNodes() const;
  /// Number of distinct devices that host a stage.
  unsigned getNumUsedDevices() const;
  /// Drops empty stages and renumbers the rest by the topological position
  /// of their first node, so equal partitions compare equal.
  void canonicalize(const BlockGraph &graph);
  /// Every node has a stage < numStages and every stage a device < n.
  llvm::Error verify(const BlockGraph &graph, unsigned numDevices) const;

  bool operator==(const Partition &other) const {
    return stageOf == other.stageOf && deviceOf == other.deviceOf;
  }
};

struct StageReport {
  unsigned device = 0;
  unsigned numNodes = 0;
  double forwardSeconds = 0, backwardSeconds = 0;
  /// The weight-gradient part of backwardSeconds (zb-h1 only, which is
  /// the only closed form that needs it; 0 under other schedules).
  double backwardWeightSeconds = 0;
  /// Stages on the longest path to a sink, itself included.
  unsigned height = 0;
  unsigned activationsInFlight = 0;
  uint64_t savedBytes = 0;
  /// Activation bytes entering the stage from other stages per micro-batch.
  uint64_t inputBytes = 0;
  uint64_t paramBytes = 0;
  /// Recomputes its forward before its backward (included in
  /// backwardSeconds).
  bool recomputed = false;
};

struct DeviceReport {
  unsigned numStages = 0;
  double forwardSeconds = 0, backwardSeconds = 0;
  double recvSeconds = 0, sendSeconds = 0;
  /// cost_d of the header, per micro-batch.
  double costSeconds = 0;
  /// Distinct parameter bytes held, and the memory split.
  uint64_t paramBytes = 0;
  uint64_t paramMemoryBytes = 0;
  uint64_t activationMemoryBytes = 0;
  uint64_t memoryBytes = 0;
  uint64_t capacityBytes = 0;
  /// Activation bytes sent to and received from other devices.
  uint64_t sentBytes = 0, receivedBytes = 0;
};

struct Evaluation {
  bool acyclic = true;
  bool fitsMemory = true;
  /// The schedule can run this placement (interleaved-1f1b: the same number
  /// of stages on every device, stage k on device k mod p, edges in stage
  /// order; l2l: every stage on device 0).
  bool fitsSchedule = true;
  llvm::SmallVector<StageReport> stages;
  llvm::SmallVector<DeviceReport> devices;
  /// (producer, consumer) stage pairs with the bytes crossing them per
  /// micro-batch, sorted.
  llvm::SmallVector<std::pair<unsigned, unsigned>> stageEdges;
  llvm::SmallVector<uint64_t> stageEdgeBytes;
  double bottleneckSeconds = 0;
  double pathSeconds = 0;
  double reductionSeconds = 0;
  /// The analytic step time of the header.
  double analyticStepSeconds = 0;
  /// What ranks partitions: the StepTimeFn's answer when the problem has
  /// one and it was applied (see evaluate()), else the analytic one.
  double stepSeconds = 0;
  bool simulated = false;
  /// Cross-device activation bytes per micro-batch (each way).
  uint64_t commBytesPerMicrobatch = 0;
  /// Bytes the gradient reductions move per step.
  uint64_t reductionBytes = 0;
  /// Parameters reduced across devices.
  unsigned numSplitParams = 0;
  /// Largest memory over capacity ratio.
  double maxMemoryRatio = 0;

  bool isFeasible() const { return acyclic && fitsMemory && fitsSchedule; }
  /// Activations and gradients of all micro-batches plus reductions.
  double getCommBytesPerStep(unsigned microbatches) const {
    return 2.0 * commBytesPerMicrobatch * microbatches + reductionBytes;
  }
};

/// Evaluates `partition` (which must pass Partition::verify). Empty stages
/// are ignored. With `useStepTimeFn`, a problem's StepTimeFn replaces the
/// step time of feasible partitions.
Evaluation evaluate(const PartitionProblem &problem, const Partition &partition,
                    bool useStepTimeFn = false);

/// The partition the schedule itself prescribes, for schedules that leave
/// nothing to search (l2l: one stage per block in topological order, all on
/// device 0); nullopt for the others.
std::optional<Partition> getPartitionFixedBySchedule(
    const PartitionProblem &problem);

/// Strict ranking of the header: feasible first, then step time (relative
/// tolerance 1e-9), then communication per step, then fewer stages.
bool isBetter(const Evaluation &a, const Evaluation &b, unsigned microbatches);

/// Evaluates `candidates` (non-empty) into `evaluations` and returns the
/// index of the best. With a StepTimeFn in the problem, feasible candidates
/// are ranked by its figures, never mixed with analytic ones: candidates it
/// cannot play get an infinite step time, and only when it plays none do
/// all keep their analytic figures.
unsigned rankCandidates(const PartitionProblem &problem,
                        llvm::ArrayRef<Partition> candidates,
                        std::vector<Evaluation> &evaluations);

/// Human-readable figures ("1.50 GiB", "12.3 ms").
std::string formatBytes(double bytes);
std::string formatSeconds(double seconds);

} // namespace mlir::pipe::partitioning

#endif // PIPE_PARTITIONING_EVALUATION_H
