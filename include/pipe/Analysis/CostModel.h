//===- CostModel.h - Analytic cost of ops and blocks ------------*- C++ -*-===//
//
// FLOPs, bytes and saved-activation memory of linalg-on-tensors ops and of
// whole `pipe.block`s, forward and (analytically) backward, for one
// micro-batch; plus measured profiles that override the estimate. Pure
// analysis: nothing here changes the IR. The formulas are documented in
// docs/blocks-and-costs.md; in short:
//
//  - forward FLOPs of a linalg op = product of its static loop ranges times
//    the FLOPs of one execution of its payload (each float arith op counts 1,
//    math.fma 2, each transcendental `transcendentalFlops`), so a matmul
//    MxNxK is exactly 2*M*N*K;
//  - every differentiable input operand costs one more pass over the same
//    iteration domain in the backward (the forward FLOPs again): exact for
//    contractions (dA = dC * B^T is again 2*M*N*K), proportional otherwise.
//    Operands derived from block inputs count as input-gradient FLOPs, those
//    derived only from parameters as weight-gradient FLOPs;
//  - saved bytes depend on the recompute policy.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_ANALYSIS_COSTMODEL_H
#define PIPE_ANALYSIS_COSTMODEL_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Region.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mlir::pipe {

class BlockOp;
class CostAttr;

/// What a block keeps in memory between its forward and its backward.
enum class RecomputePolicy {
  /// Every intermediate the backward reads is kept: no recomputation.
  SaveAll,
  /// Only the block's data inputs are kept; the backward first re-runs the
  /// forward, which adds the forward FLOPs to the input-gradient FLOPs.
  /// `save-inputs` is accepted as another spelling of this policy: keeping
  /// only the inputs and recomputing are the same thing for a block.
  Recompute,
};

/// Parses "save-all", "recompute" or "save-inputs".
std::optional<RecomputePolicy> parseRecomputePolicy(llvm::StringRef text);
llvm::StringRef stringifyRecomputePolicy(RecomputePolicy policy);

/// Knobs of the analytic model.
struct CostOptions {
  RecomputePolicy recompute = RecomputePolicy::SaveAll;
  /// Bytes per element of floating-point tensors (4 = f32, 2 = bf16/f16);
  /// 0 uses each tensor's own element width. Integer tensors always use
  /// their own width.
  unsigned floatBytes = 4;
  /// FLOPs charged for one transcendental (exp, log, tanh, erf, sqrt, rsqrt,
  /// pow, sin, cos, ...). 1 by default, like every other float op.
  uint64_t transcendentalFlops = 1;
};

/// Parses a dtype name for `CostOptions::floatBytes`: f64, f32, tf32, bf16,
/// f16, f8 (any f8E... name), or "native" (0: the IR's own widths).
std::optional<unsigned> parseFloatBytes(llvm::StringRef dtype);

/// Where a value comes from inside a block body: from the block's inputs
/// that need a gradient, from its parameters, from inputs that need none
/// (token ids, labels: graph arguments), or none of these (constants,
/// tensor.empty).
struct ValueOrigin {
  bool fromInput = false;
  bool fromParam = false;
  bool fromData = false;
};

/// Forward data-flow classification of every value of a function-like body
/// whose first `numParams` entry arguments are parameters and whose other
/// arguments are inputs. `inputNeedsGrad[i]` says whether input i (counted
/// after the parameters) needs a gradient; all do when it is empty.
/// `pipe.get_param` results count as parameters.
class ValueOrigins {
public:
  ValueOrigins(Region &body, unsigned numParams,
               ArrayRef<bool> inputNeedsGrad = {});
  ValueOrigin lookup(Value value) const { return origins.lookup(value); }
  /// True for values with a gradient: floating-point and derived from an
  /// input or a parameter.
  bool isDifferentiable(Value value) const;

private:
  llvm::DenseMap<Value, ValueOrigin> origins;
};

/// Cost of one op.
struct OpCost {
  uint64_t forwardFlops = 0;
  uint64_t backwardInputFlops = 0;
  uint64_t backwardWeightFlops = 0;
  uint64_t bytesRead = 0;
  uint64_t bytesWritten = 0;
  /// Operands (and tensors captured by the payload) whose values the op's
  /// backward reads: none for add/sub or copies, the other factor of a
  /// product, the argument of exp/tanh, the indices of a gather.
  SmallVector<Value, 4> readByBackward;
};

