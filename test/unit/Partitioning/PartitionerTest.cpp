//===- PartitionerTest.cpp - Property tests of the partitioners -----------===//
//
// Random block graphs of the shapes partitioners meet (chains, residual
// diamonds, encoder-decoders whose decoder layers all read the encoder
// output, random DAGs, tied parameters) on random clusters; every result
// is checked by code independent of the evaluator where it matters
// (placement, acyclicity, memory).
//
//===----------------------------------------------------------------------===//

#include "pipe/Partitioning/Partitioner.h"
#include "pipe/Partitioning/Algorithms.h"

#include "llvm/ADT/STLExtras.h"

#include "gtest/gtest.h"

#include <cmath>
#include <map>
#include <random>
#include <set>

using namespace mlir::pipe::partitioning;

namespace {

constexpr uint64_t MiB = 1ull << 20;

enum class Shape { Chain, Diamonds, EncoderDecoder, Random };

const char *getShapeName(Shape shape) {
  switch (shape) {
  case Shape::Chain:
    return "chain";
  case Shape::Diamonds:
    return "diamonds";
  case Shape::EncoderDecoder:
    return "encoder-decoder";
  case Shape::Random:
    return "random";
  }
  return "?";
}

class GraphMaker {
public:
  GraphMaker(std::mt19937 &rng, bool tieParams) : rng(rng), tie(tieParams) {}

  unsigned node() {
    BlockNode n;
    n.name = "n" + std::to_string(graph.getNumNodes());
    // One block in ten costs nothing (views, reshapes).
    if (uniform(0, 1) >= 0.1) {
      n.forwardFlops = uniform(0.2e9, 5e9);
      n.backwardInputFlops = n.forwardFlops * uniform(0.5, 1.5);
      n.backwardWeightFlops = n.forwardFlops * uniform(0, 1);
    }
    n.savedBytes = uint64_t(uniform(0, 32)) * MiB;
    if (uniform(0, 1) < 0.7) {
      if (tie && graph.getNumParams() > 0 && uniform(0, 1) < 0.3)
        n.params.push_back(std::uniform_int_distribution<unsigned>(
            0, graph.getNumParams() - 1)(rng));
      else
        n.params.push_back(graph.addParam(
            "w" + std::to_string(graph.getNumParams()),
            uint64_t(uniform(1, 128)) * MiB, uniform(0, 1) < 0.9));
    }
    return graph.addNode(n);
  }

  uint64_t bytes() { return uint64_t(uniform(1, 48)) * MiB; }
  void edge(unsigned a, unsigned b) { graph.addEdge(a, b, bytes()); }
  double uniform(double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  }

