//===- Seq.cpp - Contiguous splits by dynamic programming -----------------===//
//
// The Seq-pipe baseline (PipeDream's partitioner, FTPipe's comparison
// point): the topological order is cut into contiguous stages, one per
// device, minimising the largest per-device cost. The dynamic program runs
// over suffixes: best[r][i] is the best split of positions [i, n) into r
// stages placed on the last r devices, so the stage starting at i knows its
// height r in the chain of stages, which fixes its activations in flight
// under 1F1B and async schedules. One table serves every stage count.
//
//===----------------------------------------------------------------------===//

#include "pipe/Partitioning/Algorithms.h"
#include "pipe/Partitioning/Partitioner.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <limits>

using namespace mlir::pipe::partitioning;

namespace {

/// Per-position tables of the topological order.
struct SeqTables {
  const PartitionProblem &problem;
  const BlockGraph &graph;
  unsigned n, numDevices;
  /// Per value: position of its producer and of its last consumer (-1: no
  /// consumer).
  std::vector<unsigned> producerPos;
  std::vector<int> lastUsePos;
  /// Per position: the values whose last consumer sits there.
  std::vector<llvm::SmallVector<unsigned, 2>> endingAt;
  /// Per device: prefix sums of forward and backward seconds.
  std::vector<std::vector<double>> forwardPrefix, backwardPrefix;
  std::vector<uint64_t> savedPrefix;

  explicit SeqTables(const PartitionProblem &problem)
      : problem(problem), graph(*problem.graph), n(graph.getNumNodes()),
        numDevices(problem.cluster.size()) {
    unsigned numValues = graph.getNumValues();
    producerPos.resize(numValues);
    lastUsePos.assign(numValues, -1);
    endingAt.resize(n);
    for (unsigned v = 0; v < numValues; ++v) {
      const BlockValue &value = graph.getValue(v);
      producerPos[v] = graph.getTopologicalPosition(value.producer);
      for (unsigned c : value.consumers)
        lastUsePos[v] =
            std::max(lastUsePos[v], int(graph.getTopologicalPosition(c)));
      if (lastUsePos[v] >= 0)
        endingAt[lastUsePos[v]].push_back(v);
    }
    forwardPrefix.assign(numDevices, std::vector<double>(n + 1, 0));
    backwardPrefix.assign(numDevices, std::vector<double>(n + 1, 0));
    savedPrefix.assign(n + 1, 0);
    llvm::ArrayRef<unsigned> order = graph.getTopologicalOrder();
    for (unsigned d = 0; d < numDevices; ++d)
      for (unsigned pos = 0; pos < n; ++pos) {
        forwardPrefix[d][pos + 1] =
            forwardPrefix[d][pos] + problem.getForwardSeconds(order[pos], d);
        backwardPrefix[d][pos + 1] =
            backwardPrefix[d][pos] + problem.getBackwardSeconds(order[pos], d);
      }
    for (unsigned pos = 0; pos < n; ++pos)
      savedPrefix[pos + 1] =
          savedPrefix[pos] + graph.getNode(order[pos]).savedBytes;
  }

  unsigned nodeAt(unsigned pos) const {
    return graph.getTopologicalOrder()[pos];
  }
};

/// Statistics of the range [begin, end) of the topological order, grown one
/// position at a time.
class RangeScan {
public:
  RangeScan(const SeqTables &tables, unsigned begin,
            std::vector<unsigned> &valueStamp,
            std::vector<unsigned> &paramStamp)
      : tables(tables), begin(begin), end(begin), valueStamp(valueStamp),
        paramStamp(paramStamp) {}

