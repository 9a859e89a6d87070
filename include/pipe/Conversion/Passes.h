//===- Passes.h - Conversion passes of pipe-mlir ------------*- C++ -*-===//
//
// The lowering passes (include/pipe/Conversion/Passes.td), declared and
// registered together as mlir/Conversion/Passes.h does upstream.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_CONVERSION_PASSES_H
#define PIPE_CONVERSION_PASSES_H

#include "mlir/Pass/Pass.h"
#include "pipe/Dialect/Pipe/IR/Pipe.h"

namespace mlir::pipe {

#define GEN_PASS_DECL
#include "pipe/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "pipe/Conversion/Passes.h.inc"

} // namespace mlir::pipe

#endif // PIPE_CONVERSION_PASSES_H
