//===- ParamInit.h - Initial values for weights without data ----*- C++ -*-===//
//
// Exports often come without their weights (torch-mlir elides large ones),
// so the lift pass gives such weights fresh values. What a weight needs
// depends on how the model uses it, not on its shape alone: a matrix is
// drawn from a distribution scaled by the fan-in and fan-out of the matmul
// or convolution that contracts it, a bias starts at zero, a normalisation
// scale at one, and an eval-mode BatchNorm's running mean and variance at 0
// and 1 (they are statistics, never trained).
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_DIALECT_PIPE_TRANSFORMS_PARAMINIT_H
#define PIPE_DIALECT_PIPE_TRANSFORMS_PARAMINIT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Value.h"

#include <optional>

namespace mlir::pipe {

/// What a weight is to the computation that reads it.
enum class WeightRole {
  /// Contracted (matmul, convolution) or otherwise read as a table.
  Matrix,
  /// A vector that multiplies (a normalisation scale).
  Scale,
  /// A vector that is added (a bias, a normalisation shift).
  Bias,
  /// An eval-mode BatchNorm's running mean: x - mean, times 1/sqrt(var+eps).
  RunningMean,
  /// An eval-mode BatchNorm's running variance: 1/sqrt(var + eps).
  RunningVariance,
};

struct WeightUse {
  WeightRole role = WeightRole::Matrix;
  /// Elements of the weight that each output element reads (the
  /// contraction dimensions), and elements each input element reaches.
  int64_t fanIn = 1, fanOut = 1;
  /// Whether the fans come from a contraction of the weight, rather than
  /// from PyTorch's convention for its shape ([out, in, kernel...]).
  bool fromContraction = false;

  bool isStatistic() const {
    return role == WeightRole::RunningMean ||
           role == WeightRole::RunningVariance;
  }
};

/// How the weight read as `weight` (a constant's result, a load, an
/// argument) is used: its role and its fans. Follows the value through
/// reshapes, casts and copies (transposes, broadcasts, elementwise generics
/// that yield it) to the op that computes with it.
WeightUse analyzeWeightUse(Value weight);

enum class InitKind { Normal, XavierUniform, KaimingUniform, Zeros };

/// The kind named `name` (normal, xavier-uniform, kaiming-uniform, zeros).
std::optional<InitKind> parseInitKind(StringRef name);

/// The names parseInitKind accepts, for messages.
StringRef getInitKindNames();

/// The initial value of the weight `name` of `type` used as `use`: zeros
/// for biases and running means, ones for scales and running variances,
/// else drawn as `kind` says with the fans of `use`. A pure function of its
/// arguments: the draw depends on `seed` and `name` only, so the values do
/// not change with the order of the weights or the number of threads.
/// Null for element types other than f16, bf16, f32 and f64.
ElementsAttr getInitialValue(RankedTensorType type, const WeightUse &use,
                             InitKind kind, uint64_t seed, StringRef name);

} // namespace mlir::pipe

#endif // PIPE_DIALECT_PIPE_TRANSFORMS_PARAMINIT_H