  /// Adds position `end` to the range.
  void extend() {
    const BlockGraph &graph = tables.graph;
    unsigned q = end++;
    unsigned node = tables.nodeAt(q);
    unsigned stamp = begin + 1;
    for (unsigned v : graph.getInputValues(node))
      if (tables.producerPos[v] < begin && valueStamp[v] != stamp) {
        valueStamp[v] = stamp;
        inBytes += graph.getValue(v).bytes;
      }
    for (unsigned v : graph.getOutputValues(node))
      if (tables.lastUsePos[v] > int(q))
        outBytes += graph.getValue(v).bytes;
    // Values produced earlier in the range whose last reader is `node` no
    // longer leave it.
    for (unsigned v : tables.endingAt[q])
      if (tables.producerPos[v] >= begin && tables.producerPos[v] < q)
        outBytes -= graph.getValue(v).bytes;
    for (unsigned p : graph.getNode(node).params)
      if (paramStamp[p] != stamp) {
        paramStamp[p] = stamp;
        const ParamInfo &param = graph.getParam(p);
        (param.trainable ? trainableBytes : frozenBytes) += param.bytes;
      }
  }

  unsigned getEnd() const { return end; }

  /// Memory of the range as one stage of height `height`, computed exactly
  /// as evaluate() does for a device holding just this stage, but for the
  /// depth of the split, not known yet: the device count bounds it.
  uint64_t getMemory(unsigned height) const {
    const PartitionProblem &problem = tables.problem;
    const ScheduleModel &schedule = problem.schedule;
    double params = trainableBytes * problem.memory.getBytesPerTrainableByte() +
                    frozenBytes * problem.memory.weightCopies;
    unsigned versions = schedule.getWeightVersions(height);
    if (versions > 1)
      params += double(versions - 1) * trainableBytes;
    uint64_t saved = tables.savedPrefix[end] - tables.savedPrefix[begin];
    unsigned inFlight =
        schedule.getActivationsInFlight(height, problem.cluster.size());
    if (schedule.recomputes(height))
      return uint64_t(std::ceil(params)) + inBytes * inFlight + saved;
    return uint64_t(std::ceil(params)) + saved * inFlight;
  }

  /// cost_d (Evaluation.h) of the range on `device` as a stage of height
  /// `height`, receiving from device - 1 and sending to device + 1.
  double getCost(unsigned device, unsigned height) const {
    const ClusterInfo &cluster = tables.problem.cluster;
    double forward =
        tables.forwardPrefix[device][end] - tables.forwardPrefix[device][begin];
    double backward = tables.backwardPrefix[device][end] -
                      tables.backwardPrefix[device][begin];
    if (tables.problem.schedule.recompute && height > 1)
      backward += forward;
    unsigned numDevices = cluster.size();
    auto transfer = [&](unsigned from, unsigned to, uint64_t bytes) {
      if (!bytes)
        return 0.0;
      if (from >= numDevices || to >= numDevices || from == to)
        return cluster.getMeanLatency() + bytes / cluster.getMeanBandwidth();
      return cluster.getTransferSeconds(from, to, bytes);
    };
    double recv = transfer(device - 1, device, inBytes);
    double send = transfer(device, device + 1, outBytes);
    double x = std::max(recv, send);
    return forward + backward + std::max(0.0, x - forward) +
           std::max(0.0, x - backward);
  }

  uint64_t inBytes = 0, outBytes = 0;
  uint64_t trainableBytes = 0, frozenBytes = 0;

private:
  const SeqTables &tables;
  unsigned begin, end;
  std::vector<unsigned> &valueStamp;
  std::vector<unsigned> &paramStamp;
};

struct DPEntry {
  double cost = HUGE_VAL;
  double comm = HUGE_VAL;
  unsigned next = 0;
  bool isSet() const { return cost != HUGE_VAL; }
};

bool lessLex(double costA, double commA, double costB, double commB) {
  double scale = std::max(std::fabs(costA), std::fabs(costB));
  if (costA < costB - 1e-12 * scale)
    return true;
  if (costB < costA - 1e-12 * scale)
    return false;
  return commA < commB;
}

uint64_t getMaxUsableBytes(const ClusterInfo &cluster) {
  uint64_t result = 0;
  for (const DeviceInfo &d : cluster.devices)
    result = std::max(result, d.getUsableBytes());
  return result;
}

} // namespace

