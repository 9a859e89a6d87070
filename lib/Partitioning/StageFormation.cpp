//===- StageFormation.cpp - Stages from device assignments, local search --===//
//
// Mixed-Pipe decides devices first and stages second: a device's blocks
// become as few stages as the acyclicity of the stage graph allows, grown
// as connected components in topological order. Local search then moves
// blocks across device boundaries and re-forms the stages.
//
//===----------------------------------------------------------------------===//

#include "pipe/Partitioning/Algorithms.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <limits>

using namespace mlir::pipe::partitioning;

namespace {

/// A growing stage graph with set-valued adjacency.
struct StageDAG {
  std::vector<llvm::SmallVector<unsigned, 4>> succs, preds;
  std::vector<unsigned> device;
  std::vector<unsigned> visitStamp;
  unsigned stamp = 0;

  unsigned addStage(unsigned dev) {
    succs.emplace_back();
    preds.emplace_back();
    device.push_back(dev);
    visitStamp.push_back(0);
    return device.size() - 1;
  }

  void addEdge(unsigned from, unsigned to) {
    if (from == to || llvm::is_contained(succs[from], to))
      return;
    succs[from].push_back(to);
    preds[to].push_back(from);
  }

  /// Whether `to` is reachable from `from` (a path of length >= 1), not
  /// using the direct edge from -> to when `skipDirect`.
  bool reaches(unsigned from, unsigned to, bool skipDirect) {
    ++stamp;
    llvm::SmallVector<unsigned, 16> stack;
    for (unsigned s : succs[from]) {
      if (skipDirect && s == to)
        continue;
      stack.push_back(s);
    }
    while (!stack.empty()) {
      unsigned s = stack.pop_back_val();
      if (s == to)
        return true;
      if (visitStamp[s] == stamp)
        continue;
      visitStamp[s] = stamp;
      for (unsigned t : succs[s])
        if (visitStamp[t] != stamp)
          stack.push_back(t);
    }
    return false;
  }
};

} // namespace

Partition
mlir::pipe::partitioning::formStages(const PartitionProblem &problem,
                                     llvm::ArrayRef<unsigned> deviceOfNode) {
  const BlockGraph &graph = *problem.graph;
  unsigned n = graph.getNumNodes();
  constexpr unsigned none = std::numeric_limits<unsigned>::max();
  std::vector<unsigned> stageOf(n, none);
  StageDAG dag;

  // Grow stages as connected components, in topological order.
  for (unsigned v : graph.getTopologicalOrder()) {
    unsigned dev = deviceOfNode[v];
    llvm::SmallVector<unsigned, 4> predStages;
    for (unsigned p : graph.getPredecessors(v))
      if (!llvm::is_contained(predStages, stageOf[p]))
        predStages.push_back(stageOf[p]);
    unsigned chosen = none;
    for (unsigned candidate : predStages) {
      if (dag.device[candidate] != dev)
        continue;
      // Joining `candidate` closes a cycle iff another stage feeding v is
      // reachable from it (v has no placed successors yet).
      bool acyclic = llvm::none_of(predStages, [&](unsigned other) {
        return other != candidate && dag.reaches(candidate, other, false);
      });
      if (acyclic) {
        chosen = candidate;
        break;
      }
    }
    if (chosen == none)
      chosen = dag.addStage(dev);
    stageOf[v] = chosen;
    for (unsigned other : predStages)
      dag.addEdge(other, chosen);
  }

  // Merge adjacent stages of the same device while the graph stays acyclic
  // (growth order can split a component that joins later).
  unsigned numStages = dag.device.size();
  std::vector<unsigned> leader(numStages);
  for (unsigned s = 0; s < numStages; ++s)
    leader[s] = s;
  bool changed = true;
  while (changed) {
    changed = false;
    for (unsigned a = 0; a < numStages && !changed; ++a) {
      if (leader[a] != a)
        continue;
      for (unsigned b : llvm::SmallVector<unsigned, 4>(dag.succs[a])) {
        if (dag.device[b] != dag.device[a] || leader[b] != b)
          continue;
        if (dag.reaches(a, b, /*skipDirect=*/true))
          continue;
        // Merge b into a.
        leader[b] = a;
        for (unsigned s : dag.succs[b]) {
          llvm::erase(dag.preds[s], b);
          if (s != a)
            dag.addEdge(a, s);
        }
        for (unsigned p : dag.preds[b]) {
          llvm::erase(dag.succs[p], b);
          if (p != a)
            dag.addEdge(p, a);
        }
        llvm::erase(dag.succs[a], b);
        dag.succs[b].clear();
        dag.preds[b].clear();
        changed = true;
        break;
      }
    }
  }

  Partition partition;
  std::vector<unsigned> newIndex(numStages, none);
  for (unsigned s = 0; s < numStages; ++s) {
    if (leader[s] != s)
      continue;
    newIndex[s] = partition.deviceOf.size();
    partition.deviceOf.push_back(dag.device[s]);
  }
  partition.stageOf.resize(n);
  for (unsigned v = 0; v < n; ++v) {
    unsigned s = stageOf[v];
    while (leader[s] != s)
      s = leader[s];
    partition.stageOf[v] = newIndex[s];
  }
  partition.canonicalize(graph);
  return partition;
}

