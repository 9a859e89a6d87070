//===- Coarsen.cpp - Acyclic coarsening and greedy best-fit ---------------===//
//
// Mixed-Pipe's first two steps. Coarsening keeps a quotient graph of
// groups whose every merge preserves acyclicity. Two merges are always
// safe and need no search: a group with its lowest-ranked successor, or
// with its highest-ranked predecessor (any other path between them would
// pass through a neighbour ranked in between, and there is none); the
// merged group then takes that neighbour's rank and the ranks stay a
// topological order. Other merges are checked by a depth-first search
// pruned by rank, after which the ranks are recomputed.
//
//===----------------------------------------------------------------------===//

#include "pipe/Partitioning/Algorithms.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <limits>
#include <queue>

using namespace mlir::pipe::partitioning;

namespace {

class CoarseGraph {
public:
  explicit CoarseGraph(const PartitionProblem &problem)
      : problem(problem), graph(*problem.graph) {
    unsigned n = graph.getNumNodes();
    groupOf.resize(n);
    members.resize(n);
    compute.resize(n);
    alive.assign(n, true);
    succ.resize(n);
    pred.resize(n);
    rank.resize(n);
    valueStamp.assign(graph.getNumValues(), 0);
    visitStamp.assign(n, 0);
    for (unsigned v = 0; v < n; ++v) {
      groupOf[v] = v;
      members[v] = {v};
      compute[v] =
          problem.getForwardSeconds(v, 0) + problem.getBackwardSeconds(v, 0);
      rank[v] = graph.getTopologicalPosition(v);
    }
    for (unsigned v = 0; v < n; ++v)
      recomputeEdges(v);
    numAlive = n;
    bandwidth = problem.cluster.getMeanBandwidth();
    latency = problem.cluster.getMeanLatency();
  }

  unsigned getNumAlive() const { return numAlive; }
  bool isAlive(unsigned g) const { return alive[g]; }
  unsigned getRank(unsigned g) const { return rank[g]; }
  double getCompute(unsigned g) const { return compute[g]; }
  unsigned size() const { return alive.size(); }
  const llvm::DenseMap<unsigned, uint64_t> &getSuccs(unsigned g) const {
    return succ[g];
  }
  const llvm::DenseMap<unsigned, uint64_t> &getPreds(unsigned g) const {
    return pred[g];
  }

  /// Transfer time of a group's boundary, one direction.
  double getCommSeconds(unsigned g) const {
    if (bandwidth <= 0)
      return 0;
    uint64_t bytes = 0;
    for (auto &[o, b] : succ[g])
      bytes += b;
    for (auto &[o, b] : pred[g])
      bytes += b;
    return (succ[g].size() + pred[g].size()) * latency + bytes / bandwidth;
  }

  /// The always-safe merge partners (none: size()).
  unsigned getLowestSuccessor(unsigned g) const {
    unsigned best = size();
    for (auto &[s, b] : succ[g])
      if (best == size() || rank[s] < rank[best])
        best = s;
    return best;
  }
  unsigned getHighestPredecessor(unsigned g) const {
    unsigned best = size();
    for (auto &[p, b] : pred[g])
      if (best == size() || rank[p] > rank[best])
        best = p;
    return best;
  }

  /// Merging a and b keeps the quotient acyclic.
  bool canMerge(unsigned a, unsigned b) {
    if (rank[a] > rank[b])
      std::swap(a, b);
    // A cycle appears iff a reaches b other than by the direct edge; only
    // groups ranked below b can lie on such a path.
    ++stamp;
    llvm::SmallVector<unsigned, 32> stack;
    for (auto &[s, bytes] : succ[a])
      if (s != b && rank[s] < rank[b])
        stack.push_back(s);
    while (!stack.empty()) {
      unsigned g = stack.pop_back_val();
      if (visitStamp[g] == stamp)
        continue;
      visitStamp[g] = stamp;
      for (auto &[s, bytes] : succ[g]) {
        if (s == b)
          return false;
        if (rank[s] < rank[b] && visitStamp[s] != stamp)
          stack.push_back(s);
      }
    }
    return true;
  }

