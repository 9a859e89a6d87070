//===- EvaluationTest.cpp - The partitioning model and objective ----------===//

#include "pipe/Partitioning/Evaluation.h"
#include "pipe/Partitioning/Algorithms.h"
#include "pipe/Scheduling/ScheduleGenerator.h"

#include "llvm/ADT/StringExtras.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace mlir::pipe::partitioning;
using mlir::pipe::ScheduleTraits;

namespace {

constexpr uint64_t GiB = 1ull << 30;

/// A chain of `n` blocks of 1 GFLOP forward and 2 GFLOP backward on 1
/// TFLOP/s devices (1 ms + 2 ms), each saving `saved` bytes and owning a
/// parameter of `paramBytes`.
BlockGraph makeChain(unsigned n, uint64_t saved = 0, uint64_t paramBytes = 0,
                     uint64_t edgeBytes = 0) {
  BlockGraph graph;
  for (unsigned i = 0; i < n; ++i) {
    BlockNode node;
    node.name = "b" + std::to_string(i);
    node.forwardFlops = 1e9;
    node.backwardInputFlops = 1e9;
    node.backwardWeightFlops = 1e9;
    node.savedBytes = saved;
    if (paramBytes)
      node.params.push_back(
          graph.addParam("w" + std::to_string(i), paramBytes));
    graph.addNode(node);
    if (i > 0)
      graph.addEdge(i - 1, i, edgeBytes);
  }
  EXPECT_FALSE(bool(graph.finalize()));
  return graph;
}

PartitionProblem makeProblem(const BlockGraph &graph, unsigned devices,
                             ScheduleFamily family, unsigned m,
                             uint64_t memory = 64 * GiB,
                             double bandwidth = 1e10) {
  PartitionProblem problem;
  problem.graph = &graph;
  problem.cluster = ClusterInfo::uniform(devices, memory, 1e12, bandwidth);
  problem.schedule.family = family;
  problem.schedule.microbatches = m;
  problem.memory = TrainingMemory::adamw();
  return problem;
}

/// Stage i holds block i on device i % devices.
Partition onePerStage(unsigned n, unsigned devices) {
  Partition p;
  for (unsigned i = 0; i < n; ++i) {
    p.stageOf.push_back(i);
    p.deviceOf.push_back(i % devices);
  }
  return p;
}

TEST(PartitionProblem, FinalizeOrdersAndRejectsCycles) {
  BlockGraph graph;
  for (int i = 0; i < 3; ++i)
    graph.addNode(BlockNode{"n" + std::to_string(i)});
  graph.addEdge(2, 0, 4);
  graph.addEdge(0, 1, 4);
  ASSERT_FALSE(bool(graph.finalize()));
  EXPECT_EQ(graph.getTopologicalOrder(), llvm::ArrayRef<unsigned>({2, 0, 1}));
  EXPECT_EQ(graph.getTopologicalPosition(1), 2u);
  graph.addEdge(1, 2, 4);
  llvm::Error err = graph.finalize();
  ASSERT_TRUE(bool(err));
  EXPECT_NE(llvm::toString(std::move(err)).find("cycle"), std::string::npos);
}

TEST(PartitionProblem, FinalizeRejectsBadIndices) {
  BlockGraph graph;
  BlockNode node{"a"};
  node.params.push_back(3);
  graph.addNode(node);
  llvm::Error err = graph.finalize();
  ASSERT_TRUE(bool(err));
  EXPECT_NE(llvm::toString(std::move(err)).find("parameter #3"),
            std::string::npos);
}

TEST(PartitionProblem, OptimizerMultipliers) {
  EXPECT_EQ(TrainingMemory::sgd().getBytesPerTrainableByte(), 2);
  EXPECT_EQ(TrainingMemory::adamw().getBytesPerTrainableByte(), 4);
  EXPECT_LT(TrainingMemory::adafactor().getBytesPerTrainableByte(), 2.1);
  EXPECT_FALSE(TrainingMemory::lookup("lion"));
  EXPECT_EQ(TrainingMemory::lookup("adamw")->stateCopies, 2);
}

TEST(PartitionProblem, ActivationsInFlight) {
  ScheduleModel s;
  s.microbatches = 4;
  s.family = ScheduleFamily::GPipe;
  EXPECT_EQ(s.getActivationsInFlight(7), 4u);
  s.family = ScheduleFamily::OneFOneB;
  EXPECT_EQ(s.getActivationsInFlight(7), 4u);
  EXPECT_EQ(s.getActivationsInFlight(2), 2u);
  s.family = ScheduleFamily::Async;
  EXPECT_EQ(s.getActivationsInFlight(7), 7u);
  EXPECT_EQ(s.getWeightVersions(7), 1u);
  s.weightStashing = true;
  EXPECT_EQ(s.getWeightVersions(7), 7u);
  EXPECT_EQ(ScheduleModel::parseFamily("pipedream-async"),
            ScheduleFamily::Async);
  EXPECT_FALSE(ScheduleModel::parseFamily("nope"));
}

// GPipe's closed form: p equal stages of time t, m micro-batches, free
// communication: (m + p - 1) t. Async: m t.
TEST(Evaluation, ClosedFormsWithoutCommunication) {
  for (unsigned p : {1u, 2u, 4u})
    for (unsigned m : {1u, 4u, 8u}) {
      BlockGraph graph = makeChain(p);
      PartitionProblem problem =
          makeProblem(graph, p, ScheduleFamily::GPipe, m);
      Partition part = onePerStage(p, p);
      Evaluation e = evaluate(problem, part);
      double t = 3e-3;
      EXPECT_NEAR(e.bottleneckSeconds, t, 1e-12);
      EXPECT_NEAR(e.pathSeconds, p * t, 1e-12);
      EXPECT_NEAR(e.stepSeconds, (m + p - 1) * t, 1e-12);
      problem.schedule.family = ScheduleFamily::Async;
      EXPECT_NEAR(evaluate(problem, part).stepSeconds, m * t, 1e-12);
    }
}

// Communication hides behind compute per direction; only the excess shows.
TEST(Evaluation, NonOverlappedCommunication) {
  // 1 ms forward, 2 ms backward, edges of 1.5e7 bytes at 1e10 B/s = 1.5 ms.
  BlockGraph graph = makeChain(2, 0, 0, 15000000);
  PartitionProblem problem = makeProblem(graph, 2, ScheduleFamily::Async, 1);
  Evaluation e = evaluate(problem, onePerStage(2, 2));
  // 1 + 2 + (1.5 - 1) + 0 ms on each device.
  EXPECT_NEAR(e.devices[0].costSeconds, 3.5e-3, 1e-12);
  EXPECT_NEAR(e.devices[1].costSeconds, 3.5e-3, 1e-12);
  EXPECT_EQ(e.commBytesPerMicrobatch, 15000000u);
  // Path: both stages plus the edge both ways.
  EXPECT_NEAR(e.pathSeconds, 6e-3 + 3e-3, 1e-12);
  // On one device nothing crosses.
  Partition same({0, 1}, {0, 0});
  Evaluation e2 = evaluate(problem, same);
  EXPECT_EQ(e2.commBytesPerMicrobatch, 0u);
  EXPECT_NEAR(e2.devices[0].costSeconds, 6e-3, 1e-12);
}

TEST(Evaluation, MemoryPerSchedule) {
  // 4 blocks, 1 MiB saved each, 1 MiB parameters each, 4 stages on 4
  // devices: stage s has height 4 - s.
  const uint64_t MiB = 1 << 20;
  BlockGraph graph = makeChain(4, MiB, MiB);
  Partition part = onePerStage(4, 4);
  for (auto [family, m] : {std::pair{ScheduleFamily::GPipe, 8u},
                           std::pair{ScheduleFamily::OneFOneB, 2u},
                           std::pair{ScheduleFamily::Async, 8u}}) {
    PartitionProblem problem = makeProblem(graph, 4, family, m);
    Evaluation e = evaluate(problem, part);
    for (unsigned s = 0; s < 4; ++s) {
      unsigned h = 4 - s;
      unsigned inFlight = family == ScheduleFamily::GPipe      ? m
                          : family == ScheduleFamily::OneFOneB ? std::min(m, h)
                                                               : h;
      EXPECT_EQ(e.stages[s].height, h);
      EXPECT_EQ(e.devices[s].memoryBytes, 4 * MiB + inFlight * MiB)
          << "stage " << s;
    }
  }
  // Weight stashing keeps h versions of the weights.
  PartitionProblem problem = makeProblem(graph, 4, ScheduleFamily::Async, 8);
  problem.schedule.weightStashing = true;
  Evaluation e = evaluate(problem, part);
  EXPECT_EQ(e.devices[0].memoryBytes, 4 * MiB + 3 * MiB + 4 * MiB);
  // Over capacity is infeasible.
  problem.cluster = ClusterInfo::uniform(4, 10 * MiB, 1e12, 1e10);
  EXPECT_FALSE(evaluate(problem, part).fitsMemory);
}

// Stage recomputation: non-sink stages keep their inputs per micro-batch
// in flight plus one micro-batch's saved activations, and pay the forward
// again in the backward.
TEST(Evaluation, StageRecomputation) {
  const uint64_t MiB = 1 << 20;
  BlockGraph graph = makeChain(3, 8 * MiB, 0, MiB);
  PartitionProblem problem = makeProblem(graph, 3, ScheduleFamily::GPipe, 4);
  problem.schedule.recompute = true;
  Evaluation e = evaluate(problem, onePerStage(3, 3));
  EXPECT_TRUE(e.stages[0].recomputed);
  EXPECT_FALSE(e.stages[2].recomputed);
  EXPECT_EQ(e.devices[0].activationMemoryBytes, 8 * MiB);
  EXPECT_EQ(e.devices[1].activationMemoryBytes, 4 * MiB + 8 * MiB);
  EXPECT_EQ(e.devices[2].activationMemoryBytes, 4 * 8 * MiB);
  EXPECT_NEAR(e.stages[1].backwardSeconds, 3e-3, 1e-12);
  EXPECT_NEAR(e.stages[2].backwardSeconds, 2e-3, 1e-12);
}

TEST(Evaluation, SharedParametersCountOnceAndReduce) {
  // Blocks 0 and 2 read the same 4 MB parameter (tied embedding).
  BlockGraph graph;
  unsigned w = graph.addParam("wte", 4000000);
  for (int i = 0; i < 3; ++i) {
    BlockNode node{"n" + std::to_string(i)};
    node.forwardFlops = 1e9;
    if (i != 1)
      node.params.push_back(w);
    graph.addNode(node);
  }
  graph.addEdge(0, 1, 0);
  graph.addEdge(1, 2, 0);
  ASSERT_FALSE(bool(graph.finalize()));
  PartitionProblem problem = makeProblem(graph, 2, ScheduleFamily::GPipe, 1,
                                         64 * GiB, /*bandwidth=*/1e9);
  problem.memory = TrainingMemory::sgd();

  // Both readers on device 0 (two stages there): held once, no reduction.
  Evaluation same = evaluate(problem, Partition({0, 1, 2}, {0, 1, 0}));
  EXPECT_EQ(same.devices[0].paramBytes, 4000000u);
  EXPECT_EQ(same.devices[0].paramMemoryBytes, 8000000u);
  EXPECT_EQ(same.numSplitParams, 0u);
  EXPECT_EQ(same.reductionSeconds, 0);

  // Split across devices: each holds it and its gradient is all-reduced:
  // 2 (k-1)/k bytes / bandwidth = 4 ms for k = 2.
  Evaluation split = evaluate(problem, Partition({0, 0, 1}, {0, 1}));
  EXPECT_EQ(split.devices[1].paramBytes, 4000000u);
  EXPECT_EQ(split.numSplitParams, 1u);
  EXPECT_NEAR(split.reductionSeconds, 4e-3, 1e-12);
  EXPECT_EQ(split.reductionBytes, 8000000u);
  EXPECT_NEAR(split.stepSeconds - split.analyticStepSeconds, 0, 1e-15);
}

TEST(Evaluation, DetectsCyclesAndIgnoresEmptyStages) {
  BlockGraph graph = makeChain(3);
  PartitionProblem problem = makeProblem(graph, 2, ScheduleFamily::GPipe, 2);
  // Blocks 0 and 2 in one stage, block 1 in another: 0 -> 1 -> 2 cycles.
  Evaluation e = evaluate(problem, Partition({0, 1, 0}, {0, 1}));
  EXPECT_FALSE(e.acyclic);
  EXPECT_FALSE(e.isFeasible());
  Partition withEmpty({0, 2, 2}, {0, 1, 1});
  Evaluation e2 = evaluate(problem, withEmpty);
  EXPECT_TRUE(e2.isFeasible());
  withEmpty.canonicalize(graph);
  EXPECT_EQ(withEmpty.getNumStages(), 2u);
  EXPECT_EQ(withEmpty.stageOf, (std::vector<unsigned>{0, 1, 1}));
}

TEST(Evaluation, RankingPrefersFeasibleThenTimeThenCommunication) {
  Evaluation a, b;
  a.stepSeconds = b.stepSeconds = 1;
  a.commBytesPerMicrobatch = 10;
  b.commBytesPerMicrobatch = 20;
  EXPECT_TRUE(isBetter(a, b, 4));
  EXPECT_FALSE(isBetter(b, a, 4));
  b.stepSeconds = 0.5;
  EXPECT_TRUE(isBetter(b, a, 4));
  b.fitsMemory = false;
  EXPECT_TRUE(isBetter(a, b, 4));
  // An unplayable candidate (infinite step) loses to any finite one.
  Evaluation c = a;
  c.stepSeconds = HUGE_VAL;
  c.commBytesPerMicrobatch = 0;
  EXPECT_TRUE(isBetter(a, c, 4));
  EXPECT_FALSE(isBetter(c, a, 4));
}

TEST(StageFormation, NonAdjacentStagesShareADevice) {
  BlockGraph graph = makeChain(4);
  PartitionProblem problem = makeProblem(graph, 2, ScheduleFamily::GPipe, 4);
  Partition p = formStages(problem, {0, 0, 1, 0});
  EXPECT_EQ(p.stageOf, (std::vector<unsigned>{0, 0, 1, 2}));
  EXPECT_EQ(p.deviceOf, (std::vector<unsigned>{0, 1, 0}));
  EXPECT_TRUE(evaluate(problem, p).acyclic);
}

TEST(StageFormation, MergesParallelBranchesOnOneDevice) {
  // A diamond 0 -> {1, 2} -> 3 with only 1 on device 1: 2 joins 0's stage,
  // but 3 may not (1 lies between them), so device 0 hosts two stages.
  BlockGraph graph;
  for (int i = 0; i < 4; ++i)
    graph.addNode(BlockNode{"n" + std::to_string(i)});
  graph.addEdge(0, 1, 1);
  graph.addEdge(0, 2, 1);
  graph.addEdge(1, 3, 1);
  graph.addEdge(2, 3, 1);
  ASSERT_FALSE(bool(graph.finalize()));
  PartitionProblem problem = makeProblem(graph, 2, ScheduleFamily::GPipe, 4);
  Partition p = formStages(problem, {0, 1, 0, 0});
  // 0 and 2 join; 3 cannot join {0, 2} (1 is in between on device 1).
  EXPECT_EQ(p.getNumStages(), 3u);
  EXPECT_EQ(p.stageOf[0], p.stageOf[2]);
  EXPECT_NE(p.stageOf[3], p.stageOf[0]);
  EXPECT_TRUE(evaluate(problem, p).acyclic);
}

//===----------------------------------------------------------------------===//
// The model of every registered schedule kind
//===----------------------------------------------------------------------===//

ScheduleFamily familyOf(llvm::StringRef kind) {
  llvm::Expected<ScheduleModel> model = ScheduleModel::forSchedule(kind, 4);
  EXPECT_TRUE(bool(model)) << kind.str();
  if (!model) {
    llvm::consumeError(model.takeError());
    return ScheduleFamily::GPipe;
  }
  EXPECT_EQ(model->getKind(), kind);
  return model->family;
}

TEST(ScheduleModel, EveryRegisteredKindHasAModel) {
  for (const std::string &kind : mlir::pipe::getScheduleGeneratorNames()) {
    llvm::Expected<ScheduleModel> model = ScheduleModel::forSchedule(kind, 4);
    ASSERT_TRUE(bool(model)) << kind << ": "
                             << llvm::toString(model.takeError());
    std::optional<ScheduleTraits> traits =
        mlir::pipe::getScheduleTraits(kind);
    // Traits decide wherever they say something.
    EXPECT_EQ(model->isSynchronous(), !traits->asynchronous) << kind;
    EXPECT_EQ(model->hasParameterServer(), traits->parameterServer) << kind;
  }
  EXPECT_EQ(familyOf("gpipe"), ScheduleFamily::GPipe);
  EXPECT_EQ(familyOf("1f1b"), ScheduleFamily::OneFOneB);
  EXPECT_EQ(familyOf("interleaved-1f1b"), ScheduleFamily::Interleaved);
  EXPECT_EQ(familyOf("zb-h1"), ScheduleFamily::ZeroBubble);
  EXPECT_EQ(familyOf("pipedream-async"), ScheduleFamily::Async);
  EXPECT_EQ(familyOf("mixed"), ScheduleFamily::OneFOneB);
  EXPECT_EQ(familyOf("l2l"), ScheduleFamily::LayerToLayer);
  EXPECT_EQ(familyOf("looped-bfs"), ScheduleFamily::GPipe);
}

TEST(ScheduleModel, AliasesAndStashing) {
  llvm::Expected<ScheduleModel> flush =
      ScheduleModel::forSchedule("pipedream-flush", 4);
  ASSERT_TRUE(bool(flush));
  EXPECT_EQ(flush->family, ScheduleFamily::OneFOneB);
  EXPECT_EQ(flush->getKind(), "1f1b");
  // Weight stashing only where the kind keeps weight versions.
  llvm::Expected<ScheduleModel> async =
      ScheduleModel::forSchedule("async", 4, /*weightStashing=*/true);
  ASSERT_TRUE(bool(async));
  EXPECT_EQ(async->getKind(), "pipedream-async");
  EXPECT_TRUE(async->weightStashing);
  llvm::Expected<ScheduleModel> gpipe =
      ScheduleModel::forSchedule("gpipe", 4, /*weightStashing=*/true);
  ASSERT_TRUE(bool(gpipe));
  EXPECT_FALSE(gpipe->weightStashing);
}

TEST(ScheduleModel, UnknownKindNamesTheRegistry) {
  llvm::Expected<ScheduleModel> model = ScheduleModel::forSchedule("nope", 4);
  ASSERT_FALSE(bool(model));
  EXPECT_EQ(llvm::toString(model.takeError()),
            "unknown schedule 'nope' (known: " +
                llvm::join(mlir::pipe::getScheduleGeneratorNames(), ", ") +
                ")");
}

/// A kind registered only here, with the traits it is given.
class TraitsOnlyGenerator : public mlir::pipe::ScheduleGenerator {
public:
  TraitsOnlyGenerator(std::string name, ScheduleTraits traits)
      : name(std::move(name)), traits(traits) {}
  llvm::StringRef getName() const override { return name; }
  ScheduleTraits getTraits() const override { return traits; }
  mlir::FailureOr<mlir::pipe::Schedule>
  generate(const mlir::pipe::Pipeline &, const mlir::pipe::ScheduleOptions &,
           mlir::pipe::ScheduleDiagFn) const override {
    return mlir::failure();
  }

private:
  std::string name;
  ScheduleTraits traits;
};

TEST(ScheduleModel, KindsOutsideTheTableFollowTheirTraits) {
  ScheduleTraits async;
  async.asynchronous = true;
  async.keepsWeightVersions = true;
  ASSERT_TRUE(mlir::pipe::registerScheduleGenerator(
      "test-model-async", [async] {
        return std::make_unique<TraitsOnlyGenerator>("test-model-async", async);
      }));
  ASSERT_TRUE(mlir::pipe::registerScheduleGenerator("test-model-sync", [] {
    return std::make_unique<TraitsOnlyGenerator>("test-model-sync",
                                                 ScheduleTraits());
  }));
  llvm::Expected<ScheduleModel> model =
      ScheduleModel::forSchedule("test-model-async", 4, true);
  ASSERT_TRUE(bool(model));
  EXPECT_EQ(model->family, ScheduleFamily::Async);
  EXPECT_TRUE(model->weightStashing);
  EXPECT_EQ(model->getKind(), "test-model-async");
  // A synchronous kind without a rule gets GPipe's conservative memory.
  EXPECT_EQ(familyOf("test-model-sync"), ScheduleFamily::GPipe);
}

TEST(ScheduleModel, InFlightRules) {
  ScheduleModel s;
  s.microbatches = 8;
  s.family = ScheduleFamily::ZeroBubble;
  // Every stage keeps the depth, capped by m.
  EXPECT_EQ(s.getActivationsInFlight(1, 4), 4u);
  EXPECT_EQ(s.getActivationsInFlight(3, 4), 4u);
  EXPECT_EQ(s.getActivationsInFlight(1, 12), 8u);
  EXPECT_EQ(s.getActivationsInFlight(2), 2u);
  s.family = ScheduleFamily::Interleaved;
  // Megatron's warm-up on the device of a last chunk: 2 (h - 1) + 1.
  EXPECT_EQ(s.getActivationsInFlight(1), 1u);
  EXPECT_EQ(s.getActivationsInFlight(3), 5u);
  EXPECT_EQ(s.getActivationsInFlight(6), 8u);
  s.family = ScheduleFamily::LayerToLayer;
  EXPECT_EQ(s.getActivationsInFlight(1), 8u);
}

TEST(Evaluation, ZeroBubbleFillsTheDrainWithWeightGradients) {
  // p equal stages of F = B = W = 1 ms: ZB-H1's step is
  // 3 m t + (p - 1) (F + B - W), 1F1B's 3 m t + (p - 1) 3 t.
  BlockGraph graph = makeChain(4, 1);
  for (unsigned m : {4u, 8u}) {
    PartitionProblem problem =
        makeProblem(graph, 4, ScheduleFamily::ZeroBubble, m);
    Evaluation zb = evaluate(problem, onePerStage(4, 4));
    EXPECT_NEAR(zb.analyticStepSeconds, (3 * m + 3) * 1e-3, 1e-9);
    for (const StageReport &stage : zb.stages) {
      EXPECT_NEAR(stage.backwardWeightSeconds, 1e-3, 1e-12);
      EXPECT_EQ(stage.activationsInFlight, 4u);
    }
    problem.schedule.family = ScheduleFamily::OneFOneB;
    Evaluation oneFOneB = evaluate(problem, onePerStage(4, 4));
    EXPECT_NEAR(oneFOneB.analyticStepSeconds, (3 * m + 9) * 1e-3, 1e-9);
  }
}

TEST(Evaluation, InterleavedNeedsRoundRobinAndShrinksTheBubble) {
  BlockGraph graph = makeChain(4);
  PartitionProblem problem =
      makeProblem(graph, 2, ScheduleFamily::Interleaved, 4);
  // Two chunks per device, round-robin: bottleneck 6 ms, path 12 ms, bubble
  // (12 - 6) / 2.
  Evaluation rr = evaluate(problem, onePerStage(4, 2));
  EXPECT_TRUE(rr.isFeasible());
  EXPECT_NEAR(rr.analyticStepSeconds, (4 * 6 + 3) * 1e-3, 1e-9);
  // Not round-robin, or not the same number of stages on every device.
  EXPECT_FALSE(evaluate(problem, Partition({0, 1, 2, 3}, {0, 0, 1, 1}))
                   .fitsSchedule);
  EXPECT_FALSE(
      evaluate(problem, Partition({0, 1, 2, 2}, {0, 1, 0})).fitsSchedule);
  // Other schedules run any placement.
  problem.schedule.family = ScheduleFamily::OneFOneB;
  EXPECT_TRUE(
      evaluate(problem, Partition({0, 1, 2, 2}, {0, 1, 0})).fitsSchedule);
}

TEST(Evaluation, LayerToLayerFromAParameterServer) {
  // Blocks of 1 ms forward and 2 ms backward, 100 B saved, 1000 B of
  // parameters and 10 B between blocks.
  BlockGraph graph = makeChain(4, 100, 1000, 10);
  PartitionProblem problem =
      makeProblem(graph, 2, ScheduleFamily::LayerToLayer, 4);
  std::optional<Partition> fixed = getPartitionFixedBySchedule(problem);
  ASSERT_TRUE(fixed);
  EXPECT_EQ(fixed->stageOf, (std::vector<unsigned>{0, 1, 2, 3}));
  EXPECT_EQ(fixed->deviceOf, (std::vector<unsigned>{0, 0, 0, 0}));
  Evaluation eval = evaluate(problem, *fixed);
  EXPECT_TRUE(eval.isFeasible());
  // m times every stage's forward, recompute and backward.
  EXPECT_NEAR(eval.analyticStepSeconds, 4 * 4 * 4e-3, 1e-9);
  // Weights and gradients of two stages; every boundary input for all m
  // micro-batches (three stages receive one) and one stage's saved bytes.
  EXPECT_EQ(eval.devices[0].paramMemoryBytes, 2u * 2 * 1000);
  EXPECT_EQ(eval.devices[0].activationMemoryBytes, 3u * 10 * 4 + 100);
  EXPECT_FALSE(
      evaluate(problem, Partition({0, 1, 2, 3}, {0, 0, 1, 0})).fitsSchedule);
  problem.schedule.family = ScheduleFamily::GPipe;
  EXPECT_FALSE(getPartitionFixedBySchedule(problem));
}

} // namespace

