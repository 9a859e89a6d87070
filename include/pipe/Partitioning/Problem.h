//===- Problem.h - What a partitioner is asked to solve ---------*- C++ -*-===//
//
// The plain C++ model the partitioners work on, independent of the IR: a DAG
// of block instances with their costs, the parameters they read (shared
// parameters are one entry read by several blocks), the values that flow
// between them, the devices and links of the cluster, the optimizer's memory
// per parameter byte and the pipeline schedule that decides how many
// micro-batches' activations are alive at once. Built from IR by
// pipe/Dialect/Pipe/Transforms/PartitionIR.h, or by hand in tests and
// benchmarks.
//
// Units: seconds, bytes, FLOPs, FLOP/s, bytes/s.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_PARTITIONING_PROBLEM_H
#define PIPE_PARTITIONING_PROBLEM_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace mlir::pipe::partitioning {

//===----------------------------------------------------------------------===//
// The block graph
//===----------------------------------------------------------------------===//

/// A trainable (or frozen) tensor. Several blocks may read the same
/// parameter (tied embeddings): a device holds it once however many of its
/// blocks read it, and when blocks on several devices read it, its gradient
/// is reduced across those devices every step.
struct ParamInfo {
  std::string name;
  uint64_t bytes = 0;
  /// Frozen parameters have no gradient and no optimizer state.
  bool trainable = true;
};

/// One block instance (a `pipe.run` of the graph), costed for one
/// micro-batch.
struct BlockNode {
  std::string name;
  double forwardFlops = 0;
  double backwardInputFlops = 0;
  double backwardWeightFlops = 0;
  /// The fused backward's FLOPs where they are not the parts' sum (0).
  double backwardFlops = 0;
  /// Bytes the forward reads and writes; each part that does work is
  /// charged them at the device's memory bandwidth.
  double bytesAccessed = 0;
  /// Measured times; when positive they replace the analytic ones. The
  /// split backward's parts (zero-bubble schedules) may be measured apart
  /// from the fused backward.
  double forwardSeconds = 0;
  double backwardSeconds = 0;
  double backwardInputSeconds = 0, backwardWeightSeconds = 0;
  /// Activation bytes kept from the forward for the backward of one
  /// micro-batch (under the block's recompute policy).
  uint64_t savedBytes = 0;
  /// Parameters read, as indices into BlockGraph::getParams().
  llvm::SmallVector<unsigned, 2> params;
};

/// A value produced by one block and read by others (one result of a
/// `pipe.run`). When it crosses to another device it is sent once per
/// consuming stage, and its gradient comes back in the backward.
struct BlockValue {
  unsigned producer = 0;
  uint64_t bytes = 0;
  llvm::SmallVector<unsigned, 2> consumers;
};

class BlockGraph {
public:
  unsigned addParam(llvm::StringRef name, uint64_t bytes,
                    bool trainable = true);
  unsigned addNode(BlockNode node);
  /// A value produced by `producer`; give it consumers with addUse().
  unsigned addValue(unsigned producer, uint64_t bytes);
  void addUse(unsigned value, unsigned consumer);
  /// A fresh value from `src` read only by `dst`.
  unsigned addEdge(unsigned src, unsigned dst, uint64_t bytes);

  /// Checks indices, removes duplicate uses and computes the derived
  /// tables (topological order, neighbours, per-node values). Fails on a
  /// cycle or an index out of range. Must succeed before partitioning.
  llvm::Error finalize();
  bool isFinalized() const { return finalized; }

  unsigned getNumNodes() const { return nodes.size(); }
  unsigned getNumValues() const { return values.size(); }
  unsigned getNumParams() const { return params.size(); }
  const BlockNode &getNode(unsigned i) const { return nodes[i]; }
  BlockNode &getNode(unsigned i) { return nodes[i]; }
  const BlockValue &getValue(unsigned i) const { return values[i]; }
  const ParamInfo &getParam(unsigned i) const { return params[i]; }
  llvm::ArrayRef<BlockNode> getNodes() const { return nodes; }
  llvm::ArrayRef<BlockValue> getValues() const { return values; }
  llvm::ArrayRef<ParamInfo> getParams() const { return params; }