  /// Merges `a` and `b`; the merged group gets `newRank` (when the caller
  /// knows a valid one) or all ranks are recomputed. Returns the survivor.
  unsigned merge(unsigned a, unsigned b,
                 std::optional<unsigned> newRank = std::nullopt) {
    if (members[a].size() < members[b].size())
      std::swap(a, b);
    for (unsigned v : members[b]) {
      groupOf[v] = a;
      members[a].push_back(v);
    }
    members[b].clear();
    compute[a] += compute[b];
    alive[b] = false;
    --numAlive;
    // Detach both from their neighbours, then rebuild a's edges exactly.
    for (unsigned g : {a, b}) {
      for (auto &[s, bytes] : succ[g])
        pred[s].erase(g);
      for (auto &[p, bytes] : pred[g])
        succ[p].erase(g);
    }
    succ[b].clear();
    pred[b].clear();
    recomputeEdges(a);
    if (newRank)
      rank[a] = *newRank;
    else
      recomputeRanks();
    return a;
  }

  /// The current grouping with dense ids, in rank order.
  CoarseLevel snapshot(unsigned target) const {
    std::vector<unsigned> groups;
    for (unsigned g = 0; g < size(); ++g)
      if (alive[g])
        groups.push_back(g);
    llvm::sort(groups,
               [&](unsigned x, unsigned y) { return rank[x] < rank[y]; });
    std::vector<unsigned> dense(size(), 0);
    for (auto [i, g] : llvm::enumerate(groups))
      dense[g] = i;
    CoarseLevel level;
    level.target = target;
    level.numGroups = groups.size();
    level.groupOf.resize(groupOf.size());
    for (unsigned v = 0; v < groupOf.size(); ++v)
      level.groupOf[v] = dense[groupOf[v]];
    return level;
  }

private:
  void recomputeEdges(unsigned g) {
    succ[g].clear();
    pred[g].clear();
    ++stamp;
    for (unsigned v : members[g])
      for (unsigned value : graph.getInputValues(v)) {
        unsigned p = groupOf[graph.getValue(value).producer];
        if (p == g || valueStamp[value] == stamp)
          continue;
        valueStamp[value] = stamp;
        pred[g][p] += graph.getValue(value).bytes;
      }
    for (unsigned v : members[g])
      for (unsigned value : graph.getOutputValues(v)) {
        llvm::SmallVector<unsigned, 4> seen;
        for (unsigned c : graph.getValue(value).consumers) {
          unsigned q = groupOf[c];
          if (q == g || llvm::is_contained(seen, q))
            continue;
          seen.push_back(q);
          succ[g][q] += graph.getValue(value).bytes;
        }
      }
    for (auto &[p, bytes] : pred[g])
      succ[p][g] = bytes;
    for (auto &[s, bytes] : succ[g])
      pred[s][g] = bytes;
  }

  void recomputeRanks() {
    std::vector<unsigned> indegree(size(), 0), order;
    for (unsigned g = 0; g < size(); ++g)
      if (alive[g]) {
        indegree[g] = pred[g].size();
        if (indegree[g] == 0)
          order.push_back(g);
      }
    for (unsigned i = 0; i < order.size(); ++i)
      for (auto &[s, bytes] : succ[order[i]])
        if (--indegree[s] == 0)
          order.push_back(s);
    assert(order.size() == numAlive && "coarsening made a cycle");
    for (auto [i, g] : llvm::enumerate(order))
      rank[g] = i;
  }

  const PartitionProblem &problem;
  const BlockGraph &graph;
  std::vector<unsigned> groupOf;
  std::vector<llvm::SmallVector<unsigned, 4>> members;
  std::vector<double> compute;
  std::vector<bool> alive;
  std::vector<llvm::DenseMap<unsigned, uint64_t>> succ, pred;
  std::vector<unsigned> rank;
  std::vector<unsigned> valueStamp, visitStamp;
  unsigned stamp = 0;
  unsigned numAlive = 0;
  double bandwidth = 0, latency = 0;
};

/// Merges `g` with whichever safe partner (lowest successor, highest
/// predecessor) is cheaper; returns the survivor or nullopt when `g` has
/// no neighbour.
std::optional<unsigned> mergeSafely(CoarseGraph &graph, unsigned g,
                                    bool preferSuccessor) {
  unsigned s = graph.getLowestSuccessor(g);
  unsigned p = graph.getHighestPredecessor(g);
  bool hasS = s != graph.size(), hasP = p != graph.size();
  if (!hasS && !hasP)
    return std::nullopt;
  bool useS = hasS;
  if (hasS && hasP && !preferSuccessor)
    useS = graph.getCompute(s) <= graph.getCompute(p);
  if (useS)
    return graph.merge(g, s, graph.getRank(s));
  return graph.merge(g, p, graph.getRank(p));
}

} // namespace

