//===- Mixed.cpp - Mixed-Pipe partitioning (FTPipe) -----------------------===//
//
// FTPipe's Mixed-Pipe: coarsen the block graph to L groups, assign groups to
// devices by greedy best-fit on compute within memory, turn each device's
// blocks into stages (several, non-adjacent ones where acyclicity needs it),
// and refine by moving boundary blocks, first whole groups, then single
// blocks. Several L are tried and the seq answer (and its refinement) are
// always candidates, so the result is never worse than seq's.
//
//===----------------------------------------------------------------------===//

#include "pipe/Partitioning/Algorithms.h"
#include "pipe/Partitioning/Partitioner.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir::pipe::partitioning;

namespace {

/// Search effort knobs, sized so that a 2000-block graph on 8 devices
/// partitions in seconds.
constexpr unsigned kCoarseMoves = 64;
constexpr unsigned kFineMoves = 256;

/// The best contiguous split into `chunksPerDevice` x P chunks: seq's
/// dynamic program on a cluster of that many devices, each with 1/V of a
/// real device's memory.
std::optional<Partition> splitIntoChunks(const PartitionProblem &problem,
                                         unsigned chunksPerDevice) {
  const ClusterInfo &real = problem.cluster;
  unsigned numChunks = chunksPerDevice * real.size();
  if (real.size() < 2 || numChunks > problem.graph->getNumNodes())
    return std::nullopt;
  PartitionProblem chunked = problem;
  chunked.stepTime = nullptr;
  chunked.cluster.devices.clear();
  for (unsigned k = 0; k < numChunks; ++k) {
    DeviceInfo device = real.devices[k % real.size()];
    device.memoryBytes = device.getUsableBytes() / chunksPerDevice;
    device.reservedBytes = 0;
    chunked.cluster.devices.push_back(device);
  }
  chunked.cluster.bandwidth.assign(numChunks * numChunks,
                                   real.getMeanBandwidth());
  chunked.cluster.latency.assign(numChunks * numChunks, real.getMeanLatency());
  std::vector<SeqSplit> splits = computeSeqSplits(chunked);
  if (splits.empty() || splits.back().numStages != numChunks)
    return std::nullopt;
  Partition result = std::move(splits.back().partition);
  for (auto [s, d] : llvm::enumerate(result.deviceOf))
    d = s;
  return result;
}

class MixedPartitioner : public Partitioner {
public:
  llvm::StringRef getName() const override { return "mixed"; }

