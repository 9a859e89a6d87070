//===- PipeAttrs.td - Attributes of the pipe dialect -------*- tablegen -*-===//

#ifndef PIPE_DIALECT_PIPE_IR_PIPEATTRS_TD
#define PIPE_DIALECT_PIPE_IR_PIPEATTRS_TD

include "pipe/Dialect/Pipe/IR/PipeDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Pipe_TransferKind : I32EnumAttr<"TransferKind",
    "what a transfer carries", [
      I32EnumAttrCase<"Activation", 0, "activation">,
      I32EnumAttrCase<"Gradient", 1, "gradient">
    ]> {
  let cppNamespace = "::mlir::pipe";
}

// A count (FLOPs, bytes, nanoseconds). The default uint64_t parser wraps
// `-1` around to 2^64 - 1; this one rejects negative and too large values.
class Pipe_CountParameterBase : AttrParameter<"uint64_t", "a non-negative count"> {
  let parser = "::mlir::pipe::parseCount($_parser)";
}
def Pipe_CountParameter : Pipe_CountParameterBase;
def Pipe_OptionalCountParameter : Pipe_CountParameterBase {
  let defaultValue = "0";
}

def Pipe_CostAttr : AttrDef<Pipe_Dialect, "Cost"> {
  let mnemonic = "cost";
  let summary = "Estimated or measured cost of one block for one micro-batch";
  let description = [{
    Written by the cost analysis, read by partitioners, schedulers and the
    simulator; never recomputed ad hoc in passes. FLOPs count one
    multiply-add as two. `saved_bytes` is the activation memory kept for the
    backward under the block's recompute policy; `output_bytes` is the size
    of the block's results (what crosses to a consumer). A measured profile
    sets `forward_time_ns`/`backward_time_ns` (omitted when zero; a
    pipe-profile table also the split backward's parts,
    `backward_input_time_ns`/`backward_weight_time_ns`, which cost more
    than the fused backward as each recomputes what they share, and the
    optimizer update of the block's parameters, `update_time_ns`), which the
    simulator prefers over estimates from FLOPs and `bytes_accessed` (the
    bytes the forward reads and writes) at the device's rates. Before
    differentiation the backward FLOPs are the analytic model's; the
    differentiation replaces them by the counts of the generated parts, and
    sets `backward_flops` to the fused backward's count (omitted when zero:
    the sum of the parts' FLOPs). Run apart, the weight-gradient part
    propagates the output gradient through the block again, so the parts'
    sum exceeds what the fused backward runs. A pipe-profile table also
    sets the measured working memory of each part (`*_working_bytes`,
    omitted when zero: the most device bytes above those held when the part
    began, temporaries of the lowered code included), which the memory
    model charges while the part runs.

    ```mlir
    #pipe.cost<forward_flops = 1024, backward_input_flops = 1024,
               backward_weight_flops = 1024, param_bytes = 4096,
               saved_bytes = 256, output_bytes = 256>
    ```
  }];
  let parameters = (ins
    Pipe_CountParameter:$forward_flops,
    Pipe_CountParameter:$backward_input_flops,
    Pipe_CountParameter:$backward_weight_flops,
    Pipe_CountParameter:$param_bytes,
    Pipe_CountParameter:$saved_bytes,
    Pipe_CountParameter:$output_bytes,
    Pipe_OptionalCountParameter:$bytes_accessed,
    Pipe_OptionalCountParameter:$backward_flops,
    Pipe_OptionalCountParameter:$forward_time_ns,
    Pipe_OptionalCountParameter:$backward_time_ns,
    Pipe_OptionalCountParameter:$backward_input_time_ns,
    Pipe_OptionalCountParameter:$backward_weight_time_ns,
    Pipe_OptionalCountParameter:$update_time_ns,
    Pipe_OptionalCountParameter:$forward_working_bytes,
    Pipe_OptionalCountParameter:$recompute_working_bytes,
    Pipe_OptionalCountParameter:$backward_working_bytes,
    Pipe_OptionalCountParameter:$backward_input_working_bytes,
    Pipe_OptionalCountParameter:$backward_weight_working_bytes
  );
  let assemblyFormat = "`<` struct(params) `>`";
}

#endif // PIPE_DIALECT_PIPE_IR_PIPEATTRS_TD