  // Derived by finalize().
  /// Nodes in a topological order (stable: ties keep insertion order).
  llvm::ArrayRef<unsigned> getTopologicalOrder() const { return topoOrder; }
  /// Position of each node in getTopologicalOrder().
  unsigned getTopologicalPosition(unsigned node) const { return topoPos[node]; }
  /// Distinct neighbour nodes.
  llvm::ArrayRef<unsigned> getSuccessors(unsigned node) const {
    return succs[node];
  }
  llvm::ArrayRef<unsigned> getPredecessors(unsigned node) const {
    return preds[node];
  }
  /// Values a node reads (distinct) and produces.
  llvm::ArrayRef<unsigned> getInputValues(unsigned node) const {
    return inputs[node];
  }
  llvm::ArrayRef<unsigned> getOutputValues(unsigned node) const {
    return outputs[node];
  }

private:
  std::vector<BlockNode> nodes;
  std::vector<BlockValue> values;
  std::vector<ParamInfo> params;
  bool finalized = false;
  std::vector<unsigned> topoOrder, topoPos;
  std::vector<llvm::SmallVector<unsigned, 2>> succs, preds, inputs, outputs;
};

//===----------------------------------------------------------------------===//
// The cluster
//===----------------------------------------------------------------------===//

struct DeviceInfo {
  std::string name;
  uint64_t memoryBytes = 0;
  /// Bytes not available to the partition (runtime context, workspaces).
  uint64_t reservedBytes = 0;
  /// Sustained compute rate used to turn FLOPs into seconds.
  double flopsPerSecond = 1e12;
  /// Memory bandwidth for the bytes a block reads and writes (0: free).
  double memoryBandwidth = 0;
  /// The rates of backward code where they differ (0: the forward's).
  double backwardFlopsPerSecond = 0;
  double backwardMemoryBandwidth = 0;

  double getBackwardFlops() const {
    return backwardFlopsPerSecond > 0 ? backwardFlopsPerSecond : flopsPerSecond;
  }
  double getBackwardBandwidth() const {
    return backwardMemoryBandwidth > 0 ? backwardMemoryBandwidth
                                       : memoryBandwidth;
  }
  uint64_t getUsableBytes() const {
    return memoryBytes > reservedBytes ? memoryBytes - reservedBytes : 0;
  }
};

struct ClusterInfo {
  std::vector<DeviceInfo> devices;
  /// Row-major n x n, bytes/s and seconds per message, from -> to. Ignored
  /// on the diagonal (a device talks to itself for free).
  std::vector<double> bandwidth, latency;

  unsigned size() const { return devices.size(); }
  double getBandwidth(unsigned from, unsigned to) const {
    return bandwidth[from * size() + to];
  }
  double getLatency(unsigned from, unsigned to) const {
    return latency[from * size() + to];
  }
  /// Seconds to send `bytes` as one message; 0 on the same device or for
  /// nothing.
  double getTransferSeconds(unsigned from, unsigned to, double bytes) const;
  /// Mean bandwidth and latency over distinct pairs (one device: 0).
  double getMeanBandwidth() const;
  double getMeanLatency() const;
  /// True when all devices are equal and all links are equal, so that
  /// device numbering does not change any cost.
  bool isHomogeneous() const;

  /// `n` equal devices, all pairs linked alike.
  static ClusterInfo uniform(unsigned n, uint64_t memoryBytes,
                             double flopsPerSecond, double bandwidth,
                             double latency = 0);
  /// Checks sizes and that rates are positive.
  llvm::Error verify() const;
};

//===----------------------------------------------------------------------===//
// Training memory and schedule
//===----------------------------------------------------------------------===//

