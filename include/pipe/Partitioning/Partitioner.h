//===- Partitioner.h - Partitioning algorithms and their registry -*- C++
//-*-===//
//
// A partitioner turns a PartitionProblem into a Partition. The built-in ones
// are listed in Partitioners.def (one line each); a new algorithm is one
// file defining a factory plus one line there, or a registerPartitioner()
// call at run time. Every partitioner is ranked by the same objective
// (Evaluation.h).
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_PARTITIONING_PARTITIONER_H
#define PIPE_PARTITIONING_PARTITIONER_H

#include "pipe/Partitioning/Evaluation.h"

#include <functional>
#include <memory>

namespace mlir::pipe::partitioning {

class Partitioner {
public:
  virtual ~Partitioner();
  virtual llvm::StringRef getName() const = 0;
  /// Finds a feasible partition, or fails with a message (for infeasible
  /// problems: use makeInfeasibleError). `notes` receives free-form lines
  /// about the search (candidates tried, which one won) for reports.
  virtual llvm::Expected<Partition>
  partition(const PartitionProblem &problem,
            std::vector<std::string> &notes) const = 0;
};

using PartitionerFactory = std::function<std::unique_ptr<Partitioner>()>;

/// Adds an algorithm at run time; false when the name is taken. The
/// built-in ones (Partitioners.def) are always registered.
bool registerPartitioner(llvm::StringRef name, llvm::StringRef summary,
                         PartitionerFactory factory);
/// The algorithm called `name`, or null.
std::unique_ptr<Partitioner> createPartitioner(llvm::StringRef name);
/// (name, summary) of every registered algorithm, sorted by name.
std::vector<std::pair<std::string, std::string>> getPartitioners();
/// "exact, mixed, seq".
std::string getPartitionerNames();

struct PartitionResult {
  std::string algorithm;
  Partition partition;
  /// With the problem's StepTimeFn applied when it has one.
  Evaluation evaluation;
  std::vector<std::string> notes;
  /// Wall-clock seconds the algorithm took.
  double seconds = 0;
};

/// Looks `algorithm` up, runs it, checks the result (every block placed
/// once, stage graph acyclic, memory fits), canonicalizes and evaluates it.
llvm::Expected<PartitionResult> runPartitioner(llvm::StringRef algorithm,
                                               const PartitionProblem &problem);

/// The error for a problem no partition of `algorithm`'s kind fits: states
/// the smallest per-device memory with which a contiguous split fits, and a
/// lower bound below which no partition fits.
llvm::Error makeInfeasibleError(const PartitionProblem &problem,
                                llvm::StringRef algorithm);

// Declarations of the built-in factories.
#define PIPE_PARTITIONER(NAME, FACTORY, SUMMARY)                               \
  std::unique_ptr<Partitioner> FACTORY();
#include "pipe/Partitioning/Partitioners.def"

} // namespace mlir::pipe::partitioning

#endif // PIPE_PARTITIONING_PARTITIONER_H
