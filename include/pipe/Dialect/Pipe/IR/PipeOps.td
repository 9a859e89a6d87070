//===- PipeOps.td - Operations of the pipe dialect ---------*- tablegen -*-===//

#ifndef PIPE_DIALECT_PIPE_IR_PIPEOPS_TD
#define PIPE_DIALECT_PIPE_IR_PIPEOPS_TD

include "pipe/Dialect/Pipe/IR/PipeDialect.td"
include "pipe/Dialect/Pipe/IR/PipeAttrs.td"
include "pipe/Dialect/Pipe/IR/PipeInterfaces.td"
include "pipe/Dialect/Pipe/IR/PipeTypes.td"
include "mlir/Interfaces/CallInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/FunctionInterfaces.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/IR/RegionKindInterface.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

defvar Pipe_NonNegI64 = ConfinedAttr<I64Attr, [IntNonNegative]>;

//===----------------------------------------------------------------------===//
// Model level: parameters, blocks and the block graph.
//===----------------------------------------------------------------------===//

def Pipe_ParamOp : Pipe_Op<"param", [Symbol]> {
  let summary = "A trainable tensor held by the parameter server";
  let description = [{
    A module-level symbol for one trainable tensor. Its initial value is
    inline (`= dense<...>` or `= dense_resource<...>`), in external storage
    (`external("weights.safetensors", "h.0.attn.w")`), or absent, in which
    case it is initialised at run time. `frozen` parameters are read but not
    updated (fine-tuning). One parameter may be read by several block
    instances (tied embeddings); its gradient is then the sum over them.

    ```mlir
    pipe.param @wte : tensor<64x16xf32> = dense<0.0>
    pipe.param @w1 frozen : tensor<16x16xf32> external("w.safetensors", "w1")
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       UnitAttr:$frozen,
                       TypeAttrOf<AnyRankedTensor>:$type,
                       OptionalAttr<ElementsAttr>:$initial_value,
                       OptionalAttr<StrAttr>:$external_file,
                       OptionalAttr<StrAttr>:$external_key);
  let assemblyFormat = [{
    $sym_name (`frozen` $frozen^)? `:`
    custom<TypeAndInitialValue>($type, $initial_value)
    (`external` `(` $external_file^ `,` $external_key `)`)? attr-dict
  }];
  let extraClassDeclaration = [{
    ::mlir::RankedTensorType getTensorType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getType());
    }
  }];
  let hasVerifier = 1;
}

def Pipe_GetParamOp : Pipe_Op<"get_param", [
    Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Reads a parameter's current value inside a function";
  let description = [{
    How a model function refers to its weights once they are lifted into
    `pipe.param` symbols and before it is outlined into blocks (block
    formation turns each use into a block parameter bound by `pipe.run`).

    ```mlir
    %w = pipe.get_param @h0.attn.w : tensor<1024x1024xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$param);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$param attr-dict `:` type($result)";
}

def Pipe_BlockOp : Pipe_Op<"block", [
    Symbol, IsolatedFromAbove, AutomaticAllocationScope,
    FunctionOpInterface, CallableOpInterface]> {
  let summary = "A computational block: a function of parameters and inputs";
  let description = [{
    A function-like symbol for an arbitrary computational block, from a
    single op (FTPipe's sub-layer blocks) to a whole layer. The leading
    `params(...)` arguments are bound to `pipe.param` symbols at each
    `pipe.run`, so structurally identical layers share one block and differ
    only in the parameters they are run with. The body is ordinary
    tensor-level IR (linalg, tensor, arith, math, scf) ending in
    `pipe.return`. An optional `#pipe.cost` attribute carries the cost
    analysis' result for one micro-batch.

    ```mlir
    pipe.block @linear params(%w: tensor<16x16xf32>)
        (%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
      ...
      pipe.return %y : tensor<4x16xf32>
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<FunctionType>:$function_type,
                       Pipe_NonNegI64:$num_params,
                       OptionalAttr<Pipe_CostAttr>:$cost,
                       OptionalAttr<DictArrayAttr>:$arg_attrs,
                       OptionalAttr<DictArrayAttr>:$res_attrs);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    //===------------------------------------------------------------------===//
    // FunctionOpInterface and CallableOpInterface
    //===------------------------------------------------------------------===//
    ::mlir::Region *getCallableRegion() { return &getBody(); }
    ::llvm::ArrayRef<::mlir::Type> getArgumentTypes() {
      return getFunctionType().getInputs();
    }
    ::llvm::ArrayRef<::mlir::Type> getResultTypes() {
      return getFunctionType().getResults();
    }
    ::llvm::ArrayRef<::mlir::Type> getCallableResults() {
      return getFunctionType().getResults();
    }

    /// Types of the parameter arguments, then of the data inputs.
    ::llvm::ArrayRef<::mlir::Type> getParamTypes() {
      return getArgumentTypes().take_front(getNumParams());
    }
    ::llvm::ArrayRef<::mlir::Type> getInputTypes() {
      return getArgumentTypes().drop_front(getNumParams());
    }
  }];
}

def Pipe_GraphOp : Pipe_Op<"graph", [
    Symbol, IsolatedFromAbove, FunctionOpInterface, CallableOpInterface]> {
  let summary = "The model as a DAG of block instances";
  let description = [{
    The forward computation of one micro-batch as a single-block region of
    `pipe.run` ops. Its arguments are data inputs and labels; parameters are
    not arguments but `pipe.param` symbols named by the runs. SSA order makes
    the graph acyclic by construction; every run has a unique instance name
    that placements refer to.

    ```mlir
    pipe.graph @model(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
      %h = pipe.run "l0" @linear(%x) params [@w0]
          : (tensor<4x16xf32>) -> tensor<4x16xf32>
      pipe.return %h : tensor<4x16xf32>
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<FunctionType>:$function_type,
                       OptionalAttr<DictArrayAttr>:$arg_attrs,
                       OptionalAttr<DictArrayAttr>:$res_attrs);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::Region *getCallableRegion() { return &getBody(); }
    ::llvm::ArrayRef<::mlir::Type> getArgumentTypes() {
      return getFunctionType().getInputs();
    }
    ::llvm::ArrayRef<::mlir::Type> getResultTypes() {
      return getFunctionType().getResults();
    }
    ::llvm::ArrayRef<::mlir::Type> getCallableResults() {
      return getFunctionType().getResults();
    }
    /// The run op with the given instance name, or null.
    RunOp lookupInstance(::llvm::StringRef name);
  }];
}

def Pipe_RunOp : Pipe_Op<"run", [
    HasParent<"GraphOp">, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Runs one instance of a block inside a graph";
  let description = [{
    Applies block `callee` to `inputs` with its parameter arguments bound to
    the `params` symbols. `instance` names this use of the block; stages
    group instances by these names.
  }];
  let arguments = (ins StrAttr:$instance,
                       FlatSymbolRefAttr:$callee,
                       Variadic<AnyType>:$inputs,
                       DefaultValuedAttr<TypedArrayAttrBase<FlatSymbolRefAttr,
                         "parameter symbols">, "{}">:$params);
  let results = (outs Variadic<AnyType>:$outputs);
  let assemblyFormat = [{
    $instance $callee `(` $inputs `)` (`params` $params^)? attr-dict `:`
    functional-type($inputs, results)
  }];
  let hasVerifier = 1;
}

def Pipe_ReturnOp : Pipe_Op<"return", [
    Pure, HasParent<"BlockOp, GraphOp">, ReturnLike, Terminator]> {
  let summary = "Returns the results of a block or graph";
  let arguments = (ins Variadic<AnyType>:$operands);
  let builders = [OpBuilder<(ins), [{ build($_builder, $_state, {}); }]>];
  let assemblyFormat = "attr-dict ($operands^ `:` type($operands))?";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Placement: stages bound to devices.
//===----------------------------------------------------------------------===//

def Pipe_PlacementOp : Pipe_Op<"placement", [
    Symbol, SymbolTable, IsolatedFromAbove, NoTerminator, SingleBlock,
    NoRegionArguments, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Groups the instances of a graph into stages on devices";
  let description = [{
    Binds every block instance of `graph` to exactly one `pipe.stage`, and
    every stage to one of `devices` devices. Several stages may share a
    device and a stage's instances need not be adjacent in the graph
    (Mixed-Pipe), but the graph of stages induced by the data flow must be
    acyclic so that it can be pipelined.

    `microbatches`, when present, is the micro-batch count the placement was
    partitioned for: a schedule of it must use the same count.
    `replicas` is the number of data-parallel copies of the whole placement
    (1 when absent).

    ```mlir
    pipe.placement @placed graph @model devices 2 {
      pipe.stage @s0 device 0 blocks ["l0"]
      pipe.stage @s1 device 1 blocks ["l1", "l2"]
      pipe.stage @s2 device 0 blocks ["l3"]
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       FlatSymbolRefAttr:$graph,
                       ConfinedAttr<I64Attr, [IntPositive]>:$devices,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:
                           $microbatches,
                       DefaultValuedAttr<ConfinedAttr<I64Attr, [IntPositive]>,
                                         "1">:$replicas);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name `graph` $graph `devices` $devices
    (`microbatches` $microbatches^)? (`replicas` $replicas^)?
    attr-dict-with-keyword $body
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The stage with the given name, or null.
    StageOp lookupStage(::mlir::StringAttr name);
  }];
}

def Pipe_StageOp : Pipe_Op<"stage", [Symbol, HasParent<"PlacementOp">]> {
  let summary = "A named group of block instances bound to a device";
  let arguments = (ins SymbolNameAttr:$sym_name,
                       Pipe_NonNegI64:$device,
                       StrArrayAttr:$blocks);
  let assemblyFormat = "$sym_name `device` $device `blocks` $blocks attr-dict";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Schedules: per-device ordered action lists.
//===----------------------------------------------------------------------===//

def Pipe_ScheduleOp : Pipe_Op<"schedule", [
    Symbol, IsolatedFromAbove, NoTerminator, SingleBlock, NoRegionArguments,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "The ordered actions of every device for a placement";
  let description = [{
    Holds one `pipe.device` region per device of `placement`, each an
    ordered list of actions. `kind` names the generator that produced it
    (free-form, so new generators need no dialect change); `microbatches` is
    the number of micro-batches per step; `steps` the number of optimizer
    steps the action lists cover (more than one when asynchronous schedules
    overlap steps). `forward_only` schedules evaluate without training.

    What the runtime must do differently is stated here, never derived from
    `kind`: `weight_versions` says the schedule keeps, per stage, the weight
    version each micro-batch's forward used so that its backward uses it
    again (asynchronous schedules with weight stashing); `ps_stages` lists
    the stages whose parameters live on the host parameter server and are
    loaded (`ps.load`) before use. The schedule generator declares both; the
    `pipe-schedule` pass sets them.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       FlatSymbolRefAttr:$placement,
                       StrAttr:$kind,
                       ConfinedAttr<I64Attr, [IntPositive]>:$microbatches,
                       DefaultValuedAttr<ConfinedAttr<I64Attr, [IntPositive]>,
                                         "1">:$steps,
                       UnitAttr:$forward_only,
                       UnitAttr:$weight_versions,
                       OptionalAttr<FlatSymbolRefArrayAttr>:$ps_stages);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name `placement` $placement `kind` $kind `microbatches` $microbatches
    (`steps` $steps^)? (`forward_only` $forward_only^)?
    (`weight_versions` $weight_versions^)? (`ps_stages` $ps_stages^)?
    attr-dict-with-keyword $body
  }];
  let hasRegionVerifier = 1;
}

def Pipe_DeviceOp : Pipe_Op<"device", [
    HasParent<"ScheduleOp">, NoTerminator, SingleBlock, NoRegionArguments]> {
  let summary = "The ordered action list of one device";
  let arguments = (ins Pipe_NonNegI64:$device);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$device attr-dict-with-keyword $body";
  let hasRegionVerifier = 1;
}

// Every action may say which overlapped step it belongs to.
defvar Pipe_StepArg = (ins OptionalAttr<Pipe_NonNegI64>:$step);

class Pipe_ActionOp<string mnemonic, list<Trait> traits = []>
    : Pipe_Op<mnemonic, traits # [HasParent<"DeviceOp">,
                                  DeclareOpInterfaceMethods<Pipe_ActionOpInterface>]>;

// Compute on (stage, micro-batch). `version` is the weight version used by
// asynchronous schedules (weight stashing).
class Pipe_ComputeOp<string mnemonic, string what>
    : Pipe_ActionOp<mnemonic> {
  let summary = what # " of one stage for one micro-batch";
  let arguments = !con((ins FlatSymbolRefAttr:$stage,
                            Pipe_NonNegI64:$microbatch,
                            OptionalAttr<Pipe_NonNegI64>:$version),
                       Pipe_StepArg);
  let assemblyFormat = [{
    $stage `mb` $microbatch (`step` $step^)? (`version` $version^)? attr-dict
  }];
}

def Pipe_ForwardOp : Pipe_ActionOp<"forward"> {
  let summary = "Forward pass of one stage for one micro-batch";
  let description = [{
    `version`: the weight version (updates of the stage so far) the forward
    computes on, recorded by asynchronous schedules. `predict` d (>= 1):
    the forward computes instead on those weights extrapolated d optimizer
    updates ahead along the optimizer's current direction (weight
    prediction for stale weights: d is the number of updates of the stage
    that come before this micro-batch's backward, which
    `--pipe-verify-schedule` checks). Momentum SGD: w - lr (m + ... + m^d) v
    with v the momentum buffer; AdamW: d AdamW steps with the current
    moments and no new gradient. The true weights are not changed; the
    backward uses the latest ones.

    ```mlir
    pipe.forward @s0 mb 1 step 2 version 2 predict 1
    ```
  }];
  let arguments = !con((ins FlatSymbolRefAttr:$stage,
                            Pipe_NonNegI64:$microbatch,
                            OptionalAttr<Pipe_NonNegI64>:$version),
                       Pipe_StepArg,
                       (ins OptionalAttr<ConfinedAttr<I64Attr,
                                                      [IntPositive]>>:$predict));
  let assemblyFormat = [{
    $stage `mb` $microbatch (`step` $step^)? (`version` $version^)?
    (`predict` $predict^)? attr-dict
  }];
}
def Pipe_BackwardOp : Pipe_ComputeOp<"backward",
    "Full backward pass (input and weight gradients)">;
def Pipe_BackwardInputOp : Pipe_ComputeOp<"backward.input",
    "Input-gradient part of the backward pass">;
def Pipe_BackwardWeightOp : Pipe_ComputeOp<"backward.weight",
    "Weight-gradient part of the backward pass">;
def Pipe_RecomputeOp : Pipe_ComputeOp<"recompute",
    "Recomputation of the saved activations">;

class Pipe_TransferOp<string mnemonic, string what>
    : Pipe_ActionOp<mnemonic, [DeclareOpInterfaceMethods<Pipe_ActionOpInterface,
                                 ["getLocalStage"]>]> {
  let summary = what # " of the activations or gradients between two stages";
  let description = [{
    Asynchronous; the token says when the buffers may be reused (send) or
    read (recv). Activations travel from the producing stage `src` to the
    consuming stage `dst`; gradients travel back, from the consumer to the
    producer. `payload` lists the types of the values crossing between the
    two stages, which must match the matching transfer and the graph.
  }];
  let arguments = !con((ins Pipe_TransferKind:$kind,
                            FlatSymbolRefAttr:$src,
                            FlatSymbolRefAttr:$dst,
                            Pipe_NonNegI64:$microbatch,
                            TypeArrayAttr:$payload),
                       Pipe_StepArg);
  let results = (outs Pipe_TokenType:$token);
  let assemblyFormat = [{
    $kind $src `->` $dst `mb` $microbatch (`step` $step^)? `payload` $payload
    attr-dict
  }];
}

def Pipe_SendOp : Pipe_TransferOp<"send", "Sends one micro-batch">;
def Pipe_RecvOp : Pipe_TransferOp<"recv", "Receives one micro-batch">;

class Pipe_AsyncStageOp<string mnemonic, string what>
    : Pipe_ActionOp<mnemonic> {
  let summary = what;
  let arguments = !con((ins FlatSymbolRefAttr:$stage), Pipe_StepArg);
  let results = (outs Pipe_TokenType:$token);
  let assemblyFormat = "$stage (`step` $step^)? attr-dict";
}

class Pipe_AsyncActivationOp<string mnemonic, string what>
    : Pipe_ActionOp<mnemonic> {
  let summary = what;
  let arguments = !con((ins FlatSymbolRefAttr:$stage,
                            Pipe_NonNegI64:$microbatch), Pipe_StepArg);
  let results = (outs Pipe_TokenType:$token);
  let assemblyFormat = "$stage `mb` $microbatch (`step` $step^)? attr-dict";
}

def Pipe_LoadOp : Pipe_ActionOp<"ps.load"> {
  let summary = "Loads a stage's parameters from the host parameter server";
  let description = [{
    Without `version`, copies the latest weights: the runtime runs the load
    after the last `ps.update` of the stage issued before it. With `version`
    v, copies the weights after exactly the first v `ps.update`s of the
    stage in this schedule (0: the weights the run started from), even when
    later updates were issued since: a delayed parameter update fixes its
    staleness in the IR this way. The parameter server keeps the latest two
    versions, which `--pipe-verify-schedule` checks.
  }];
  let arguments = !con((ins FlatSymbolRefAttr:$stage), Pipe_StepArg,
                       (ins OptionalAttr<Pipe_NonNegI64>:$version));
  let results = (outs Pipe_TokenType:$token);
  let assemblyFormat = [{
    $stage (`step` $step^)? (`version` $version^)? attr-dict
  }];
}
def Pipe_PushGradOp : Pipe_AsyncStageOp<"ps.push",
    "Pushes a stage's parameter gradients to the host, accumulating">;
def Pipe_HostUpdateOp : Pipe_AsyncStageOp<"ps.update",
    "Runs the host optimizer on a stage's parameters">;
def Pipe_HostReduceOp : Pipe_ActionOp<"ps.reduce"> {
  let summary =
      "Sums the data-parallel replicas' pushed gradients of a stage on the host";
  let description = [{
    In a schedule of a placement with `replicas` > 1, every replica pushes
    its own gradient of the stage's parameters (`ps.push`) to the one host
    parameter server. `ps.reduce` sums, on the host, what every replica
    pushed for the stage in this step, in replica order (so the total does
    not depend on which replica's push lands first); the `ps.update` of the
    stage and step that follows it applies that sum once for all replicas,
    and every replica's later `ps.load` reads the result. Each replica runs
    the same action list, so each issues the reduce; the host runs it once,
    after the last replica's push. It has no token: nothing on the device
    waits for it, and the `ps.update` it feeds runs after it. The verifier
    requires it between the push and the update of a replicated placement
    and refuses it in a placement of one replica.
  }];
  let arguments = !con((ins FlatSymbolRefAttr:$stage), Pipe_StepArg);
  let assemblyFormat = "$stage (`step` $step^)? attr-dict";
}

def Pipe_ReleaseOp : Pipe_ActionOp<"ps.release"> {
  let summary = "Frees the device copy of a stage's parameters";
  let arguments = !con((ins FlatSymbolRefAttr:$stage), Pipe_StepArg);
  let assemblyFormat = "$stage (`step` $step^)? attr-dict";
}

def Pipe_OffloadOp : Pipe_AsyncActivationOp<"offload",
    "Moves a stage's saved activations for a micro-batch to host memory">;
def Pipe_PrefetchOp : Pipe_AsyncActivationOp<"prefetch",
    "Brings offloaded activations of a micro-batch back to the device">;

def Pipe_UpdateOp : Pipe_ActionOp<"update"> {
  let summary = "Runs the optimizer on the device for a stage's parameters";
  let arguments = !con((ins FlatSymbolRefAttr:$stage), Pipe_StepArg);
  let assemblyFormat = "$stage (`step` $step^)? attr-dict";
}

def Pipe_ReduceGradOp : Pipe_ActionOp<"reduce_grad", [
    DeclareOpInterfaceMethods<Pipe_ActionOpInterface, ["getLocalStage"]>]> {
  let summary = "Sums a parameter's gradient over its stages and replicas";
  let description = [{
    Every device hosting a stage that reads `param` takes part; afterwards
    each holds the total gradient. Needed before updating tied embeddings.
    When the placement has `replicas` > 1 (data parallelism), the total is
    then summed over the replicas' copies of the device as well (an
    all-reduce, `MPI` between ranks), so every trainable parameter is
    reduced before its update: the schedule shows each all-reduce, and the
    verifier and simulator play it.
  }];
  let arguments = !con((ins FlatSymbolRefAttr:$param), Pipe_StepArg);
  let assemblyFormat = "$param (`step` $step^)? attr-dict";
}

def Pipe_ReduceBucketOp : Pipe_ActionOp<"reduce_bucket", [
    DeclareOpInterfaceMethods<Pipe_ActionOpInterface, ["getLocalStage"]>]> {
  let summary = "Starts summing a bucket of gradients over the replicas";
  let description = [{
    Data parallelism: starts the all-reduce of the gradients of `params`
    at `step` over the data-parallel replicas' copies of the device, as one
    message (a bucket) holding them in order, and returns at once; the
    `pipe.wait` on its token completes it, after which the device holds each
    parameter's total gradient (summed in replica order, the same as a
    `pipe.reduce_grad` of each parameter). Every parameter of a bucket is
    read only by stages on this device; one read on several devices of the
    pipeline is reduced by `pipe.reduce_grad`.

    `--pipe-schedule` places it after the device's last backward of the
    step that writes the gradients, so the communication overlaps the
    device's remaining backward work, and its wait before the update. The
    verifier requires a placement with `replicas` > 1; the schedule checker
    requires every backward writing the gradients before it and the wait
    before the update that reads them.

    ```mlir
    %t = pipe.reduce_bucket [@w1, @b1] step 0
    ...
    pipe.wait %t
    pipe.update @s1 step 0
    ```
  }];
  let arguments = !con((ins FlatSymbolRefArrayAttr:$params), Pipe_StepArg);
  let results = (outs Pipe_TokenType:$token);
  let assemblyFormat = "$params (`step` $step^)? attr-dict";
}

def Pipe_WaitOp : Pipe_ActionOp<"wait", [
    DeclareOpInterfaceMethods<Pipe_ActionOpInterface, ["getLocalStage"]>]> {
  let summary = "Blocks the device's action list until tokens complete";
  let arguments = (ins Variadic<Pipe_TokenType>:$tokens);
  let assemblyFormat = "$tokens attr-dict";
  let hasVerifier = 1;
}

#endif // PIPE_DIALECT_PIPE_IR_PIPEOPS_TD