/// Device memory per byte of trainable parameter, as multiples of the
/// parameter's own bytes: the weights, their gradients and the optimizer's
/// state. Frozen parameters cost their weights only. The presets assume the
/// state has the parameters' precision (fp32 training); for other
/// precisions build the struct by hand.
///
///   sgd        1 + 1 + 0     plain SGD keeps no state
///   momentum   1 + 1 + 1     SGD with momentum: one velocity
///   adamw      1 + 1 + 2     first and second moments
///   adafactor  1 + 1 + 0.02  factored second moment (a row and a column
///                            vector per matrix: (r + c) / (r * c) of the
///                            matrix, under 1% for d >= 256; vectors keep a
///                            full moment) and no first moment; 2% bounds
///                            both for transformer shapes
struct TrainingMemory {
  std::string name = "adamw";
  double weightCopies = 1;
  double gradientCopies = 1;
  double stateCopies = 2;

  double getBytesPerTrainableByte() const {
    return weightCopies + gradientCopies + stateCopies;
  }
  static TrainingMemory sgd();
  static TrainingMemory momentum();
  static TrainingMemory adamw();
  static TrainingMemory adafactor();
  /// By name (the names above); nullopt when unknown.
  static std::optional<TrainingMemory> lookup(llvm::StringRef name);
  static llvm::StringRef getNames(); // "sgd, momentum, adamw, adafactor"
};

/// The closed form the partition is judged by under a schedule. It decides
/// how many micro-batches' activations each stage holds and how the step
/// time follows from the stage costs (see Evaluation.h and
/// docs/partitioning.md, which gives each rule's source).
enum class ScheduleFamily {
  /// Fill-drain (GPipe): every micro-batch's forward before any backward.
  GPipe,
  /// Synchronous 1F1B (PipeDream-Flush).
  OneFOneB,
  /// Asynchronous 1F1B (PipeDream, FTPipe): no flush between steps.
  Async,
  /// ZB-H1: 1F1B with the weight-gradient backwards filling the drain.
  ZeroBubble,
  /// Megatron's interleaved 1F1B: several round-robin stages per device.
  Interleaved,
  /// Layer-to-layer from a host parameter server: one device, one stage per
  /// block, parameters streamed in, every stage recomputed.
  LayerToLayer,
};

struct ScheduleModel {
  ScheduleFamily family = ScheduleFamily::GPipe;
  /// The registered schedule kind the partition is for; the simulator plays
  /// it. Empty: the family's own kind (getFamilyName).
  std::string kind;
  unsigned microbatches = 8;
  /// Async only: each stage keeps the weight version every in-flight
  /// micro-batch's forward used (PipeDream's weight stashing).
  bool weightStashing = false;
  /// Stage-level recomputation (GPipe, FTPipe): every stage but the sinks
  /// keeps only its inputs per micro-batch in flight and re-runs its
  /// forward before its backward, holding one micro-batch's full saved
  /// activations while it does. Blocks' saved bytes should then be
  /// save-all figures.
  bool recompute = false;

  /// Micro-batches whose activations a stage holds at its peak, given the
  /// stage's height h (stages on the longest path from it to a sink,
  /// itself included) and the depth D of the stage graph (its longest
  /// path in stages; 0 when not known yet, which counts as h):
  ///   GPipe:        m (all forwards run before the first backward);
  ///   1F1B:         min(m, h) (a stage admits a new micro-batch only after
  ///                 the backward of the one h stages ahead of it);
  ///   Async:        h (the same steady state; steps overlap, so m does not
  ///                 cap);
  ///   ZeroBubble:   min(m, max(h, D)) (weight gradients are delayed until
  ///                 every stage holds D micro-batches);
  ///   Interleaved:  min(m, 2h - 1) (Megatron's warm-up of
  ///                 2 (p - r - 1) + (v - 1) p forwards, bounded per chunk);
  ///   LayerToLayer: m (every stage's boundary inputs stay for the
  ///                 backward; the stage is recomputed, see Evaluation.h).
  unsigned getActivationsInFlight(unsigned height, unsigned depth = 0) const;
  /// Weight versions a stage keeps: h under async with stashing, else 1.
  unsigned getWeightVersions(unsigned height) const;
  bool isSynchronous() const { return family != ScheduleFamily::Async; }
  /// Whether the parameters live on a host parameter server, so that the
  /// device holds only the stages being computed.
  bool hasParameterServer() const {
    return family == ScheduleFamily::LayerToLayer;
  }
  /// Whether every stage recomputes its forward before its backward (the
  /// recompute option on non-sinks, every stage under LayerToLayer).
  bool recomputes(unsigned height) const {
    return hasParameterServer() || (recompute && height > 1);
  }
  /// The kind to simulate and report: `kind`, or the family's name.
  llvm::StringRef getKind() const {
    return kind.empty() ? getFamilyName(family) : llvm::StringRef(kind);
  }

