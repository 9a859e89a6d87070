//===- FromDeviceModelTest.cpp - Clusters and simulated step times --------===//
//
// The IR-free bridges of the partitioning library: a cluster from a device
// model preset, the simulator's machine from that cluster, and a step time
// from the simulator.
//
//===----------------------------------------------------------------------===//

#include "pipe/Partitioning/FromDeviceModel.h"
#include "pipe/Partitioning/Partitioner.h"
#include "pipe/Partitioning/SimulatedStepTime.h"

#include "pipe/Analysis/DeviceModel.h"

#include "gtest/gtest.h"

using namespace mlir::pipe;
using namespace mlir::pipe::partitioning;

namespace {

TEST(FromDeviceModel, ClusterAndMachineAgree) {
  llvm::Expected<ClusterModel> model = ClusterModel::lookup("rtx2080ti-x8");
  ASSERT_TRUE(bool(model)) << llvm::toString(model.takeError());
  ClusterInfo cluster = buildClusterInfo(*model, 3, "f32");
  ASSERT_EQ(cluster.size(), 3u);
  EXPECT_FALSE(bool(cluster.verify()));
  cluster.devices[1].reservedBytes = 1 << 20;
  MachineModel machine = buildMachineModel(cluster);
  ASSERT_EQ(machine.devices.size(), 3u);
  for (unsigned d = 0; d < 3; ++d) {
    EXPECT_EQ(machine.devices[d].memoryBytes,
              cluster.devices[d].getUsableBytes());
    EXPECT_EQ(machine.devices[d].flops, cluster.devices[d].flopsPerSecond);
  }
  // Every pair's link is the cluster's; a uniform cluster keeps none in the
  // map (the default serves them all).
  for (unsigned a = 0; a < 3; ++a)
    for (unsigned b = 0; b < 3; ++b)
      if (a != b) {
        EXPECT_EQ(machine.getLink(a, b).bandwidth, cluster.getBandwidth(a, b));
        EXPECT_EQ(machine.getLink(a, b).latency, cluster.getLatency(a, b));
      }
  EXPECT_TRUE(machine.links.empty());
  // A pair that differs is kept.
  cluster.bandwidth[0 * 3 + 2] /= 2;
  MachineModel slower = buildMachineModel(cluster);
  ASSERT_EQ(slower.links.size(), 1u);
  EXPECT_EQ(slower.getLink(0, 2).bandwidth, cluster.getBandwidth(0, 2));
  EXPECT_EQ(slower.getLink(2, 0).bandwidth, cluster.getBandwidth(2, 0));
}

TEST(SimulatedStepTime, TimesAGPipeStep) {
  BlockGraph graph;
  for (unsigned i = 0; i < 4; ++i) {
    BlockNode node;
    node.name = "b" + std::to_string(i);
    node.forwardSeconds = 1e-3;
    node.backwardSeconds = 2e-3;
    graph.addNode(node);
    if (i > 0)
      graph.addEdge(i - 1, i, 1024);
  }
  ASSERT_FALSE(bool(graph.finalize()));
  PartitionProblem problem;
  problem.graph = &graph;
  problem.cluster = ClusterInfo::uniform(2, 1ull << 30, 1e12, 1e10);
  problem.schedule.microbatches = 4;
  problem.stepTime = makeSimulatedStepTime("gpipe");
  llvm::Expected<PartitionResult> result =
      runPartitioner("balanced", problem);
  ASSERT_TRUE(bool(result)) << llvm::toString(result.takeError());
  EXPECT_TRUE(result->evaluation.simulated);
  // Four micro-batches through two stages of 6 ms each: at least
  // (4 + 2 - 1) stage-steps of 6 ms.
  EXPECT_GE(result->evaluation.stepSeconds, 5 * 6e-3 * (1 - 1e-9));
  EXPECT_LT(result->evaluation.stepSeconds, 5 * 6e-3 * 1.1);
}

} // namespace
