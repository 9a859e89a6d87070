//===- BalancedTest.cpp - The balanced partitioner ------------------------===//
//
// pipe-place's placement: contiguous stages balanced by time, round-robin
// over the devices, one stage per block instance with stagesPerDevice 0.
//
//===----------------------------------------------------------------------===//

#include "pipe/Partitioning/Partitioner.h"

#include "gtest/gtest.h"

using namespace mlir::pipe::partitioning;

namespace {

/// A chain of blocks taking `seconds` each (forward; no backward).
BlockGraph makeChain(llvm::ArrayRef<double> seconds) {
  BlockGraph graph;
  for (double s : seconds) {
    BlockNode node;
    node.name = "b" + std::to_string(graph.getNumNodes());
    node.forwardSeconds = s;
    unsigned index = graph.addNode(node);
    if (index > 0)
      graph.addEdge(index - 1, index, 4);
  }
  EXPECT_FALSE(bool(graph.finalize()));
  return graph;
}

PartitionProblem makeProblem(const BlockGraph &graph, unsigned devices,
                             unsigned stagesPerDevice) {
  PartitionProblem problem;
  problem.graph = &graph;
  problem.cluster = ClusterInfo::uniform(devices, 1ull << 30, 1e12, 1e10);
  problem.stagesPerDevice = stagesPerDevice;
  return problem;
}

TEST(Balanced, ContiguousAndRoundRobin) {
  BlockGraph graph = makeChain({4, 1, 1, 1, 1, 4});
  llvm::Expected<PartitionResult> two =
      runPartitioner("balanced", makeProblem(graph, 2, 1));
  ASSERT_TRUE(bool(two)) << llvm::toString(two.takeError());
  EXPECT_EQ(two->partition.stageOf, (std::vector<unsigned>{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(two->partition.deviceOf, (std::vector<unsigned>{0, 1}));

  llvm::Expected<PartitionResult> six =
      runPartitioner("balanced", makeProblem(graph, 2, 3));
  ASSERT_TRUE(bool(six)) << llvm::toString(six.takeError());
  EXPECT_EQ(six->partition.deviceOf,
            (std::vector<unsigned>{0, 1, 0, 1, 0, 1}));
}

TEST(Balanced, OneStagePerBlockInstance) {
  BlockGraph graph = makeChain({1, 2, 3});
  llvm::Expected<PartitionResult> result =
      runPartitioner("balanced", makeProblem(graph, 1, 0));
  ASSERT_TRUE(bool(result)) << llvm::toString(result.takeError());
  EXPECT_EQ(result->partition.stageOf, (std::vector<unsigned>{0, 1, 2}));
  EXPECT_EQ(result->partition.deviceOf, (std::vector<unsigned>{0, 0, 0}));
}

TEST(Balanced, TooFewBlocks) {
  BlockGraph graph = makeChain({1, 1});
  llvm::Expected<PartitionResult> result =
      runPartitioner("balanced", makeProblem(graph, 3, 1));
  ASSERT_FALSE(bool(result));
  EXPECT_EQ(llvm::toString(result.takeError()),
            "cannot make 3 stages (3 devices x 1 per device) from 2 block "
            "instances");
}

TEST(Balanced, IsRegisteredWithTheOthers) {
  // Other tests of this binary register more at run time.
  EXPECT_EQ(getPartitionerNames().rfind("balanced, exact, mixed, seq", 0), 0u)
      << getPartitionerNames();
  EXPECT_TRUE(createPartitioner("balanced"));
}

} // namespace
