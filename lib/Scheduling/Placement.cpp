//===- Placement.cpp - Placement algorithms and their registry ------------===//

#include "pipe/Scheduling/Placement.h"
#include "pipe/Support/NamedFactoryRegistry.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::pipe;

PlacementAlgorithm::~PlacementAlgorithm() = default;

namespace {
/// Contiguous stages in graph order minimising the most expensive stage
/// (dynamic program over prefix sums), stage k on device k mod devices: one
/// stage per device, or `stagesPerDevice` round-robin as interleaved
/// schedules want.
class BalancedPlacement : public PlacementAlgorithm {
public:
  StringRef getName() const override { return "balanced"; }

  FailureOr<PlacementResult> place(const PlacementProblem &problem,
                                   ScheduleDiagFn diag) const override {
    unsigned n = problem.blockCosts.size();
    unsigned k = problem.numDevices * problem.stagesPerDevice;
    if (problem.numDevices == 0 || problem.stagesPerDevice == 0) {
      diag("placement needs at least one device and one stage per device");
      return failure();
    }
    if (n < k) {
      diag("cannot make " + Twine(k) + " stages (" + Twine(problem.numDevices) +
           " devices x " + Twine(problem.stagesPerDevice) +
           " per device) from " + Twine(n) + " block instances");
      return failure();
    }
    SmallVector<double> prefix(n + 1, 0);
    for (unsigned i = 0; i < n; ++i)
      prefix[i + 1] = prefix[i] + problem.blockCosts[i];
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
    PlacementResult result;
    result.stageOfBlock.assign(n, 0);
    unsigned end = n;
    for (unsigned j = k; j >= 1; --j) {
      unsigned start = cut[j][end];
      for (unsigned i = start; i < end; ++i)
        result.stageOfBlock[i] = j - 1;
      end = start;
    }
    for (unsigned s = 0; s < k; ++s)
      result.deviceOfStage.push_back(s % problem.numDevices);
    return result;
  }
};

/// The built-in algorithms, then whatever is added at run time.
struct Registry : NamedFactoryRegistry<PlacementAlgorithm> {
  Registry() {
    add("balanced", [] { return std::make_unique<BalancedPlacement>(); });
  }
};
Registry &getRegistry() {
  static Registry registry;
  return registry;
}
} // namespace

bool mlir::pipe::registerPlacementAlgorithm(StringRef name,
                                            PlacementAlgorithmFactory factory) {
  return getRegistry().add(name, std::move(factory));
}

std::unique_ptr<PlacementAlgorithm>
mlir::pipe::createPlacementAlgorithm(StringRef name) {
  return getRegistry().create(name);
}

SmallVector<std::string> mlir::pipe::getPlacementAlgorithmNames() {
  return getRegistry().getNames();
}
