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
  auto link = machine.links.find({0, 2});
  ASSERT_NE(link, machine.links.end());
  EXPECT_EQ(link->second.bandwidth, cluster.getBandwidth(0, 2));
  EXPECT_EQ(link->second.latency, cluster.getLatency(0, 2));
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
