//===- PipeTypes.td - Types of the pipe dialect ------------*- tablegen -*-===//

#ifndef PIPE_DIALECT_PIPE_IR_PIPETYPES_TD
#define PIPE_DIALECT_PIPE_IR_PIPETYPES_TD

include "pipe/Dialect/Pipe/IR/PipeDialect.td"
include "mlir/IR/AttrTypeBase.td"

def Pipe_TokenType : TypeDef<Pipe_Dialect, "Token"> {
  let mnemonic = "token";
  let summary = "Completion token of an asynchronous action";
  let description = [{
    Produced by every asynchronous schedule action (transfers, parameter
    loads, offloads, prefetches, gradient pushes, host updates) and consumed
    by exactly one `pipe.wait` on the same device, after which the action's
    effect is visible.
  }];
}

#endif // PIPE_DIALECT_PIPE_IR_PIPETYPES_TD
