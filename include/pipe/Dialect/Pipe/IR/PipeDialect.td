//===- PipeDialect.td - The pipe dialect -------------------*- tablegen -*-===//
//
// Pipeline- and layer-to-layer parallel training as IR.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_DIALECT_PIPE_IR_PIPEDIALECT_TD
#define PIPE_DIALECT_PIPE_IR_PIPEDIALECT_TD

include "mlir/IR/OpBase.td"

def Pipe_Dialect : Dialect {
  let name = "pipe";
  let cppNamespace = "::mlir::pipe";
  let summary = "Blocks, stages, transfers, parameter servers and schedules "
                "for training models that do not fit on one device";
  let description = [{
    The `pipe` dialect describes a model as a graph of computational
    *blocks* that read trainable *parameters*, groups block instances into
    *stages* bound to devices (a *placement*), and orders the work of every
    device in a *schedule*: forward and backward computation per
    micro-batch, transfers of activations and gradients, loads of parameters
    from a host parameter server, offloads, gradient pushes and optimizer
    updates. The same schedule representation covers GPipe, 1F1B,
    interleaved and zero-bubble pipelines, asynchronous PipeDream and
    layer-to-layer (L2L) execution.
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
}

class Pipe_Op<string mnemonic, list<Trait> traits = []>
    : Op<Pipe_Dialect, mnemonic, traits>;

#endif // PIPE_DIALECT_PIPE_IR_PIPEDIALECT_TD