  llvm::Expected<Partition>
  partition(const PartitionProblem &problem,
            std::vector<std::string> &notes) const override {
    // Nothing to search; seq returns the prescribed placement.
    if (getPartitionFixedBySchedule(problem))
      return createSeqPartitioner()->partition(problem, notes);
    const BlockGraph &graph = *problem.graph;
    unsigned numDevices = problem.cluster.size();
    unsigned m = problem.schedule.microbatches;
    std::vector<unsigned> identity(graph.getNumNodes());
    for (unsigned v = 0; v < identity.size(); ++v)
      identity[v] = v;

    struct Candidate {
      std::string label;
      Partition partition;
      Evaluation eval;
    };
    std::vector<Candidate> candidates;
    auto addCandidate = [&](std::string label, Partition partition) {
      // The numbering the driver will return: schedule generators order
      // work by stage index, so simulate exactly what is returned.
      partition.canonicalize(graph);
      Evaluation eval = evaluate(problem, partition);
      candidates.push_back({std::move(label), std::move(partition), eval});
    };

    // The seq answer, as is and refined.
    std::vector<std::string> seqNotes;
    llvm::Expected<Partition> seq =
        createSeqPartitioner()->partition(problem, seqNotes);
    if (seq) {
      addCandidate("seq", *seq);
      std::vector<unsigned> refined = refineAssignment(
          problem, seq->getDeviceOfNodes(), identity, kFineMoves);
      addCandidate("seq+refine", formStages(problem, refined));
    } else {
      llvm::consumeError(seq.takeError());
    }

    // Contiguous splits into V x P chunks dealt to the devices round-robin
    // or zig-zag (0..P-1, P-1..0, ...): balanced, with every device holding
    // early and late chunks, as FTPipe's T5 partitions do.
    for (unsigned v : {2u, 3u}) {
      if (v == 3 && graph.getNumNodes() > 600)
        break;
      std::optional<Partition> split = splitIntoChunks(problem, v);
      if (!split)
        continue;
      for (bool zigzag : {false, true}) {
        std::vector<unsigned> devices(graph.getNumNodes());
        for (unsigned node = 0; node < devices.size(); ++node) {
          unsigned chunk = split->stageOf[node];
          unsigned round = chunk / numDevices, slot = chunk % numDevices;
          devices[node] = zigzag && round % 2 ? numDevices - 1 - slot : slot;
        }
        devices =
            refineAssignment(problem, std::move(devices), identity, kFineMoves);
        addCandidate(llvm::formatv("{0}x{1} chunks {2}", v, numDevices,
                                   zigzag ? "zig-zag" : "round-robin")
                         .str(),
                     formStages(problem, devices));
      }
    }

    // Coarsening levels 2P, 3P, 4P, 6P, 8P.
    std::vector<unsigned> targets;
    for (unsigned factor : {2u, 3u, 4u, 6u, 8u})
      targets.push_back(factor * numDevices);
    std::vector<CoarseLevel> levels = coarsen(problem, targets);

    // Activations in flight per group are not known before stages exist:
    // try the likely depth first, then more conservative ones.
    std::vector<unsigned> estimates;
    if (problem.schedule.family == ScheduleFamily::GPipe)
      estimates = {m};
    else
      estimates = {0, numDevices, 2 * numDevices, 4 * numDevices};
    if (problem.schedule.isSynchronous())
      for (unsigned &e : estimates)
        e = std::min(e, m);

    for (const CoarseLevel &level : levels) {
      bool found = false;
      for (unsigned estimate : estimates) {
        std::optional<std::vector<unsigned>> assignment =
            assignGreedyBestFit(problem, level, estimate);
        if (!assignment)
          continue;
        std::vector<unsigned> devices = refineAssignment(
            problem, std::move(*assignment), level.groupOf, kCoarseMoves);
        devices =
            refineAssignment(problem, std::move(devices), identity, kFineMoves);
        Partition partition = formStages(problem, devices);
        std::string label =
            llvm::formatv("L={0} ({1} groups, {2} in flight)", level.target,
                          level.numGroups, estimate)
                .str();
        addCandidate(label, std::move(partition));
        if (candidates.back().eval.isFeasible()) {
          found = true;
          break;
        }
      }
      if (!found)
        notes.push_back(
            llvm::formatv("mixed: L={0}: no feasible assignment", level.target)
                .str());
    }

    if (candidates.empty())
      return makeInfeasibleError(problem, "mixed");
    std::vector<Partition> partitions;
    for (const Candidate &c : candidates)
      partitions.push_back(c.partition);
    std::vector<Evaluation> evals;
    unsigned best = rankCandidates(problem, partitions, evals);
    for (auto [c, e] : llvm::zip(candidates, evals))
      notes.push_back(llvm::formatv("mixed: candidate {0}: {1} stages, step "
                                    "{2}{3}{4}",
                                    c.label, c.partition.getNumStages(),
                                    formatSeconds(e.stepSeconds),
                                    !e.simulated ? ""
                                    : std::isfinite(e.stepSeconds)
                                        ? " (simulated)"
                                        : " (the simulator cannot play it)",
                                    e.isFeasible() ? "" : " (infeasible)")
                          .str());
    if (!evals[best].isFeasible())
      return makeInfeasibleError(problem, "mixed");
    notes.push_back(
        llvm::formatv("mixed: chose {0}", candidates[best].label).str());
    return candidates[best].partition;
  }
};

} // namespace

std::unique_ptr<Partitioner>
mlir::pipe::partitioning::createMixedPartitioner() {
  return std::make_unique<MixedPartitioner>();
}