std::vector<SeqSplit>
mlir::pipe::partitioning::computeSeqSplits(const PartitionProblem &problem) {
  SeqTables tables(problem);
  unsigned n = tables.n, numDevices = tables.numDevices;
  std::vector<SeqSplit> result;
  if (n == 0)
    return result;
  uint64_t maxUsable = getMaxUsableBytes(problem.cluster);

  // best[r][i]: positions [i, n) in r stages on devices P - r .. P - 1.
  std::vector<std::vector<DPEntry>> best(numDevices + 1,
                                         std::vector<DPEntry>(n + 1));
  best[0][n] = {0, 0, n};
  std::vector<unsigned> valueStamp(problem.graph->getNumValues(), 0);
  std::vector<unsigned> paramStamp(problem.graph->getNumParams(), 0);
  for (unsigned i = n; i-- > 0;) {
    RangeScan scan(tables, i, valueStamp, paramStamp);
    while (scan.getEnd() < n) {
      scan.extend();
      unsigned j = scan.getEnd();
      // Memory only grows with the range. Without recomputation height 1
      // needs the least; with it, height 1 (a sink, not recomputed) or 2.
      uint64_t least = scan.getMemory(1);
      if (problem.schedule.recompute)
        least = std::min(least, scan.getMemory(2));
      if (least > maxUsable)
        break;
      unsigned maxStages = std::min(numDevices, n - i);
      for (unsigned r = 1; r <= maxStages; ++r) {
        const DPEntry &rest = best[r - 1][j];
        if (!rest.isSet())
          continue;
        unsigned device = numDevices - r;
        if (scan.getMemory(r) >
            problem.cluster.devices[device].getUsableBytes())
          continue;
        double cost = std::max(scan.getCost(device, r), rest.cost);
        double comm = scan.inBytes + rest.comm;
        DPEntry &entry = best[r][i];
        if (lessLex(cost, comm, entry.cost, entry.comm))
          entry = {cost, comm, j};
      }
    }
  }

  for (unsigned k = 1; k <= numDevices; ++k) {
    if (!best[k][0].isSet())
      continue;
    SeqSplit split;
    split.numStages = k;
    split.bottleneckSeconds = best[k][0].cost;
    split.partition.stageOf.assign(n, 0);
    unsigned pos = 0;
    for (unsigned stage = 0; stage < k; ++stage) {
      unsigned next = best[k - stage][pos].next;
      for (unsigned q = pos; q < next; ++q)
        split.partition.stageOf[tables.nodeAt(q)] = stage;
      split.partition.deviceOf.push_back(numDevices - k + stage);
      pos = next;
    }
    result.push_back(std::move(split));
  }
  return result;
}

std::optional<uint64_t> mlir::pipe::partitioning::computeMinContiguousMemory(
    const PartitionProblem &problem) {
  SeqTables tables(problem);
  unsigned n = tables.n, numDevices = tables.numDevices;
  if (n == 0)
    return std::nullopt;
  constexpr uint64_t unset = std::numeric_limits<uint64_t>::max();
  std::vector<std::vector<uint64_t>> best(numDevices + 1,
                                          std::vector<uint64_t>(n + 1, unset));
  best[0][n] = 0;
  std::vector<unsigned> valueStamp(problem.graph->getNumValues(), 0);
  std::vector<unsigned> paramStamp(problem.graph->getNumParams(), 0);
  for (unsigned i = n; i-- > 0;) {
    RangeScan scan(tables, i, valueStamp, paramStamp);
    while (scan.getEnd() < n) {
      scan.extend();
      unsigned j = scan.getEnd();
      for (unsigned r = 1; r <= std::min(numDevices, n - i); ++r) {
        if (best[r - 1][j] == unset)
          continue;
        uint64_t memory = std::max(scan.getMemory(r), best[r - 1][j]);
        best[r][i] = std::min(best[r][i], memory);
      }
    }
  }
  uint64_t result = unset;
  for (unsigned k = 1; k <= numDevices; ++k)
    result = std::min(result, best[k][0]);
  return result;
}

