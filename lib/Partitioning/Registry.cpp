//===- Registry.cpp - Partitioner registry and driver ---------------------===//

#include "pipe/Partitioning/Partitioner.h"

#include "llvm/Support/FormatVariadic.h"

#include <chrono>
#include <map>

using namespace mlir::pipe::partitioning;

Partitioner::~Partitioner() = default;

namespace {

struct Entry {
  std::string summary;
  PartitionerFactory factory;
};

std::map<std::string, Entry> &getRegistry() {
  static std::map<std::string, Entry> registry = [] {
    std::map<std::string, Entry> builtins;
#define PIPE_PARTITIONER(NAME, FACTORY, SUMMARY)                               \
  builtins[NAME] = Entry{SUMMARY, &FACTORY};
#include "pipe/Partitioning/Partitioners.def"
    return builtins;
  }();
  return registry;
}

} // namespace

bool mlir::pipe::partitioning::registerPartitioner(llvm::StringRef name,
                                                   llvm::StringRef summary,
                                                   PartitionerFactory factory) {
  return getRegistry()
      .try_emplace(name.str(), Entry{summary.str(), std::move(factory)})
      .second;
}

std::unique_ptr<Partitioner>
mlir::pipe::partitioning::createPartitioner(llvm::StringRef name) {
  auto &registry = getRegistry();
  auto it = registry.find(name.str());
  if (it == registry.end())
    return nullptr;
  return it->second.factory();
}

std::vector<std::pair<std::string, std::string>>
mlir::pipe::partitioning::getPartitioners() {
  std::vector<std::pair<std::string, std::string>> result;
  for (auto &[name, entry] : getRegistry())
    result.push_back({name, entry.summary});
  return result;
}

std::string mlir::pipe::partitioning::getPartitionerNames() {
  std::string result;
  for (auto &[name, entry] : getRegistry()) {
    if (!result.empty())
      result += ", ";
    result += name;
  }
  return result;
}

llvm::Expected<PartitionResult>
mlir::pipe::partitioning::runPartitioner(llvm::StringRef algorithm,
                                         const PartitionProblem &problem) {
  if (llvm::Error err = problem.verify())
    return std::move(err);
  std::unique_ptr<Partitioner> partitioner = createPartitioner(algorithm);
  if (!partitioner)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("unknown partitioning algorithm '{0}' (known: {1})",
                      algorithm, getPartitionerNames()));
  PartitionResult result;
  result.algorithm = algorithm.str();
  if (problem.graph->getNumNodes() == 0)
    return result;

  auto start = std::chrono::steady_clock::now();
  llvm::Expected<Partition> partition =
      partitioner->partition(problem, result.notes);
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (!partition)
    return partition.takeError();
  result.partition = std::move(*partition);
  if (llvm::Error err =
          result.partition.verify(*problem.graph, problem.cluster.size()))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("algorithm '{0}' returned an invalid partition: {1}",
                      algorithm, llvm::toString(std::move(err))));
  result.partition.canonicalize(*problem.graph);
  result.evaluation =
      evaluate(problem, result.partition, /*useStepTimeFn=*/true);
  if (!result.evaluation.acyclic)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("algorithm '{0}' returned a partition whose stage graph "
                      "has a cycle",
                      algorithm));
  if (problem.checkMemory && !result.evaluation.fitsMemory)
    return makeInfeasibleError(problem, algorithm);
  return result;
}
