//===- StageGraph.cpp - Data flow between the stages of a placement -------===//

#include "pipe/Dialect/Pipe/IR/StageGraph.h"

#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace mlir::pipe;

FailureOr<StageGraph> StageGraph::build(PlacementOp placement, GraphOp graph) {
  StageGraph result;
  llvm::StringMap<RunOp> runs;
  for (RunOp run : graph.getBody().getOps<RunOp>())
    runs[run.getInstance()] = run;

  for (StageOp stage : placement.getBody().getOps<StageOp>()) {
    unsigned index = result.stages.size();
    result.stages.push_back(stage);
    result.stageIndex.try_emplace(stage.getSymName(), index);
    for (StringRef name : stage.getBlocks().getAsValueRange<StringAttr>()) {
      RunOp run = runs.lookup(name);
      if (!run)
        return stage.emitOpError("places block instance \"")
               << name << "\", which graph @" << graph.getSymName()
               << " does not have";
      auto [it, inserted] = result.stageOfRun.try_emplace(run, index);
      if (!inserted) {
        InFlightDiagnostic diag = stage.emitOpError("places block instance \"")
                                  << name << "\", which stage @"
                                  << result.stages[it->second].getSymName()
                                  << " already places";
        diag.attachNote(result.stages[it->second].getLoc())
            << "first placed here";
        return diag;
      }
    }
  }
  for (RunOp run : graph.getBody().getOps<RunOp>())
    if (!result.stageOfRun.count(run))
      return placement.emitOpError("leaves block instance \"")
             << run.getInstance() << "\" of graph @" << graph.getSymName()
             << " without a stage";

  for (RunOp run : graph.getBody().getOps<RunOp>()) {
    unsigned consumer = result.stageOfRun.lookup(run);
    for (Value input : run.getInputs()) {
      auto producerRun = input.getDefiningOp<RunOp>();
      if (!producerRun)
        continue;
      unsigned producer = result.stageOfRun.lookup(producerRun);
      if (producer != consumer)
        result.edges[{producer, consumer}].insert(input);
    }
  }
  return result;
}

std::optional<unsigned> StageGraph::lookupStage(StringRef name) const {
  auto it = stageIndex.find(name);
  if (it == stageIndex.end())
    return std::nullopt;
  return it->second;
}

ArrayRef<Value> StageGraph::getCrossingValues(unsigned producer,
                                              unsigned consumer) const {
  auto it = edges.find({producer, consumer});
  if (it == edges.end())
    return {};
  return it->second.getArrayRef();
}

SmallVector<Type> StageGraph::getCrossingTypes(unsigned producer,
                                               unsigned consumer) const {
  SmallVector<Type> types;
  for (Value value : getCrossingValues(producer, consumer))
    types.push_back(value.getType());
  return types;
}

SmallVector<unsigned> StageGraph::getConsumers(unsigned stage) const {
  SmallVector<unsigned> result;
  for (const auto &edge : edges)
    if (edge.first.first == stage)
      result.push_back(edge.first.second);
  return result;
}

SmallVector<unsigned> StageGraph::getProducers(unsigned stage) const {
  SmallVector<unsigned> result;
  for (const auto &edge : edges)
    if (edge.first.second == stage)
      result.push_back(edge.first.first);
  return result;
}

SmallVector<unsigned> StageGraph::findCycle() const {
  enum class Mark { Unvisited, OnPath, Done };
  SmallVector<Mark> marks(stages.size(), Mark::Unvisited);
  SmallVector<SmallVector<unsigned>> successors(stages.size());
  for (const auto &edge : edges)
    successors[edge.first.first].push_back(edge.first.second);

  // Iterative DFS: hostile inputs may have very long stage chains.
  for (unsigned root = 0; root < stages.size(); ++root) {
    if (marks[root] != Mark::Unvisited)
      continue;
    SmallVector<std::pair<unsigned, unsigned>> path = {{root, 0}};
    marks[root] = Mark::OnPath;
    while (!path.empty()) {
      auto &[node, next] = path.back();
      if (next == successors[node].size()) {
        marks[node] = Mark::Done;
        path.pop_back();
        continue;
      }
      unsigned succ = successors[node][next++];
      if (marks[succ] == Mark::OnPath) {
        SmallVector<unsigned> cycle;
        auto start =
            llvm::find_if(path, [&](auto &p) { return p.first == succ; });
        for (auto it = start; it != path.end(); ++it)
          cycle.push_back(it->first);
        cycle.push_back(succ);
        return cycle;
      }
      if (marks[succ] == Mark::Unvisited) {
        marks[succ] = Mark::OnPath;
        path.push_back({succ, 0});
      }
    }
  }
  return {};
}

SmallVector<unsigned> StageGraph::topologicalOrder() const {
  SmallVector<unsigned> inDegree(stages.size(), 0);
  SmallVector<SmallVector<unsigned>> successors(stages.size());
  for (const auto &edge : edges) {
    successors[edge.first.first].push_back(edge.first.second);
    ++inDegree[edge.first.second];
  }
  SmallVector<unsigned> order;
  for (unsigned i = 0; i < stages.size(); ++i)
    if (inDegree[i] == 0)
      order.push_back(i);
  for (unsigned head = 0; head < order.size(); ++head)
    for (unsigned succ : successors[order[head]])
      if (--inDegree[succ] == 0)
        order.push_back(succ);
  return order;
}
