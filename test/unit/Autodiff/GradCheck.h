//===- GradCheck.h - JIT gradient checks vs finite differences --*- C++ -*-===//
//
// Compiles a pipe module (params, blocks, a graph returning a scalar loss)
// through pipe-differentiate, pipe-lower-graph-to-func, pipe-f32-to-f64 and
// the upstream CPU lowering, runs `<graph>_forward` / `<graph>_grad` through
// mlir::ExecutionEngine, and compares the gradients with central finite
// differences in f64.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_TEST_UNIT_AUTODIFF_GRADCHECK_H
#define PIPE_TEST_UNIT_AUTODIFF_GRADCHECK_H

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/MLIRContext.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pipetest {

/// A host tensor: f64 data for float tensors, i64 for integer ones.
struct HostTensor {
  std::vector<int64_t> shape;
  bool isInt = false;
  std::vector<double> f;
  std::vector<int64_t> i;
  int64_t numElements() const {
    int64_t n = 1;
    for (int64_t s : shape)
      n *= s;
    return n;
  }
};

struct ArgSpec {
  std::string name;
  std::vector<int64_t> shape;
  bool isInt = false;
  bool isFloat = false;
};

/// How to draw a tensor's random values.
struct InitSpec {
  double lo = -1.0, hi = 1.0;
  int64_t intHi = 0; // integers drawn in [0, intHi)
};

class CompiledGraph {
public:
  /// Compiles `source`; on failure `error()` says why (diagnostics included).
  /// `afterDifferentiate` is a pass pipeline run right after
  /// pipe-differentiate (e.g. "pipe-precision{gemm=bf16}"), empty for none.
  CompiledGraph(const std::string &source, const std::string &recompute,
                const std::string &graphName = "g",
                const std::string &afterDifferentiate = "");
  ~CompiledGraph();

  bool ok() const { return engine != nullptr; }
  const std::string &error() const { return errorText; }
  /// The IR after pipe-differentiate (for inspection in failures).
  const std::string &differentiatedIR() const { return diffIR; }

  const std::vector<ArgSpec> &params() const { return paramSpecs; }
  const std::vector<ArgSpec> &inputs() const { return inputSpecs; }

  double forward(const std::vector<HostTensor> &params,
                 const std::vector<HostTensor> &inputs);
  /// Returns the loss and fills one gradient per float parameter.
  double grad(const std::vector<HostTensor> &params,
              const std::vector<HostTensor> &inputs,
              std::vector<HostTensor> &grads);

  /// Calls any lowered function (a block lowered to `func.func @<block>`, or
  /// an entry point) with `args`; every result is a float tensor (f64 after
  /// pipe-f32-to-f64) of the given shape. Used for bit-exact comparisons of
  /// block outputs.
  void invoke(const std::string &fn, const std::vector<HostTensor> &args,
              const std::vector<std::vector<int64_t>> &resultShapes,
              std::vector<HostTensor> &results) {
    call(fn, args, {}, resultShapes, results);
  }

private:
  void call(const std::string &fn, const std::vector<HostTensor> &params,
            const std::vector<HostTensor> &inputs,
            const std::vector<std::vector<int64_t>> &resultShapes,
            std::vector<HostTensor> &results);

  mlir::MLIRContext context;
  std::unique_ptr<mlir::ExecutionEngine> engine;
  std::string errorText, diffIR, graph;
  std::vector<ArgSpec> paramSpecs, inputSpecs;
};

/// Random tensor for `spec` (deterministic given `seed`).
HostTensor randomTensor(const ArgSpec &spec, const InitSpec &init,
                        uint64_t seed);

/// Result of a finite-difference comparison.
struct GradCheckResult {
  /// Worst norm-wise relative error over all float parameters.
  double maxRelError = 0.0;
  std::string worstParam;
  std::string report;
};

/// Compares every float parameter's gradient with central differences.
GradCheckResult checkGradients(CompiledGraph &graph,
                               std::vector<HostTensor> params,
                               const std::vector<HostTensor> &inputs,
                               double step = 1e-5);

/// One op (or a few) under test: a block whose parameters are `params`,
/// taking integer inputs `intInputs` from the graph, computing `%out`.
struct OpCase {
  std::vector<std::pair<std::string, std::string>> params;    // name, type
  std::vector<std::pair<std::string, std::string>> intInputs; // name, type
  std::string outType; // a float tensor type
  unsigned outRank = 0;
  std::string body; // ops computing %out from %<param> and %<input>
};

/// Affine-map aliases available to every module built below.
extern const char *kMapAliases;

/// A module with graph @g: the op block (reading the params as block
/// parameters, or, with `viaInputs`, as data inputs produced by a source
/// block) followed by a loss block computing sum(out * w) for a random
/// parameter w.
std::string buildOpModule(const OpCase &op, bool viaInputs);

} // namespace pipetest

#endif // PIPE_TEST_UNIT_AUTODIFF_GRADCHECK_H
