//===- GenericAdjoint.h - VJPs of linalg.generic ----------------*- C++ -*-===//
//
// Internal to lib/Autodiff: the general derivative of a `linalg.generic`
// (and the scalar rules of its body), used by the block-level sweep.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_LIB_AUTODIFF_GENERICADJOINT_H
#define PIPE_LIB_AUTODIFF_GENERICADJOINT_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"

namespace mlir::pipe::autodiff::detail {

/// A zero tensor of `type` (tensor.empty + linalg.fill).
Value createZeros(OpBuilder &b, Location loc, RankedTensorType type);

/// Elementwise sum of two tensors of the same type, as a linalg.generic.
Value createTensorAdd(OpBuilder &b, Location loc, Value lhs, Value rhs);

/// True for ranked tensors with a float element type.
bool isFloatTensor(Type type);

/// Rewrites each float result of a reduction `op` that yields
/// `select(c, acc + v, acc)` (a guarded sum: torch-mlir's aten.embedding_bag
/// in sum mode) into `acc + select(c, v, 0)`, the same value, so that the
/// sum rule applies.
void rewriteGuardedSums(linalg::GenericOp op);

/// Checks that the vector-Jacobian product of `op` with respect to its active
/// operands (and active tensors its body reads with tensor.extract) can be
/// built; emits a diagnostic naming the offending op otherwise.
LogicalResult checkGenericDifferentiable(linalg::GenericOp op,
                                         function_ref<bool(Value)> isActive);

/// Builds the vector-Jacobian product of `op` at the builder's insertion
/// point. `cotangents[k]` is the cotangent of result k (null: zero). For every
/// active operand and every active tensor read by a tensor.extract in the
/// body, calls `accumulate(value, gradient)` with its gradient. The op must
/// have passed checkGenericDifferentiable.
void buildGenericAdjoint(OpBuilder &b, linalg::GenericOp op,
                         ArrayRef<Value> cotangents,
                         function_ref<bool(Value)> isActive,
                         function_ref<void(Value, Value)> accumulate);

} // namespace mlir::pipe::autodiff::detail

#endif // PIPE_LIB_AUTODIFF_GENERICADJOINT_H