std::vector<CoarseLevel>
mlir::pipe::partitioning::coarsen(const PartitionProblem &problem,
                                  llvm::ArrayRef<unsigned> targets) {
  std::vector<CoarseLevel> levels;
  if (targets.empty() || problem.graph->getNumNodes() == 0)
    return levels;
  std::vector<unsigned> pending(targets.begin(), targets.end());
  llvm::sort(pending, std::greater<unsigned>());
  pending.erase(std::unique(pending.begin(), pending.end()), pending.end());
  unsigned floor = std::max(1u, pending.back());

  CoarseGraph cg(problem);

  // Phase 1: absorb zero-cost groups into a neighbour.
  for (unsigned g = 0; g < cg.size() && cg.getNumAlive() > floor; ++g)
    if (cg.isAlive(g) && cg.getCompute(g) == 0)
      mergeSafely(cg, g, /*preferSuccessor=*/true);

  // Phase 2: merge communication-bound groups (compute below the transfer
  // time of their boundary, both directions) across their heaviest edge.
  for (unsigned sweep = 0; sweep < 16 && cg.getNumAlive() > floor; ++sweep) {
    bool merged = false;
    for (unsigned g = 0; g < cg.size() && cg.getNumAlive() > floor; ++g) {
      if (!cg.isAlive(g) || cg.getCompute(g) >= 2 * cg.getCommSeconds(g))
        continue;
      unsigned heaviest = cg.size();
      uint64_t heaviestBytes = 0;
      for (const auto *edges : {&cg.getSuccs(g), &cg.getPreds(g)})
        for (auto &[o, bytes] : *edges)
          if (heaviest == cg.size() || bytes > heaviestBytes ||
              (bytes == heaviestBytes &&
               cg.getRank(o) < cg.getRank(heaviest))) {
            heaviest = o;
            heaviestBytes = bytes;
          }
      if (heaviest == cg.size())
        continue;
      if (heaviest == cg.getLowestSuccessor(g))
        cg.merge(g, heaviest, cg.getRank(heaviest));
      else if (heaviest == cg.getHighestPredecessor(g))
        cg.merge(g, heaviest, cg.getRank(heaviest));
      else if (cg.canMerge(g, heaviest))
        cg.merge(g, heaviest);
      else
        continue;
      merged = true;
    }
    if (!merged)
      break;
  }

  // Phase 3: merge the smallest group into its cheaper safe neighbour,
  // recording a level at every target.
  using Item = std::pair<double, unsigned>;
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> heap;
  std::vector<double> queued(cg.size(), -1);
  for (unsigned g = 0; g < cg.size(); ++g)
    if (cg.isAlive(g)) {
      heap.push({cg.getCompute(g), g});
      queued[g] = cg.getCompute(g);
    }
  while (!pending.empty()) {
    if (cg.getNumAlive() <= pending.front()) {
      levels.push_back(cg.snapshot(pending.front()));
      pending.erase(pending.begin());
      continue;
    }
    if (heap.empty())
      break;
    auto [cost, g] = heap.top();
    heap.pop();
    if (!cg.isAlive(g) || queued[g] != cost)
      continue;
    std::optional<unsigned> survivor =
        mergeSafely(cg, g, /*preferSuccessor=*/false);
    if (!survivor) {
      // An isolated group: nothing to merge it with.
      queued[g] = -1;
      continue;
    }
    heap.push({cg.getCompute(*survivor), *survivor});
    queued[*survivor] = cg.getCompute(*survivor);
  }
  // Disconnected graphs may stop above a target: record what there is.
  for (unsigned target : pending)
    levels.push_back(cg.snapshot(target));
  return levels;
}