uint64_t mlir::pipe::partitioning::computeMemoryLowerBound(
    const PartitionProblem &problem) {
  const BlockGraph &graph = *problem.graph;
  // Recomputed stages hold one micro-batch's saved activations at a time.
  unsigned inFlight = problem.schedule.recompute
                          ? 1
                          : problem.schedule.getActivationsInFlight(1);
  double perTrainable = problem.memory.getBytesPerTrainableByte();
  auto paramMemory = [&](const ParamInfo &param) {
    return param.trainable ? param.bytes * perTrainable
                           : param.bytes * problem.memory.weightCopies;
  };
  double total = 0, largest = 0;
  for (const ParamInfo &param : graph.getParams())
    total += paramMemory(param);
  for (const BlockNode &node : graph.getNodes()) {
    double own = double(node.savedBytes) * inFlight;
    for (unsigned p : node.params)
      own += paramMemory(graph.getParam(p));
    total += double(node.savedBytes) * inFlight;
    largest = std::max(largest, own);
  }
  return uint64_t(std::ceil(std::max(total / problem.cluster.size(), largest)));
}

llvm::Error
mlir::pipe::partitioning::makeInfeasibleError(const PartitionProblem &problem,
                                              llvm::StringRef algorithm) {
  uint64_t usable = getMaxUsableBytes(problem.cluster);
  uint64_t reserved = 0;
  for (const DeviceInfo &d : problem.cluster.devices)
    reserved = std::max(reserved, d.reservedBytes);
  std::optional<uint64_t> contiguous = computeMinContiguousMemory(problem);
  uint64_t bound = computeMemoryLowerBound(problem);
  std::string message = llvm::formatv(
      "{0}: no partition of {1} blocks over {2} devices fits in memory "
      "({3} usable per device, {4} optimizer, {5} schedule with {6} "
      "micro-batches)",
      algorithm, problem.graph->getNumNodes(), problem.cluster.size(),
      formatBytes(usable), problem.memory.name,
      problem.schedule.getKind(),
      problem.schedule.microbatches);
  if (contiguous)
    message += llvm::formatv("; a contiguous split needs at least {0} "
                             "per device ({1} B)",
                             formatBytes(*contiguous + reserved),
                             *contiguous + reserved)
                   .str();
  message += llvm::formatv("; no partition fits in less than {0} per device "
                           "({1} B)",
                           formatBytes(bound + reserved), bound + reserved)
                 .str();
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

namespace {

class SeqPartitioner : public Partitioner {
public:
  llvm::StringRef getName() const override { return "seq"; }

  llvm::Expected<Partition>
  partition(const PartitionProblem &problem,
            std::vector<std::string> &notes) const override {
    if (std::optional<Partition> fixed = getPartitionFixedBySchedule(problem)) {
      notes.push_back(llvm::formatv("seq: schedule {0} prescribes the "
                                    "placement",
                                    problem.schedule.getKind())
                          .str());
      return *fixed;
    }
    std::vector<SeqSplit> splits = computeSeqSplits(problem);
    if (splits.empty())
      return makeInfeasibleError(problem, "seq");
    bool homogeneous = problem.cluster.isHomogeneous();
    std::vector<Partition> candidates;
    for (SeqSplit &split : splits) {
      candidates.push_back(split.partition);
      // On equal devices use the first k, which reads better.
      if (homogeneous)
        for (auto [s, d] : llvm::enumerate(candidates.back().deviceOf))
          d = s;
    }
    std::vector<Evaluation> evals;
    unsigned best = rankCandidates(problem, candidates, evals);
    notes.push_back(llvm::formatv("seq: {0} feasible stage counts, best {1} "
                                  "stages, step {2}",
                                  splits.size(), splits[best].numStages,
                                  formatSeconds(evals[best].stepSeconds))
                        .str());
    return candidates[best];
  }
};

} // namespace

std::unique_ptr<Partitioner> mlir::pipe::partitioning::createSeqPartitioner() {
  return std::make_unique<SeqPartitioner>();
}
