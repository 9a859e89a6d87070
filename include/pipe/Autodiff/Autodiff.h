//===- Autodiff.h - Reverse-mode differentiation of pipe blocks -*- C++ -*-===//
//
// The differentiation engine behind `pipe-differentiate`: given a forward
// `pipe.block`, it builds the vector-Jacobian product of the block as two new
// blocks, one producing the cotangents of the block's data inputs and one
// producing the gradients of its parameters. Rules are derived from
// `linalg.generic` in general (indexing maps, iterator types and the scalar
// body); named linalg ops are generalized first. See docs/autodiff.md.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_AUTODIFF_AUTODIFF_H
#define PIPE_AUTODIFF_AUTODIFF_H

#include "pipe/Dialect/Pipe/IR/Pipe.h"

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>

namespace mlir::pipe::autodiff {

/// What the forward pass keeps for the backward pass of a block.
enum class RecomputePolicy {
  /// The forward block also returns every intermediate the backward reads
  /// (saved activations); the backward blocks take them as arguments.
  SaveAll,
  /// The backward blocks recompute the forward from the block's inputs. Only
  /// the inputs are kept (counted in `saved_bytes`).
  SaveInputs,
  /// Same IR as SaveInputs, but the block's inputs are not counted as kept
  /// by this block: the schedule recomputes them from an earlier checkpoint
  /// (stage-level recomputation as in GPipe/FTPipe).
  Recompute,
};

/// Parses "save-all", "save-inputs" or "recompute".
std::optional<RecomputePolicy> parseRecomputePolicy(llvm::StringRef text);
llvm::StringRef stringifyRecomputePolicy(RecomputePolicy policy);

/// Discardable attribute names used on forward blocks and graphs.
inline constexpr llvm::StringLiteral kBackwardInputAttr = "pipe.backward_input";
inline constexpr llvm::StringLiteral kBackwardWeightAttr =
    "pipe.backward_weight";
/// Both parts in one block (one reverse sweep), for a full backward.
inline constexpr llvm::StringLiteral kBackwardAttr = "pipe.backward";
inline constexpr llvm::StringLiteral kSavedResultsAttr = "pipe.saved_results";
inline constexpr llvm::StringLiteral kRecomputeAttr = "pipe.recompute";
inline constexpr llvm::StringLiteral kLossSeedAttr = "pipe.loss_seed";
/// On a graph (or function) result after the loss: a task metric the
/// trainer reports, not differentiated. Its value names the metric
/// ("accuracy"); the result is a tensor<2xi64> of counts [hits, counted],
/// summed over micro-batches.
inline constexpr llvm::StringLiteral kMetricAttr = "pipe.metric";
inline constexpr llvm::StringLiteral kSavedBytesAttr = "pipe.saved_bytes";
inline constexpr llvm::StringLiteral kFlopsAttr = "pipe.flops";
/// Parameter positions of a block that every run binds to a frozen
/// `pipe.param` (array<i64>, set by pipe-differentiate): no gradient.
inline constexpr llvm::StringLiteral kFrozenParamsAttr = "pipe.frozen_params";

/// The result of differentiating one forward block.
struct BackwardBlocks {
  /// Cotangents of the float data inputs; null if the block has none.
  BlockOp input;
  /// Gradients of the parameters; null if the block has no parameters.
  BlockOp weight;
  /// Both (input cotangents, then parameter gradients) from one reverse
  /// sweep; null unless the block has both.
  BlockOp fused;
  /// Number of trailing forward results that are saved activations.
  unsigned numSaved = 0;
  /// Activation bytes kept for the backward under the policy.
  uint64_t savedBytes = 0;
  /// FLOPs of the two backward blocks (multiply-add counted as two).
  uint64_t inputFlops = 0;
  uint64_t weightFlops = 0;
};

/// Differentiates `forward`, which must sit in a module. Inserts the backward
/// blocks after it, and under SaveAll appends the saved activations to the
/// forward block's results (callers must update `pipe.run` users). Sets the
/// `pipe.backward_input`, `pipe.backward_weight`, `pipe.saved_results` and
/// `pipe.recompute` attributes and updates a `#pipe.cost` attribute when one
/// is present. On failure emits a diagnostic naming the first op without a
/// derivative rule and leaves the module unchanged.
FailureOr<BackwardBlocks> differentiateBlock(BlockOp forward,
                                             RecomputePolicy policy);

/// Calling conventions shared with graph-level lowering.
/// Input positions (among the block's data inputs) that get a cotangent:
/// those of ranked tensor type with a float element type.
SmallVector<unsigned> getDifferentiableInputs(BlockOp block);
/// Result positions (among the non-saved results) that take a cotangent.
SmallVector<unsigned> getDifferentiableResults(BlockOp block);
/// Parameter positions that get a gradient: float tensors not listed in
/// `pipe.frozen_params`.
SmallVector<unsigned> getDifferentiableParams(BlockOp block);
/// Number of trailing results that are saved activations (0 if none).
unsigned getNumSavedResults(BlockOp block);

/// FLOPs of the float arithmetic inside `root`, each op weighted by the trip
/// counts of the enclosing `linalg.generic`s and `scf.for`s.
uint64_t countFlops(Operation *root);

/// Bytes of a statically shaped tensor type (0 for other types).
uint64_t getTensorBytes(Type type);

} // namespace mlir::pipe::autodiff

#endif // PIPE_AUTODIFF_AUTODIFF_H
