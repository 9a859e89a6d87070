//===- Exact.cpp - Exhaustive partitioning for small graphs ---------------===//
//
// Enumerates every assignment of blocks to devices (on homogeneous clusters
// only one assignment per relabelling of devices), forms stages with
// formStages() exactly as mixed does, and keeps the best by the objective.
// The seq answer is a candidate too. Mixed's results are device
// assignments re-formed the same way, so this is a true optimum for them
// and measures their optimality gap.
//
//===----------------------------------------------------------------------===//

#include "pipe/Partitioning/Algorithms.h"
#include "pipe/Partitioning/Partitioner.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir::pipe::partitioning;

llvm::Expected<Partition>
mlir::pipe::partitioning::solveExact(const PartitionProblem &problem,
                                     uint64_t maxAssignments) {
  const BlockGraph &graph = *problem.graph;
  unsigned n = graph.getNumNodes();
  unsigned numDevices = problem.cluster.size();
  unsigned m = problem.schedule.microbatches;
  double count = std::pow(double(numDevices), double(n));
  if (count > double(maxAssignments))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("exact: {0} blocks on {1} devices is {2:e} assignments, "
                      "more than the limit of {3}",
                      n, numDevices, count, maxAssignments));
  bool symmetric = problem.cluster.isHomogeneous();

  std::optional<Partition> best;
  Evaluation bestEval;
  auto consider = [&](Partition partition) {
    Evaluation eval = evaluate(problem, partition);
    if (!best || isBetter(eval, bestEval, m)) {
      best = std::move(partition);
      bestEval = eval;
    }
  };

  std::vector<std::string> notes;
  llvm::Expected<Partition> seq =
      createSeqPartitioner()->partition(problem, notes);
  if (seq)
    consider(*seq);
  else
    llvm::consumeError(seq.takeError());

  // Odometer over device assignments in topological order. With equal
  // devices, a block may only use a device at most one above the largest
  // used so far (restricted growth), which visits each relabelling once.
  llvm::ArrayRef<unsigned> order = graph.getTopologicalOrder();
  std::vector<unsigned> digits(n, 0), deviceOfNode(n, 0);
  std::vector<unsigned> prefixMax(n + 1, 0);
  while (true) {
    bool valid = true;
    unsigned maxSoFar = 0;
    for (unsigned i = 0; i < n && valid; ++i) {
      if (symmetric && digits[i] > (i == 0 ? 0 : maxSoFar + 1))
        valid = false;
      maxSoFar = i == 0 ? digits[i] : std::max(maxSoFar, digits[i]);
      deviceOfNode[order[i]] = digits[i];
    }
    if (valid)
      consider(formStages(problem, deviceOfNode));
    // Next assignment.
    unsigned i = n;
    while (i > 0) {
      --i;
      if (++digits[i] < numDevices)
        break;
      digits[i] = 0;
      if (i == 0) {
        i = n + 1;
        break;
      }
    }
    if (i == n + 1 || n == 0)
      break;
  }
  if (!best || !bestEval.isFeasible())
    return makeInfeasibleError(problem, "exact");
  return *best;
}

namespace {

class ExactPartitioner : public Partitioner {
public:
  llvm::StringRef getName() const override { return "exact"; }

  llvm::Expected<Partition>
  partition(const PartitionProblem &problem,
            std::vector<std::string> &notes) const override {
    notes.push_back("exact: exhaustive over device assignments");
    return solveExact(problem);
  }
};

} // namespace

std::unique_ptr<Partitioner>
mlir::pipe::partitioning::createExactPartitioner() {
  return std::make_unique<ExactPartitioner>();
}