std::vector<unsigned> mlir::pipe::partitioning::refineAssignment(
    const PartitionProblem &problem, std::vector<unsigned> deviceOfNode,
    llvm::ArrayRef<unsigned> unitOf, unsigned maxMoves) {
  const BlockGraph &graph = *problem.graph;
  unsigned n = graph.getNumNodes();
  unsigned numDevices = problem.cluster.size();
  unsigned m = problem.schedule.microbatches;

  // Dense unit ids and their members.
  llvm::DenseMap<unsigned, unsigned> unitIndex;
  std::vector<llvm::SmallVector<unsigned, 4>> members;
  std::vector<unsigned> unitOfNode(n);
  for (unsigned v = 0; v < n; ++v) {
    auto [it, inserted] = unitIndex.try_emplace(unitOf[v], members.size());
    if (inserted)
      members.emplace_back();
    members[it->second].push_back(v);
    unitOfNode[v] = it->second;
  }

  Partition initial = formStages(problem, deviceOfNode);
  unsigned numStages = initial.getNumStages();
  Evaluation current = evaluate(problem, initial);
  for (unsigned moves = 0; moves < maxMoves; ++moves) {
    // Devices worth relieving first: the bottleneck ones, or those over
    // capacity. Others are tried after them (a move elsewhere can still
    // shorten the critical path or save communication).
    std::vector<bool> target(numDevices, false);
    if (current.isFeasible()) {
      for (unsigned d = 0; d < numDevices; ++d)
        target[d] = current.devices[d].costSeconds >=
                    current.bottleneckSeconds * (1 - 1e-9);
    } else {
      for (unsigned d = 0; d < numDevices; ++d)
        target[d] = !current.acyclic || current.devices[d].memoryBytes >
                                            current.devices[d].capacityBytes;
    }

    // Units on those devices that border another device, with the
    // neighbouring devices they could move to.
    struct Move {
      unsigned unit, device;
      double compute;
      bool fromTarget;
    };
    std::vector<Move> candidates;
    std::vector<unsigned> seenStamp(numDevices, 0);
    unsigned stamp = 0;
    for (auto [u, nodes] : llvm::enumerate(members)) {
      unsigned from = deviceOfNode[nodes.front()];
      if (!target[from] && !current.isFeasible())
        continue;
      ++stamp;
      for (unsigned v : nodes) {
        auto consider = [&](unsigned w) {
          unsigned to = deviceOfNode[w];
          if (to == from || seenStamp[to] == stamp)
            return;
          seenStamp[to] = stamp;
          double compute = 0;
          for (unsigned x : nodes)
            compute += problem.getForwardSeconds(x, to) +
                       problem.getBackwardSeconds(x, to);
          candidates.push_back({unsigned(u), to, compute, target[from]});
        };
        for (unsigned w : graph.getSuccessors(v))
          consider(w);
        for (unsigned w : graph.getPredecessors(v))
          consider(w);
      }
    }
    // From the devices to relieve first, then small moves first: they are
    // the likeliest to balance without overshooting.
    llvm::stable_sort(candidates, [](const Move &a, const Move &b) {
      if (a.fromTarget != b.fromTarget)
        return a.fromTarget;
      return a.compute < b.compute;
    });

    bool improved = false;
    for (const Move &move : candidates) {
      const DeviceReport &dest = current.devices[move.device];
      // The destination's compute alone bounds the new bottleneck from
      // below; skip moves whose bottleneck increase the critical path
      // (which can shrink at most to nothing) cannot pay for.
      double lowerBound =
          dest.forwardSeconds + dest.backwardSeconds + move.compute;
      if (current.isFeasible() && lowerBound >= current.bottleneckSeconds) {
        double increase = lowerBound - current.bottleneckSeconds;
        if (!problem.schedule.isSynchronous() ||
            (m - 1) * increase >= current.pathSeconds)
          continue;
      }
      std::vector<unsigned> trial = deviceOfNode;
      for (unsigned v : members[move.unit])
        trial[v] = move.device;
      Partition partition = formStages(problem, trial);
      // Blocks move into neighbouring stages; a move that splits stages
      // buys its small gains with transfers and pipeline depth the model
      // only partly sees (FTPipe's refinement keeps the stage count too).
      if (partition.getNumStages() > numStages)
        continue;
      Evaluation eval = evaluate(problem, partition);
      if (isBetter(eval, current, m)) {
        numStages = partition.getNumStages();
        deviceOfNode = std::move(trial);
        current = std::move(eval);
        improved = true;
        break;
      }
    }
    if (!improved)
      break;
  }
  return deviceOfNode;
}
