//===- GemmMatch.h - Which linalg ops become GEMM calls ------*- C++ -*-===//
//
// The structural half of `pipe-linalg-to-gemm`'s matcher, shared with the
// passes that must leave those ops alone (`pipe-fuse-elementwise`). It works
// on tensors and on buffers: the stride checks that need memref layouts stay
// in LinalgToGemm.cpp, so on tensors "matches" means "pipe-linalg-to-gemm
// will try it after bufferization".
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_DIALECT_PIPE_TRANSFORMS_GEMMMATCH_H
#define PIPE_DIALECT_PIPE_TRANSFORMS_GEMMMATCH_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"

namespace mlir::pipe {

/// The batch/M/N/K loop groups of `op` when it is a GEMM candidate of
/// `pipe-linalg-to-gemm`: a contraction (`out + a * b` body, two inputs, one
/// output) with non-empty M, N and K groups, static loop sizes, f32 operands
/// and indexing maps that only use plain loop dimensions. Failure otherwise.
FailureOr<linalg::ContractionDimensions>
matchGemmCandidate(linalg::LinalgOp op);

/// True when `matchGemmCandidate` succeeds on `op` (a linalg op).
bool isGemmCandidate(Operation *op);

} // namespace mlir::pipe

#endif // PIPE_DIALECT_PIPE_TRANSFORMS_GEMMMATCH_H
