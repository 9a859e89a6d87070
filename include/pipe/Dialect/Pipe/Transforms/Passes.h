//===- Passes.h - Passes of the pipe dialect ----------------*- C++ -*-===//

#ifndef PIPE_DIALECT_PIPE_TRANSFORMS_PASSES_H
#define PIPE_DIALECT_PIPE_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"
#include "pipe/Dialect/Pipe/IR/Pipe.h"

namespace mlir::pipe {

#define GEN_PASS_DECL
#include "pipe/Dialect/Pipe/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "pipe/Dialect/Pipe/Transforms/Passes.h.inc"

} // namespace mlir::pipe

#endif // PIPE_DIALECT_PIPE_TRANSFORMS_PASSES_H