std::optional<std::vector<unsigned>>
mlir::pipe::partitioning::assignGreedyBestFit(const PartitionProblem &problem,
                                              const CoarseLevel &level,
                                              unsigned activationsInFlight) {
  const BlockGraph &graph = *problem.graph;
  unsigned numDevices = problem.cluster.size();
  unsigned numGroups = level.numGroups;
  std::vector<llvm::SmallVector<unsigned, 8>> members(numGroups);
  for (unsigned v = 0; v < graph.getNumNodes(); ++v)
    members[level.groupOf[v]].push_back(v);

  // Compute per group and device, saved bytes and parameters per group.
  std::vector<std::vector<double>> compute(numGroups,
                                           std::vector<double>(numDevices));
  std::vector<uint64_t> saved(numGroups), inputs(numGroups);
  for (const BlockValue &value : graph.getValues()) {
    llvm::SmallVector<unsigned, 4> seen;
    for (unsigned c : value.consumers) {
      unsigned g = level.groupOf[c];
      if (g != level.groupOf[value.producer] && !llvm::is_contained(seen, g)) {
        seen.push_back(g);
        inputs[g] += value.bytes;
      }
    }
  }
  std::vector<llvm::SmallVector<unsigned, 4>> params(numGroups);
  for (unsigned g = 0; g < numGroups; ++g) {
    for (unsigned v : members[g]) {
      for (unsigned d = 0; d < numDevices; ++d)
        compute[g][d] +=
            problem.getForwardSeconds(v, d) + problem.getBackwardSeconds(v, d);
      saved[g] += graph.getNode(v).savedBytes;
      for (unsigned p : graph.getNode(v).params)
        if (!llvm::is_contained(params[g], p))
          params[g].push_back(p);
    }
  }
  // Activations in flight per group: fixed, or (0) from the group's height
  // in the quotient graph capped at the device count, a stand-in for the
  // height of the stage it will join.
  std::vector<unsigned> inFlight(numGroups, activationsInFlight);
  if (activationsInFlight == 0) {
    std::vector<unsigned> height(numGroups, 1);
    // Group ids are a topological order of the quotient graph.
    std::vector<llvm::SmallVector<unsigned, 4>> groupSuccs(numGroups);
    for (const BlockValue &value : graph.getValues())
      for (unsigned c : value.consumers) {
        unsigned a = level.groupOf[value.producer], b = level.groupOf[c];
        if (a != b && !llvm::is_contained(groupSuccs[a], b))
          groupSuccs[a].push_back(b);
      }
    for (unsigned g = numGroups; g-- > 0;)
      for (unsigned s : groupSuccs[g])
        height[g] = std::max(height[g], height[s] + 1);
    for (unsigned g = 0; g < numGroups; ++g)
      inFlight[g] = problem.schedule.getActivationsInFlight(
          std::min(height[g], numDevices), numDevices);
  }

  std::vector<unsigned> order(numGroups);
  for (unsigned g = 0; g < numGroups; ++g)
    order[g] = g;
  llvm::stable_sort(order, [&](unsigned a, unsigned b) {
    return compute[a][0] > compute[b][0];
  });

  double perTrainable = problem.memory.getBytesPerTrainableByte();
  bool stashing = problem.schedule.family == ScheduleFamily::Async &&
                  problem.schedule.weightStashing;
  std::vector<double> load(numDevices, 0), memory(numDevices, 0);
  std::vector<std::vector<bool>> holds(
      numDevices, std::vector<bool>(graph.getNumParams(), false));
  std::vector<unsigned> deviceOfGroup(numGroups);
  for (unsigned g : order) {
    unsigned best = numDevices;
    double bestLoad = HUGE_VAL;
    double bestExtra = 0;
    for (unsigned d = 0; d < numDevices; ++d) {
      // Under stage recomputation a group keeps its inputs per micro-batch
      // and its saved activations once.
      double extra = problem.schedule.recompute
                         ? double(inputs[g]) * inFlight[g] + saved[g]
                         : double(saved[g]) * inFlight[g];
      unsigned versions = stashing ? inFlight[g] : 1;
      for (unsigned p : params[g]) {
        const ParamInfo &param = graph.getParam(p);
        // Stashed versions are per stage; count them for every group.
        if (param.trainable)
          extra += double(versions - 1) * param.bytes;
        if (holds[d][p])
          continue;
        extra += param.trainable ? param.bytes * perTrainable
                                 : param.bytes * problem.memory.weightCopies;
      }
      if (memory[d] + extra >
          double(problem.cluster.devices[d].getUsableBytes()))
        continue;
      double after = load[d] + compute[g][d];
      if (after < bestLoad) {
        best = d;
        bestLoad = after;
        bestExtra = extra;
      }
    }
    if (best == numDevices)
      return std::nullopt;
    deviceOfGroup[g] = best;
    load[best] = bestLoad;
    memory[best] += bestExtra;
    for (unsigned p : params[g])
      holds[best][p] = true;
  }
  std::vector<unsigned> deviceOfNode(graph.getNumNodes());
  for (unsigned v = 0; v < graph.getNumNodes(); ++v)
    deviceOfNode[v] = deviceOfGroup[level.groupOf[v]];
  return deviceOfNode;
}