  /// The model for the registered schedule kind `kind`: the family follows
  /// from the kind's traits (asynchronous, parameter server) and, for
  /// synchronous kinds, from one table of per-kind rules; a synchronous kind
  /// the table does not know is judged by GPipe's conservative closed form
  /// and, for the final candidates, by the simulator. Weight stashing is
  /// kept only when the kind keeps weight versions. Fails for a kind that
  /// is not registered, naming the registered ones. Also accepts the
  /// aliases of parseFamily.
  static llvm::Expected<ScheduleModel> forSchedule(llvm::StringRef kind,
                                                   unsigned microbatches,
                                                   bool weightStashing = false,
                                                   bool recompute = false);
  /// "gpipe", "1f1b" (also "pipedream-flush"), "pipedream-async" (also
  /// "async").
  static std::optional<ScheduleFamily> parseFamily(llvm::StringRef name);
  static llvm::StringRef getFamilyName(ScheduleFamily family);
};

class Partition;
struct Evaluation;
struct PartitionProblem;

/// Replaces the analytic step time (e.g. by a discrete-event simulation of
/// the schedule); called only on feasible, acyclic partitions. Returns
/// nullopt to keep the analytic figure.
using StepTimeFn = std::function<std::optional<double>(
    const PartitionProblem &, const Partition &, const Evaluation &)>;

struct PartitionProblem {
  /// Must be finalized.
  const BlockGraph *graph = nullptr;
  ClusterInfo cluster;
  TrainingMemory memory;
  ScheduleModel schedule;
  /// Optional; see StepTimeFn. Partitioners use it only to rank their final
  /// candidates, never inside their search loops.
  StepTimeFn stepTime;
  /// Stages per device for algorithms that make a fixed number of stages
  /// (balanced); 0: one stage per block instance (L2L). The others ignore
  /// it.
  unsigned stagesPerDevice = 1;
  /// Whether runPartitioner rejects a partition that does not fit in
  /// memory. pipe-place places before any schedule is chosen and leaves
  /// memory to pipe-verify-schedule, which knows what the schedule keeps.
  bool checkMemory = true;

  /// Seconds node `node` takes forward / backward on device `device`:
  /// measured, else getAnalyticPartTime at the device's rates.
  double getForwardSeconds(unsigned node, unsigned device) const;
  double getBackwardSeconds(unsigned node, unsigned device) const;
  /// The input- and weight-gradient parts of a node's backward, run apart
  /// (zero-bubble schedules): measured, else the FLOP split of a measured
  /// total, else analytic with each part paying the bytes (so their sum
  /// exceeds an analytic getBackwardSeconds); 0 without backward FLOPs.
  double getBackwardInputSeconds(unsigned node, unsigned device) const;
  double getBackwardWeightSeconds(unsigned node, unsigned device) const;
  /// Checks the graph is finalized, the cluster is valid and m >= 1.
  llvm::Error verify() const;
};

} // namespace mlir::pipe::partitioning

#endif // PIPE_PARTITIONING_PROBLEM_H
