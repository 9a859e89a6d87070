//===- Balanced.cpp - Contiguous stages balanced by cost, round-robin -----===//
//
// The placement pipe-place makes: the topological order cut into
// `devices * stagesPerDevice` contiguous stages minimising the most
// expensive stage (forward plus backward time on device 0; a dynamic
// program over prefix sums), stage k on device k mod devices. It looks at
// neither memory nor communication, so that a schedule such as
// interleaved-1f1b or l2l gets exactly the stage count it asks for.
//
//===----------------------------------------------------------------------===//

#include "pipe/Partitioning/Partitioner.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <limits>

using namespace mlir::pipe::partitioning;

namespace {

class BalancedPartitioner : public Partitioner {
public:
  llvm::StringRef getName() const override { return "balanced"; }

  llvm::Expected<Partition>
  partition(const PartitionProblem &problem,
            std::vector<std::string> &notes) const override {
    const BlockGraph &graph = *problem.graph;
    llvm::ArrayRef<unsigned> order = graph.getTopologicalOrder();
    unsigned n = order.size();
    unsigned numDevices = problem.cluster.size();
    unsigned k = problem.stagesPerDevice ? numDevices * problem.stagesPerDevice
                                         : n;
    if (n < k || k < numDevices)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          llvm::formatv("cannot make {0} stages ({1} devices x {2} per "
                        "device) from {3} block instances",
                        std::max(k, numDevices), numDevices,
                        problem.stagesPerDevice ? problem.stagesPerDevice : 1,
                        n));
    notes.push_back(llvm::formatv("balanced: {0} contiguous stages, "
                                  "round-robin over {1} devices",
                                  k, numDevices));
    Partition result;
    for (unsigned s = 0; s < k; ++s)
      result.deviceOf.push_back(s % numDevices);
    result.stageOf.assign(n, 0);
    // One stage per block instance needs no search (and the program below
    // is cubic then).
    if (k == n) {
      for (unsigned i = 0; i < n; ++i)
        result.stageOf[order[i]] = i;
      return result;
    }
    std::vector<double> prefix(n + 1, 0);
    for (unsigned i = 0; i < n; ++i)
      prefix[i + 1] = prefix[i] + problem.getForwardSeconds(order[i], 0) +
                      problem.getBackwardSeconds(order[i], 0);
    // best[j][i]: least maximal stage cost splitting the first i blocks
    // into j stages; cut[j][i]: where the last of them starts.
    const double inf = std::numeric_limits<double>::infinity();
    std::vector<std::vector<double>> best(k + 1,
                                          std::vector<double>(n + 1, inf));
    std::vector<std::vector<unsigned>> cut(k + 1,
                                           std::vector<unsigned>(n + 1, 0));
    best[0][0] = 0;
    for (unsigned j = 1; j <= k; ++j)
      for (unsigned i = j; i <= n; ++i)
        for (unsigned start = j - 1; start < i; ++start) {
          double cost = std::max(best[j - 1][start], prefix[i] - prefix[start]);
          // Prefer later cuts on ties so that early stages stay light.
          if (cost <= best[j][i]) {
            best[j][i] = cost;
            cut[j][i] = start;
          }
        }
    unsigned end = n;
    for (unsigned j = k; j >= 1; --j) {
      unsigned start = cut[j][end];
      for (unsigned i = start; i < end; ++i)
        result.stageOf[order[i]] = j - 1;
      end = start;
    }
    return result;
  }
};

} // namespace

std::unique_ptr<Partitioner>
mlir::pipe::partitioning::createBalancedPartitioner() {
  return std::make_unique<BalancedPartitioner>();
}
