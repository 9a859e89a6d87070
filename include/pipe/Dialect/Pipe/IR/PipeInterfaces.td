//===- PipeInterfaces.td - Interfaces of the pipe dialect --*- tablegen -*-===//

#ifndef PIPE_DIALECT_PIPE_IR_PIPEINTERFACES_TD
#define PIPE_DIALECT_PIPE_IR_PIPEINTERFACES_TD

include "mlir/IR/OpBase.td"

def Pipe_ActionOpInterface : OpInterface<"ActionOpInterface"> {
  let cppNamespace = "::mlir::pipe";
  let description = [{
    One entry of a device's ordered action list inside `pipe.device`.
    Verifiers, the schedule checker, the simulator and the back ends see
    actions only through this interface, so a new kind of action is a new
    op that implements it; nothing else needs to change.
  }];
  let methods = [
    InterfaceMethod<[{
        The stage this action works on that must live on the enclosing
        device (the sender for `pipe.send`, the receiver for `pipe.recv`),
        or null when the action names no stage.
      }], "::mlir::FlatSymbolRefAttr", "getLocalStage", (ins), [{}],
      [{ return $_op->template getAttrOfType<::mlir::FlatSymbolRefAttr>("stage"); }]>,
    InterfaceMethod<"The micro-batch index, if the action has one.",
      "std::optional<uint64_t>", "getMicrobatchIndex", (ins), [{}],
      [{
        if (auto attr = $_op->template getAttrOfType<::mlir::IntegerAttr>("microbatch"))
          return attr.getValue().getZExtValue();
        return std::nullopt;
      }]>,
    InterfaceMethod<[{
        The training step the action belongs to, counted from the first
        step the schedule covers (0 unless steps overlap).
      }], "uint64_t", "getStepIndex", (ins), [{}],
      [{
        if (auto attr = $_op->template getAttrOfType<::mlir::IntegerAttr>("step"))
          return attr.getValue().getZExtValue();
        return 0;
      }]>,
  ];
}

#endif // PIPE_DIALECT_PIPE_IR_PIPEINTERFACES_TD