/// Cost of a block (or any function-like region) for one micro-batch.
struct BlockCost {
  uint64_t forwardFlops = 0;
  /// Includes `recomputeFlops`.
  uint64_t backwardInputFlops = 0;
  uint64_t backwardWeightFlops = 0;
  /// Forward FLOPs re-run in the backward under RecomputePolicy::Recompute.
  uint64_t recomputeFlops = 0;
  uint64_t paramBytes = 0;
  uint64_t savedBytes = 0;
  /// Sum of `resultBytes`: what crosses to consumers of the block.
  uint64_t outputBytes = 0;
  llvm::SmallVector<uint64_t> resultBytes;
  uint64_t bytesRead = 0;
  uint64_t bytesWritten = 0;
};

/// Size in bytes of a statically shaped tensor (scalars: their element size;
/// anything else: 0) under `options.floatBytes`.
uint64_t getTypeBytes(Type type, const CostOptions &options);

/// FLOPs of one execution of `op` when it is a scalar op inside a payload
/// (addf: 1, fma: 2, exp: transcendentalFlops, casts and integer ops: 0).
uint64_t getScalarOpFlops(Operation *op, const CostOptions &options);

/// FLOPs of one execution of the payload of a linalg op (nested regions
/// included).
uint64_t getPayloadFlops(Operation *linalgOp, const CostOptions &options);

/// Cost of one op of a block body. Linalg ops (named or generic) need static
/// loop ranges, other ops are free except elementwise arith/math on tensors
/// and linalg.softmax; ops with dynamic shapes are rejected with an error
/// on the op.
FailureOr<OpCost> estimateOpCost(Operation *op, const ValueOrigins &origins,
                                 const CostOptions &options);

/// Sum over the ops of `body` (nested ops included) plus the block-level
/// figures: parameter, saved and output bytes. The first `numParams` entry
/// arguments are parameters; the terminator's operands are the outputs.
/// `inputNeedsGrad` as for ValueOrigins: inputs that need no gradient get
/// no input-gradient FLOPs (but are saved when the backward reads them).
FailureOr<BlockCost> estimateRegionCost(Region &body, unsigned numParams,
                                        const CostOptions &options,
                                        ArrayRef<bool> inputNeedsGrad = {});
FailureOr<BlockCost> estimateBlockCost(BlockOp block,
                                       const CostOptions &options,
                                       ArrayRef<bool> inputNeedsGrad = {});

//===----------------------------------------------------------------------===//
// Measured profiles
//===----------------------------------------------------------------------===//

/// What a profile measured of one block per micro-batch: times, and from a
/// pipe-profile table the working memory of each part (the most device
/// bytes above those held when the part began).
struct MeasuredCosts {
  std::optional<double> forwardMs;
  std::optional<double> backwardMs;
  /// The split backward's parts (zero-bubble schedules), from a table.
  std::optional<double> backwardInputMs, backwardWeightMs;
  /// The optimizer update of the block's parameters, from a table.
  std::optional<double> updateMs;
  std::optional<uint64_t> forwardWorkingBytes, recomputeWorkingBytes,
      backwardWorkingBytes, backwardInputWorkingBytes,
      backwardWeightWorkingBytes;
};

/// `{"blocks": {"<block or instance name>": {"forward_ms": 1.5,
/// "backward_ms": 3.0}}}`; at least one of the two times per entry.
struct Profile {
  llvm::StringMap<MeasuredCosts> blocks;
  /// pipe-profile tables: "<hash> <shapes>" -> times.
  llvm::StringMap<MeasuredCosts> table;
  bool isTable = false;
};

/// Key of a block in a pipe-profile cost table: a hash of its body printed
/// in generic form without locations (so renaming the block, its values or
/// its source does not change it) and its function type, the shapes.
struct BlockKey {
  std::string hash;   // 16 hex digits
  std::string shapes; // the function type, e.g. "(tensor<4x8xf32>) -> ..."
};
BlockKey getBlockKey(BlockOp block);

/// Parses a profile; errors name `fileName` and the offending field. A
/// pipe-profile table (`"format": "pipe-profile-1"`) fills `table`, keyed by
/// hash + shapes, instead of `blocks`.
llvm::Expected<Profile> parseProfile(llvm::StringRef json,
                                     llvm::StringRef fileName);
llvm::Expected<Profile> loadProfile(llvm::StringRef path);

/// The `#pipe.cost` attribute for a block cost, with measured times (in
/// milliseconds; converted to nanoseconds) and working memory when given.
CostAttr toCostAttr(MLIRContext *context, const BlockCost &cost,
                    const MeasuredCosts &measured = {});

} // namespace mlir::pipe

#endif // PIPE_ANALYSIS_COSTMODEL_H