namespace {

/// Costs in seconds: measured parts replace the analytic ones, a split
/// measured apart from the fused backward is what split schedules pay, and
/// bytes cost their time at the device's memory bandwidth.
TEST(Evaluation, NodeTimesFromMeasuredPartsAndBytes) {
  BlockGraph graph = makeChain(2);
  PartitionProblem problem = makeProblem(graph, 1, ScheduleFamily::GPipe, 1);
  // Analytic: 1 ms forward, 1 + 1 ms backward at 1 TFLOP/s.
  EXPECT_DOUBLE_EQ(problem.getForwardSeconds(0, 0), 1e-3);
  EXPECT_DOUBLE_EQ(problem.getBackwardSeconds(0, 0), 2e-3);
  // 1 GB at 1 TB/s adds 1 ms to every part that does work.
  BlockGraph withBytes = makeChain(2);
  withBytes.getNode(0).bytesAccessed = 1e9;
  problem.graph = &withBytes;
  problem.cluster.devices[0].memoryBandwidth = 1e12;
  EXPECT_DOUBLE_EQ(problem.getForwardSeconds(0, 0), 2e-3);
  EXPECT_DOUBLE_EQ(problem.getBackwardInputSeconds(0, 0), 2e-3);
  EXPECT_DOUBLE_EQ(problem.getBackwardWeightSeconds(0, 0), 2e-3);
  // The fused backward passes over the bytes once for both parts' FLOPs.
  EXPECT_DOUBLE_EQ(problem.getBackwardSeconds(0, 0), 3e-3);
  // Measured split parts and no fused time: their sum.
  withBytes.getNode(0).backwardInputSeconds = 1.5e-3;
  withBytes.getNode(0).backwardWeightSeconds = 2.5e-3;
  EXPECT_DOUBLE_EQ(problem.getBackwardSeconds(0, 0), 4e-3);
  // A measured fused backward, and split parts measured apart from it.
  BlockGraph measured = makeChain(2);
  measured.getNode(0).backwardSeconds = 3e-3;
  measured.getNode(0).backwardInputSeconds = 2e-3;
  measured.getNode(0).backwardWeightSeconds = 2.5e-3;
  problem.graph = &measured;
  EXPECT_DOUBLE_EQ(problem.getBackwardSeconds(0, 0), 3e-3);
  EXPECT_DOUBLE_EQ(problem.getBackwardInputSeconds(0, 0), 2e-3);
  EXPECT_DOUBLE_EQ(problem.getBackwardWeightSeconds(0, 0), 2.5e-3);
}

} // namespace