  BlockGraph make(Shape shape, unsigned n) {
    switch (shape) {
    case Shape::Chain: {
      unsigned prev = node();
      for (unsigned i = 1; i < n; ++i) {
        unsigned next = node();
        edge(prev, next);
        prev = next;
      }
      break;
    }
    case Shape::Diamonds: {
      unsigned x = node();
      while (graph.getNumNodes() + 3 <= n) {
        unsigned a = node(), b = node(), y = node();
        edge(x, a);
        edge(x, b);
        edge(a, y);
        edge(b, y);
        if (uniform(0, 1) < 0.5)
          edge(x, y); // residual
        x = y;
      }
      break;
    }
    case Shape::EncoderDecoder: {
      unsigned k = std::max(2u, n / 2 - 1);
      unsigned embedding = node();
      unsigned prev = embedding;
      for (unsigned i = 1; i < k; ++i) {
        unsigned next = node();
        edge(prev, next);
        prev = next;
      }
      // The encoder output is one value read by every decoder layer.
      unsigned encoderOut = graph.addValue(prev, bytes());
      unsigned decoderEmbedding = node();
      // Tied input embedding.
      if (!graph.getNode(embedding).params.empty()) {
        graph.getNode(decoderEmbedding).params.clear();
        graph.getNode(decoderEmbedding)
            .params.push_back(graph.getNode(embedding).params.front());
      }
      prev = decoderEmbedding;
      for (unsigned i = 0; i < k; ++i) {
        unsigned next = node();
        edge(prev, next);
        graph.addUse(encoderOut, next);
        prev = next;
      }
      break;
    }
    case Shape::Random: {
      node();
      for (unsigned i = 1; i < n; ++i) {
        unsigned v = node();
        unsigned numPreds = 1 + (uniform(0, 1) < 0.4) + (uniform(0, 1) < 0.2);
        std::set<unsigned> preds;
        for (unsigned j = 0; j < numPreds; ++j)
          preds.insert(std::uniform_int_distribution<unsigned>(
              i > 5 ? i - 5 : 0, i - 1)(rng));
        for (unsigned p : preds)
          edge(p, v);
      }
      break;
    }
    }
    EXPECT_FALSE(bool(graph.finalize()));
    return std::move(graph);
  }

private:
  std::mt19937 &rng;
  bool tie;
  BlockGraph graph;
};

/// A cluster whose memory is between tight and roomy for `graph`.
PartitionProblem makeProblem(const BlockGraph &graph, unsigned devices,
                             ScheduleFamily family, unsigned m,
                             std::mt19937 &rng) {
  PartitionProblem problem;
  problem.graph = &graph;
  problem.schedule.family = family;
  problem.schedule.microbatches = m;
  problem.schedule.weightStashing =
      family == ScheduleFamily::Async && rng() % 2;
  problem.memory = rng() % 2 ? TrainingMemory::adamw() : TrainingMemory::sgd();
  problem.schedule.recompute = rng() % 3 == 0;
  std::uniform_real_distribution<double> u(0, 1);
  double bandwidth = 2e9 + 1e10 * u(rng);
  // Size memory from a plain estimate: parameters with the optimizer, and
  // activations at a middling depth.
  double total = 0, largest = 0;
  unsigned inFlight = family == ScheduleFamily::GPipe ? m : devices;
  for (const ParamInfo &p : graph.getParams())
    total += p.bytes * problem.memory.getBytesPerTrainableByte();
  for (const BlockNode &n : graph.getNodes()) {
    double own = double(n.savedBytes) * inFlight;
    for (unsigned p : n.params)
      own += graph.getParam(p).bytes *
             problem.memory.getBytesPerTrainableByte() * 2;
    total += double(n.savedBytes) * inFlight;
    largest = std::max(largest, own);
  }
  double capacity =
      std::max(largest, total / devices * (1.2 + 1.5 * u(rng))) + 64 * MiB;
  problem.cluster =
      ClusterInfo::uniform(devices, uint64_t(capacity), 1e12, bandwidth, 1e-5);
  return problem;
}

/// Independent checks of the documented guarantees.
void checkPartition(const PartitionProblem &problem, const Partition &p,
                    const std::string &context) {
  SCOPED_TRACE(context);
  const BlockGraph &graph = *problem.graph;
  unsigned n = graph.getNumNodes();
  unsigned numStages = p.getNumStages();
  // Every block placed exactly once, in an existing stage; no empty stage.
  ASSERT_EQ(p.stageOf.size(), n);
  std::vector<unsigned> count(numStages, 0);
  for (unsigned s : p.stageOf) {
    ASSERT_LT(s, numStages);
    count[s]++;
  }
  for (unsigned s = 0; s < numStages; ++s) {
    EXPECT_GT(count[s], 0u) << "stage " << s << " is empty";
    ASSERT_LT(p.deviceOf[s], problem.cluster.size());
  }

  // The stage graph is acyclic (Kahn on edges from the raw values).
  std::set<std::pair<unsigned, unsigned>> edges;
  for (const BlockValue &v : graph.getValues())
    for (unsigned c : v.consumers)
      if (p.stageOf[v.producer] != p.stageOf[c])
        edges.insert({p.stageOf[v.producer], p.stageOf[c]});
  std::vector<unsigned> indegree(numStages, 0), order;
  for (auto [a, b] : edges)
    indegree[b]++;
  for (unsigned s = 0; s < numStages; ++s)
    if (!indegree[s])
      order.push_back(s);
  for (unsigned i = 0; i < order.size(); ++i)
    for (auto [a, b] : edges)
      if (a == order[i] && --indegree[b] == 0)
        order.push_back(b);
  ASSERT_EQ(order.size(), numStages) << "stage graph has a cycle";

  // Memory fits every device, recomputed from the documented formula.
  std::vector<unsigned> height(numStages, 1);
  for (unsigned s : llvm::reverse(order))
    for (auto [a, b] : edges)
      if (a == s)
        height[s] = std::max(height[s], height[b] + 1);
  std::vector<std::set<unsigned>> deviceParams(problem.cluster.size()),
      stageParams(numStages);
  std::vector<double> memory(problem.cluster.size(), 0);
  std::vector<double> saved(numStages, 0), inputs(numStages, 0);
  for (unsigned v = 0; v < n; ++v) {
    unsigned s = p.stageOf[v];
    for (unsigned param : graph.getNode(v).params) {
      deviceParams[p.deviceOf[s]].insert(param);
      stageParams[s].insert(param);
    }
    saved[s] += graph.getNode(v).savedBytes;
  }
  for (const BlockValue &v : graph.getValues()) {
    std::set<unsigned> readers;
    for (unsigned c : v.consumers)
      if (p.stageOf[c] != p.stageOf[v.producer])
        readers.insert(p.stageOf[c]);
    for (unsigned s : readers)
      inputs[s] += v.bytes;
  }
  for (unsigned s = 0; s < numStages; ++s) {
    unsigned inFlight = problem.schedule.getActivationsInFlight(height[s]);
    memory[p.deviceOf[s]] += problem.schedule.recompute && height[s] > 1
                                 ? inputs[s] * inFlight + saved[s]
                                 : saved[s] * inFlight;
  }
  for (unsigned d = 0; d < problem.cluster.size(); ++d)
    for (unsigned param : deviceParams[d]) {
      const ParamInfo &info = graph.getParam(param);
      memory[d] += info.trainable
                       ? info.bytes * problem.memory.getBytesPerTrainableByte()
                       : info.bytes * problem.memory.weightCopies;
    }
  for (unsigned s = 0; s < numStages; ++s)
    for (unsigned param : stageParams[s])
      if (graph.getParam(param).trainable)
        memory[p.deviceOf[s]] +=
            double(problem.schedule.getWeightVersions(height[s]) - 1) *
            graph.getParam(param).bytes;
  for (unsigned d = 0; d < problem.cluster.size(); ++d)
    EXPECT_LE(memory[d],
              double(problem.cluster.devices[d].getUsableBytes()) + 1)
        << "device " << d << " over capacity";
}

struct Config {
  Shape shape;
  unsigned nodes;
  unsigned devices;
  ScheduleFamily family;
  unsigned microbatches;
};

// The central properties on many random problems.
TEST(Partitioners, RandomGraphProperties) {
  std::mt19937 rng(20240611);
  unsigned solved = 0, mixedBeatSeq = 0, multiStageDevices = 0;
  for (unsigned trial = 0; trial < 120; ++trial) {
    Shape shape = Shape(trial % 4);
    unsigned n = 6 + rng() % 30;
    unsigned devices = 2 + rng() % 5;
    ScheduleFamily family = ScheduleFamily(rng() % 3);
    unsigned m = 1 + rng() % 8;
    GraphMaker maker(rng, /*tieParams=*/trial % 3 == 0);
    BlockGraph graph = maker.make(shape, n);
    PartitionProblem problem = makeProblem(graph, devices, family, m, rng);
    std::string context = std::string(getShapeName(shape)) +
                          " n=" + std::to_string(graph.getNumNodes()) +
                          " P=" + std::to_string(devices) + " " +
                          ScheduleModel::getFamilyName(family).str() +
                          " m=" + std::to_string(m) + " trial " +
                          std::to_string(trial);
    SCOPED_TRACE(context);

    llvm::Expected<PartitionResult> seq = runPartitioner("seq", problem);
    llvm::Expected<PartitionResult> mixed = runPartitioner("mixed", problem);
    if (seq) {
      checkPartition(problem, seq->partition, "seq");
      // Seq is contiguous: one stage per used device, in order.
      EXPECT_EQ(seq->partition.getNumStages(),
                seq->partition.getNumUsedDevices());
      ASSERT_TRUE(bool(mixed)) << llvm::toString(mixed.takeError());
    } else {
      std::string message = llvm::toString(seq.takeError());
      EXPECT_NE(message.find("per device"), std::string::npos) << message;
    }
    if (!mixed) {
      std::string message = llvm::toString(mixed.takeError());
      EXPECT_NE(message.find("no partition fits in less than"),
                std::string::npos)
          << message;
      continue;
    }
    ++solved;
    checkPartition(problem, mixed->partition, "mixed");
    // The evaluation the driver returns is the evaluator's.
    Evaluation again = evaluate(problem, mixed->partition);
    EXPECT_DOUBLE_EQ(again.stepSeconds, mixed->evaluation.stepSeconds);
    if (seq) {
      EXPECT_LE(mixed->evaluation.stepSeconds,
                seq->evaluation.stepSeconds * (1 + 1e-9));
      if (mixed->evaluation.stepSeconds <
          seq->evaluation.stepSeconds * (1 - 1e-6))
        ++mixedBeatSeq;
    }
    for (const DeviceReport &d : mixed->evaluation.devices)
      if (d.numStages > 1) {
        ++multiStageDevices;
        break;
      }
  }
  // The generator must produce mostly solvable problems, and Mixed-Pipe
  // must find better answers than seq on some of them.
  EXPECT_GT(solved, 80u);
  EXPECT_GT(mixedBeatSeq, 10u);
  EXPECT_GT(multiStageDevices, 5u);
  std::printf("[ partition ] %u/120 solved; mixed better than seq on %u; a "
              "device with several stages in %u\n",
              solved, mixedBeatSeq, multiStageDevices);
}

// Seq's dynamic program is optimal among contiguous splits: brute force over
// all compositions of small chains.
TEST(Partitioners, SeqIsOptimalAmongContiguousSplits) {
  std::mt19937 rng(7);
  for (unsigned trial = 0; trial < 60; ++trial) {
    unsigned n = 2 + rng() % 8;
    unsigned devices = 1 + rng() % 4;
    ScheduleFamily family = ScheduleFamily(rng() % 3);
    unsigned m = 1 + rng() % 6;
    GraphMaker maker(rng, /*tieParams=*/false);
    BlockGraph graph = maker.make(Shape::Chain, n);
    PartitionProblem problem = makeProblem(graph, devices, family, m, rng);
    SCOPED_TRACE("trial " + std::to_string(trial));

    // Brute force: every way to cut n blocks into k <= P contiguous stages,
    // stage i on device i.
    std::map<unsigned, double> bestBottleneck;
    double bestAsyncStep = HUGE_VAL;
    for (unsigned mask = 0; mask < (1u << (n - 1)); ++mask) {
      Partition p;
      unsigned stage = 0;
      p.deviceOf.push_back(0);
      for (unsigned i = 0; i < n; ++i) {
        if (i > 0 && (mask >> (i - 1)) & 1) {
          ++stage;
          p.deviceOf.push_back(stage);
        }
        p.stageOf.push_back(stage);
      }
      if (p.getNumStages() > devices)
        continue;
      Evaluation e = evaluate(problem, p);
      if (!e.isFeasible())
        continue;
      unsigned k = p.getNumStages();
      if (!bestBottleneck.count(k) || e.bottleneckSeconds < bestBottleneck[k])
        bestBottleneck[k] = e.bottleneckSeconds;
      bestAsyncStep = std::min(bestAsyncStep, e.stepSeconds);
    }

    std::vector<SeqSplit> splits = computeSeqSplits(problem);
    EXPECT_EQ(splits.size(), bestBottleneck.size());
    for (const SeqSplit &split : splits) {
      ASSERT_TRUE(bestBottleneck.count(split.numStages));
      EXPECT_NEAR(split.bottleneckSeconds, bestBottleneck[split.numStages],
                  1e-9 * bestBottleneck[split.numStages]);
      Evaluation e = evaluate(problem, split.partition);
      EXPECT_TRUE(e.isFeasible());
      EXPECT_NEAR(e.bottleneckSeconds, split.bottleneckSeconds,
                  1e-9 * split.bottleneckSeconds);
    }
    llvm::Expected<PartitionResult> seq = runPartitioner("seq", problem);
    if (bestBottleneck.empty()) {
      EXPECT_FALSE(bool(seq));
      llvm::consumeError(seq.takeError());
      continue;
    }
    ASSERT_TRUE(bool(seq)) << llvm::toString(seq.takeError());
    // Under async the step is m x bottleneck: seq must hit the optimum.
    if (family == ScheduleFamily::Async) {
      EXPECT_NEAR(seq->evaluation.stepSeconds, bestAsyncStep,
                  1e-9 * bestAsyncStep);
    }
  }
}

// Mixed against the exhaustive optimum on small graphs: exact <= mixed
// always (mixed's answers lie in exact's search space), and the gap is
// reported.
TEST(Partitioners, MixedGapToExactOnSmallGraphs) {
  std::mt19937 rng(99);
  double sumGap = 0, maxGap = 0;
  unsigned count = 0, optimal = 0;
  for (unsigned trial = 0; trial < 40; ++trial) {
    Shape shape = Shape(trial % 4);
    unsigned n = 4 + rng() % 4;
    unsigned devices = 2 + rng() % 2;
    ScheduleFamily family = ScheduleFamily(rng() % 3);
    unsigned m = 1 + rng() % 6;
    GraphMaker maker(rng, /*tieParams=*/trial % 2 == 0);
    BlockGraph graph = maker.make(shape, n);
    PartitionProblem problem = makeProblem(graph, devices, family, m, rng);
    SCOPED_TRACE(std::string(getShapeName(shape)) + " trial " +
                 std::to_string(trial));
    llvm::Expected<PartitionResult> exact = runPartitioner("exact", problem);
    llvm::Expected<PartitionResult> mixed = runPartitioner("mixed", problem);
    if (!exact) {
      // Exact is complete: if it finds nothing, nothing exists.
      llvm::consumeError(exact.takeError());
      EXPECT_FALSE(bool(mixed));
      if (!mixed)
        llvm::consumeError(mixed.takeError());
      continue;
    }
    ASSERT_TRUE(bool(mixed)) << llvm::toString(mixed.takeError());
    checkPartition(problem, exact->partition, "exact");
    double e = exact->evaluation.stepSeconds;
    double x = mixed->evaluation.stepSeconds;
    EXPECT_LE(e, x * (1 + 1e-9));
    double gap = x / e - 1;
    sumGap += gap;
    maxGap = std::max(maxGap, gap);
    optimal += gap < 1e-9;
    ++count;
  }
  ASSERT_GT(count, 20u);
  std::printf("[ partition ] mixed vs exact on %u small graphs: optimal on "
              "%u, mean gap %.2f%%, max gap %.2f%%\n",
              count, optimal, 100 * sumGap / count, 100 * maxGap);
}

// The textbook case: a contiguous split cannot balance [1, 1, 8, 8], a
// mixed one can by giving each device a light and a heavy block.
TEST(Partitioners, MixedPutsNonAdjacentStagesOnADevice) {
  BlockGraph graph;
  for (double flops : {1e9, 1e9, 8e9, 8e9}) {
    BlockNode node{"b" + std::to_string(graph.getNumNodes())};
    node.forwardFlops = flops;
    node.backwardInputFlops = flops;
    graph.addNode(node);
  }
  for (unsigned i = 1; i < 4; ++i)
    graph.addEdge(i - 1, i, 1000);
  ASSERT_FALSE(bool(graph.finalize()));
  PartitionProblem problem;
  problem.graph = &graph;
  problem.cluster = ClusterInfo::uniform(2, 1ull << 30, 1e12, 1e10);
  problem.schedule.family = ScheduleFamily::Async;
  problem.schedule.microbatches = 4;
  llvm::Expected<PartitionResult> seq = runPartitioner("seq", problem);
  llvm::Expected<PartitionResult> mixed = runPartitioner("mixed", problem);
  ASSERT_TRUE(seq && mixed);
  // Seq: {1, 1, 8} | {8} -> 20 ms per micro-batch on the bottleneck.
  EXPECT_NEAR(seq->evaluation.bottleneckSeconds, 20e-3, 1e-4);
  // Mixed: {1, 8} on each device -> 18 ms plus tiny transfers.
  EXPECT_NEAR(mixed->evaluation.bottleneckSeconds, 18e-3, 1e-4);
  // E.g. {b0, b3} on one device (two stages), {b1, b2} on the other: the
  // cheapest such answer has three stages and two transfers.
  EXPECT_EQ(mixed->partition.getNumStages(), 3u);
  EXPECT_EQ(mixed->evaluation.devices[0].numStages +
                mixed->evaluation.devices[1].numStages,
            3u);
  EXPECT_EQ(std::max(mixed->evaluation.devices[0].numStages,
                     mixed->evaluation.devices[1].numStages),
            2u);
}

TEST(Partitioners, InfeasibleReportsTheMemoryThatWouldWork) {
  std::mt19937 rng(3);
  GraphMaker maker(rng, false);
  BlockGraph graph = maker.make(Shape::Chain, 12);
  PartitionProblem problem =
      makeProblem(graph, 3, ScheduleFamily::OneFOneB, 4, rng);
  problem.cluster = ClusterInfo::uniform(3, 16 * MiB, 1e12, 1e10);
  llvm::Expected<PartitionResult> seq = runPartitioner("seq", problem);
  ASSERT_FALSE(bool(seq));
  std::string message = llvm::toString(seq.takeError());
  size_t at = message.find("a contiguous split needs at least");
  ASSERT_NE(at, std::string::npos) << message;
  size_t open = message.find('(', at);
  uint64_t needed = std::stoull(message.substr(open + 1));
  // Exactly that much works; one byte less does not.
  problem.cluster = ClusterInfo::uniform(3, needed, 1e12, 1e10);
  llvm::Expected<PartitionResult> fits = runPartitioner("seq", problem);
  EXPECT_TRUE(bool(fits)) << llvm::toString(fits.takeError());
  problem.cluster = ClusterInfo::uniform(3, needed - 1, 1e12, 1e10);
  llvm::Expected<PartitionResult> tight = runPartitioner("seq", problem);
  EXPECT_FALSE(bool(tight));
  if (!tight)
    llvm::consumeError(tight.takeError());
  // Mixed fits at least wherever seq does.
  problem.cluster = ClusterInfo::uniform(3, needed, 1e12, 1e10);
  llvm::Expected<PartitionResult> mixed = runPartitioner("mixed", problem);
  EXPECT_TRUE(bool(mixed)) << llvm::toString(mixed.takeError());
}

TEST(Coarsening, LevelsAreAcyclicAndBounded) {
  std::mt19937 rng(5);
  for (unsigned trial = 0; trial < 40; ++trial) {
    Shape shape = Shape(trial % 4);
    GraphMaker maker(rng, trial % 2);
    BlockGraph graph = maker.make(shape, 20 + rng() % 60);
    PartitionProblem problem =
        makeProblem(graph, 4, ScheduleFamily::GPipe, 4, rng);
    std::vector<CoarseLevel> levels = coarsen(problem, {8, 12, 16, 24, 32});
    ASSERT_EQ(levels.size(), 5u);
    for (const CoarseLevel &level : levels) {
      SCOPED_TRACE(std::string(getShapeName(shape)) +
                   " L=" + std::to_string(level.target));
      EXPECT_LE(level.numGroups, level.target);
      EXPECT_GE(level.numGroups, 1u);
      std::vector<bool> used(level.numGroups, false);
      for (unsigned g : level.groupOf) {
        ASSERT_LT(g, level.numGroups);
        used[g] = true;
      }
      EXPECT_TRUE(llvm::all_of(used, [](bool b) { return b; }));
      // Group ids are a topological order of the quotient graph.
      for (const BlockValue &v : graph.getValues())
        for (unsigned c : v.consumers)
          EXPECT_LE(level.groupOf[v.producer], level.groupOf[c]);
      std::optional<std::vector<unsigned>> devices =
          assignGreedyBestFit(problem, level, 4);
      if (devices) {
        for (unsigned d : *devices)
          EXPECT_LT(d, 4u);
      }
    }
  }
}

class RoundRobin : public Partitioner {
public:
  llvm::StringRef getName() const override { return "test-round-robin"; }
  llvm::Expected<Partition>
  partition(const PartitionProblem &problem,
            std::vector<std::string> &) const override {
    Partition p;
    for (unsigned v : problem.graph->getTopologicalOrder()) {
      (void)v;
      p.deviceOf.push_back(p.deviceOf.size() % problem.cluster.size());
    }
    p.stageOf.resize(problem.graph->getNumNodes());
    for (auto [i, v] : llvm::enumerate(problem.graph->getTopologicalOrder()))
      p.stageOf[v] = i;
    return p;
  }
};

class Cyclic : public Partitioner {
public:
  llvm::StringRef getName() const override { return "test-cyclic"; }
  llvm::Expected<Partition>
  partition(const PartitionProblem &problem,
            std::vector<std::string> &) const override {
    // Alternate two stages along the order: cyclic for any chain >= 3.
    Partition p;
    p.deviceOf = {0, 0};
    for (unsigned v = 0; v < problem.graph->getNumNodes(); ++v)
      p.stageOf.push_back(problem.graph->getTopologicalPosition(v) % 2);
    return p;
  }
};

TEST(Registry, BuiltinsAndRuntimeRegistration) {
  std::string names = getPartitionerNames();
  EXPECT_NE(names.find("seq"), std::string::npos);
  EXPECT_NE(names.find("mixed"), std::string::npos);
  EXPECT_NE(names.find("exact"), std::string::npos);
  EXPECT_TRUE(
      registerPartitioner("test-round-robin", "one block per stage",
                          [] { return std::make_unique<RoundRobin>(); }));
  EXPECT_FALSE(registerPartitioner(
      "seq", "duplicate", [] { return std::make_unique<RoundRobin>(); }));
  registerPartitioner("test-cyclic", "broken on purpose",
                      [] { return std::make_unique<Cyclic>(); });

  std::mt19937 rng(1);
  GraphMaker maker(rng, false);
  BlockGraph graph = maker.make(Shape::Chain, 6);
  PartitionProblem problem =
      makeProblem(graph, 3, ScheduleFamily::GPipe, 2, rng);
  problem.cluster.devices.assign(3, DeviceInfo{"big", 1ull << 40, 0, 1e12});
  llvm::Expected<PartitionResult> rr =
      runPartitioner("test-round-robin", problem);
  ASSERT_TRUE(bool(rr)) << llvm::toString(rr.takeError());
  EXPECT_EQ(rr->partition.getNumStages(), 6u);
  checkPartition(problem, rr->partition, "round robin");

  llvm::Expected<PartitionResult> cyclic =
      runPartitioner("test-cyclic", problem);
  ASSERT_FALSE(bool(cyclic));
  EXPECT_NE(llvm::toString(cyclic.takeError()).find("cycle"),
            std::string::npos);
  llvm::Expected<PartitionResult> unknown = runPartitioner("nope", problem);
  ASSERT_FALSE(bool(unknown));
  EXPECT_NE(llvm::toString(unknown.takeError()).find("known: "),
            std::string::npos);
}

// The simulator hook ranks the final candidates when present.
TEST(Partitioners, StepTimeHookIsUsedForRanking) {
  std::mt19937 rng(11);
  GraphMaker maker(rng, false);
  BlockGraph graph = maker.make(Shape::Chain, 10);
  PartitionProblem problem =
      makeProblem(graph, 2, ScheduleFamily::GPipe, 4, rng);
  unsigned calls = 0;
  problem.stepTime = [&](const PartitionProblem &, const Partition &,
                         const Evaluation &e) -> std::optional<double> {
    ++calls;
    return e.analyticStepSeconds * 2;
  };
  llvm::Expected<PartitionResult> result = runPartitioner("mixed", problem);
  ASSERT_TRUE(bool(result)) << llvm::toString(result.takeError());
  EXPECT_GT(calls, 0u);
  EXPECT_TRUE(result->evaluation.simulated);
  EXPECT_NEAR(result->evaluation.stepSeconds,
              2 * result->evaluation.analyticStepSeconds, 1e-12);
}

} // namespace
