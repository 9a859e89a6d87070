//===- Passes.td - Passes of the pipe dialect --------------*- tablegen -*-===//

#ifndef PIPE_DIALECT_PIPE_TRANSFORMS_PASSES_TD
#define PIPE_DIALECT_PIPE_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Inspection
//===----------------------------------------------------------------------===//

def PipePrintSummary : Pass<"pipe-print-summary", "ModuleOp"> {
  let summary = "Prints a human-readable summary of placements and schedules";
  let description = [{
    For every `pipe.placement`: its devices, stages and the block instances
    each device hosts (Mixed-Pipe devices show several stages). For every
    `pipe.schedule`: its kind, micro-batch count and the number of actions of
    each kind per device. The IR is not changed.

    `format=json` writes the same, and the block instances of every graph
    with their block functions' `#pipe.cost`, as one JSON object for
    programs (the Python API reads it); its schema, versioned, is in
    docs/summary-json.md.

    ```
    pipe-opt model.mlir --pipe-print-summary
    pipe-opt model.mlir "--pipe-print-summary=format=json output=summary.json"
    ```
  }];
  let options = [
    Option<"outputFile", "output", "std::string", /*default=*/"\"-\"",
           "Where to write the summary ('-' for standard output)">,
    Option<"format", "format", "std::string", /*default=*/"\"text\"",
           "'text' for people or 'json' for programs (docs/summary-json.md)">,
  ];
}

//===----------------------------------------------------------------------===//
// Ingestion: input checks, parameter lifting, block formation, costs
//===----------------------------------------------------------------------===//

def PipeCheckInput : Pass<"pipe-check-input", "ModuleOp"> {
  let summary = "Checks that a module is in the accepted linalg-on-tensors form";
  let description = [{
    Accepts torch-mlir's linalg-on-tensors backend contract: ops of the
    builtin, func, linalg, tensor, arith, math, scf, cf, ml_program and pipe
    dialects, `affine.apply/min/max` (index arithmetic) and
    `bufferization.alloc_tensor`, on ranked, statically shaped tensors and
    scalars. Every other op, and every unranked or dynamically shaped value,
    is reported with its location and, where there is one, the way around it
    (`tosa.*`: run `--pipe-import-tosa` first; `torch.*`, `stablehlo.*`:
    lower to linalg-on-tensors first; `tm_tensor.attention`: export with the
    default decompositions or eager attention). All problems are reported,
    not only the first.

    An op that reads its init (a named contraction or reduction such as
    `linalg.matmul`, `batch_matmul`, a convolution or `linalg.reduce`, or a
    `linalg.generic` whose payload reads the out argument) from a bare
    `tensor.empty` or `bufferization.alloc_tensor` reads undefined memory
    and is rejected; elementwise ops that only write a `tensor.empty` are
    accepted.

    The IR is not changed, with one exception: boolean constants stored as
    `dense_resource` (torch-mlir's masks), which LLVM translation cannot
    lower, become `dense` literals of the same values
    (`inline-bool-resources`); one without data (elided), of the wrong size
    or with a byte other than 0 or 1 is an error.

    Sizes are bounded too, wherever a shape enters (arguments, results,
    constants, `tensor.empty`, globals): a tensor whose element count
    overflows 64 bits or whose size exceeds `max-tensor-bytes` (default 64
    GiB, larger than any single tensor of a 175B-parameter model) is
    rejected, so that no later size computation can overflow. A
    `tensor.reshape` whose shape operand is a constant must agree with its
    static result type.

    Ops of dialects that the tool does not know do not parse at all; with
    `--allow-unregistered-dialect` they parse and are reported here.

    ```
    pipe-opt model.mlir --pipe-check-input --pipe-lift-params
    ```
  }];
  let options = [
    Option<"maxTensorBytes", "max-tensor-bytes", "uint64_t",
           /*default=*/"uint64_t(1) << 36",
           "Largest tensor accepted, in bytes (its static shape times its "
           "element size)">,
    Option<"inlineBoolResources", "inline-bool-resources", "bool",
           /*default=*/"true",
           "Rewrite i1 dense_resource constants and globals as dense literals "
           "(LLVM translation cannot lower i1 resources)">,
  ];
}

def PipeImportTosa : Pass<"pipe-import-tosa", "ModuleOp"> {
  let summary = "Lowers a TOSA model to linalg-on-tensors";
  let description = [{
    Runs the upstream sequence that turns TOSA into the accepted input
    (`tosa-to-mlprogram`, `tosa-to-scf`, `tosa-to-linalg-pipeline`, then
    `tosa-to-tensor` and `tosa-to-arith` on every function, then
    `canonicalize`), and reports any TOSA op that is left. `tosa.const`
    weights become `arith.constant`s and `tosa.variable`s `ml_program`
    globals, which `--pipe-lift-params` then lifts. Weights keep their
    identity: elided or equal-valued `tosa.const` weights are not uniqued
    into one constant by the upstream canonicalizations.

    ```
    pipe-opt model.tosa.mlir --pipe-import-tosa --pipe-check-input
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect", "::mlir::tensor::TensorDialect",
    "::mlir::scf::SCFDialect", "::mlir::ml_program::MLProgramDialect"
  ];
}

def PipeAttachLoss : Pass<"pipe-attach-loss", "ModuleOp"> {
  let summary = "Turns an inference function into one returning a scalar loss";
  let description = [{
    Exports are inference graphs: they return logits or activations, while
    `--pipe-differentiate` needs a function returning one scalar loss. This
    pass keeps result `result` of the function `func`, appends a target
    argument, and returns the loss of that result against the target, a
    rank-0 tensor of the result's element type, in the linalg-on-tensors
    style torch-mlir lowers `torch.nn.functional` losses to (so that the
    derivative rules and the index-range inference apply). The other results
    are dropped, with the ops only they used.

    - `cross-entropy`: the result holds class scores over its last
      dimension, `[..., C]`; the target holds class indices, `i64` of shape
      `[...]` (the result's shape without the last dimension). Log-softmax
      over the last dimension, then as `nll`.
    - `nll`: the result already holds log-probabilities `[..., C]`; the loss
      of a sample is `-result[..., target]`. A target of -100 (PyTorch's
      `ignore_index`) contributes nothing.
    - `mse`: the target has the result's shape and type; the loss of an
      element is `(result - target)^2`.

    `reduction=mean` divides the sum by the number of counted targets (for
    `cross-entropy` and `nll`, the targets that are not -100) or elements
    (`mse`); `reduction=sum` returns the sum. Both are PyTorch's defaults
    for the same `reduction`.

    `metrics=accuracy` (`cross-entropy` and `nll`) also returns, after the
    loss, a `tensor<2xi64>` of counts `[hits, counted]` marked
    `pipe.metric = "accuracy"`: a counted target (not -100) is a hit when
    its score is the largest of its row (ties count as hits). It is not
    differentiated; the trainer sums the counts over micro-batches and
    reports hits / counted at evaluation.

    ```mlir
    func.func @forward(%x: tensor<8x16xf32>) -> tensor<8x10xf32>
    // with kind=cross-entropy becomes
    func.func @forward(%x: tensor<8x16xf32>, %target: tensor<8xi64>)
        -> tensor<f32>
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect", "::mlir::tensor::TensorDialect"
  ];
  let options = [
    Option<"kind", "kind", "std::string", /*default=*/"\"cross-entropy\"",
           "Loss: cross-entropy, mse or nll">,
    Option<"reduction", "reduction", "std::string", /*default=*/"\"mean\"",
           "Reduction over the samples: mean or sum">,
    Option<"resultIndex", "result", "unsigned", /*default=*/"0",
           "Which result of the function the loss reads">,
    ListOption<"metrics", "metrics", "std::string",
               "Task metrics returned after the loss: accuracy">,
    Option<"funcName", "func", "std::string", /*default=*/"\"\"",
           "Function to rewrite (default: the only public function with a "
           "body)">,
  ];
}

def PipeLiftParams : Pass<"pipe-lift-params", "ModuleOp"> {
  let summary = "Lifts trainable weights into pipe.param symbols";
  let description = [{
    Turns every trainable weight of the model's functions into a module-level
    `pipe.param` and each read of it into `pipe.get_param`:

    - `arith.constant`s of a floating-point tensor type holding a
      `dense_resource` value (any size), or a `dense` one with at least
      `min-elements` elements. Splat constants (zeros, epsilons, masks)
      stay unless `lift-splats`. A
      `pipe.param = "name"` attribute on a constant lifts it whatever its
      size, under that name.
    - `ml_program.global`s of a floating-point tensor type that are only read
      (`global_load`, `global_load_const`); integer globals such as
      torch-mlir's `@global_seed`, and globals that are stored to, stay.
    - Function arguments carrying an argument attribute `pipe.param = "name"`
      or listed in `param-args` (argument indices of the `entry` function);
      their functions must not be called from elsewhere.

    One constant op, one `dense_resource` blob or one global is one
    parameter however many times it is used (tied embeddings); two distinct
    constants with equal contents stay two parameters. Names come from the
    `pipe.param` attribute, the global's name, a name location
    (`loc("h.0.w")`, also inside fused locations), the resource key, or else
    `p0, p1, ...`, made unique with `_1, _2, ...` suffixes; the source (key,
    global or argument) is kept in a `pipe.source` attribute. A `names` file
    maps resource keys and global names to parameter names (for instance the
    PyTorch names, so that `--pipe-load-params` finds them in a checkpoint).

    A `dense_resource` weight whose blob is absent (elided) is an error
    unless `init-missing`, which lifts it without an initial value, or
    `init`, which gives it one; either way each constant op reading an
    absent blob is its own parameter (torch-mlir elides every weight under
    one key, `__elided__`), and a warning gives their count; a blob whose
    size does not match its type is an error.

    `init=normal|xavier-uniform|kaiming-uniform|zeros` initialises the
    weights without data (and lifted arguments) by how they are used: a
    weight contracted by a matmul or convolution draws from N(0, 0.02^2),
    U(-a, a) with a = sqrt(6 / (fan-in + fan-out)), U(-a, a) with
    a = sqrt(6 / fan-in), or is zero, the fans being the sizes of its
    contracted and non-contracted dimensions there (PyTorch's
    [out, in, kernel...] convention where no contraction reads it); vectors
    that are added (biases) start at zero, vectors that multiply (norm
    scales) at one. The draw depends only on `init-seed` and the parameter's
    name.

    Eval-mode BatchNorm's running statistics, recognised by their use
    (`x - mean` scaled by `rsqrt(var + eps)`, in torch-mlir's one generic or
    its decomposed form), are marked frozen whether or not they have data;
    without data they start at mean 0 and variance 1 (with `init-missing`
    or `init`).

    ```mlir
    %w = arith.constant dense_resource<torch_tensor_16_16_torch.float32>
        : tensor<16x16xf32>
    // becomes
    pipe.param @torch_tensor_16_16_torch.float32 : tensor<16x16xf32>
        = dense_resource<torch_tensor_16_16_torch.float32>
        {pipe.source = "resource:torch_tensor_16_16_torch.float32"}
    %w = pipe.get_param @torch_tensor_16_16_torch.float32 : tensor<16x16xf32>
    ```
  }];
  let dependentDialects = ["::mlir::pipe::PipeDialect"];
  let options = [
    Option<"minElements", "min-elements", "int64_t", /*default=*/"2",
           "Dense constants with fewer elements are literals, not weights">,
    Option<"liftSplats", "lift-splats", "bool", /*default=*/"false",
           "Also lift splat constants (all elements equal)">,
    ListOption<"paramArgs", "param-args", "unsigned",
               "Argument indices of the entry function to lift">,
    Option<"entry", "entry", "std::string", /*default=*/"\"\"",
           "Function whose arguments param-args names (default: the only "
           "public function with a body)">,
    Option<"initMissing", "init-missing", "bool", /*default=*/"false",
           "Lift dense_resource weights without data (and extern globals) "
           "as parameters without an initial value instead of failing">,
    Option<"init", "init", "std::string", /*default=*/"\"\"",
           "Initialise the weights without data: normal, xavier-uniform, "
           "kaiming-uniform or zeros (by use: biases zero, norm scales "
           "one)">,
    Option<"initSeed", "init-seed", "uint64_t", /*default=*/"0",
           "Seed of init's draws">,
    Option<"frozen", "frozen", "std::string", /*default=*/"\"\"",
           "Regular expression: lifted parameters whose name it matches "
           "(anywhere) are marked frozen">,
    Option<"names", "names", "std::string", /*default=*/"\"\"",
           "File of lines '<name> ... <key>' naming the weights stored "
           "under a dense_resource key or global name (pipe-gen "
           "--list-params writes one)">,
  ];
}

def PipeFreezeParams : Pass<"pipe-freeze-params", "ModuleOp"> {
  let summary = "Marks the parameters whose names match a pattern frozen";
  let description = [{
    Sets `frozen` on every `pipe.param` whose name matches one of
    `patterns` (fine-tuning: frozen parameters are read but get no gradient,
    no optimizer state and no update). A pattern is a glob matched against
    the whole name (`*` any run of characters, dots included, `?` one
    character, `[...]` a class, `\` escapes), or, with
    the prefix `re:`, an extended regular expression (llvm::Regex) that
    matches anywhere in the name (anchor it with `^...$`). A pattern that
    matches no parameter is an error naming it, so a typo does not silently
    train everything. Parameters already frozen (BatchNorm statistics)
    stay frozen.

    ```
    pipe-opt model.mlir --pipe-freeze-params="patterns=wte,h.0.*,re:^h\.1\."
    ```
  }];
  let options = [
    ListOption<"patterns", "patterns", "std::string",
               "Globs (whole name) or re:<regex> (anywhere) naming the "
               "parameters to freeze">,
  ];
}

def PipeExternalizeParams : Pass<"pipe-externalize-params", "ModuleOp"> {
  let summary = "Moves parameters' initial values into a safetensors file";
  let description = [{
    Writes the initial value of every `pipe.param` of at least `min-bytes`
    bytes into the safetensors file `file` (tensor name = parameter name),
    atomically, and replaces the value in the IR by
    `external("<file>", "<name>")`, so that multi-GB models keep a small IR.
    Parameters without an initial value or already external are left alone.

    ```
    pipe-opt model.mlir --pipe-externalize-params="file=w.safetensors"
    ```
  }];
  let options = [
    Option<"file", "file", "std::string", /*default=*/"\"\"",
           "The safetensors file to write (required)">,
    Option<"minBytes", "min-bytes", "int64_t", /*default=*/"0",
           "Smaller initial values stay in the IR">,
  ];
}

def PipeLoadParams : Pass<"pipe-load-params", "ModuleOp"> {
  let summary = "Binds parameters to the tensors of a safetensors checkpoint";
  let description = [{
    Looks up every `pipe.param` in the safetensors file `file` under
    `prefix` followed by its external key if it has one, else its name;
    checks that the tensor's dtype and shape match the parameter's type; and
    either points the parameter at it (`external(...)`, the default) or,
    with `inline`, copies the data into the IR as a `dense_resource` blob.
    A mismatch is an error naming the parameter, the file and the tensor; so
    is a missing tensor unless `allow-missing` (the parameter is then left
    as it was).

    ```
    pipe-opt model.mlir --pipe-load-params="file=gpt2.safetensors inline=1"
    ```
  }];
  let options = [
    Option<"file", "file", "std::string", /*default=*/"\"\"",
           "The safetensors file to read (required)">,
    Option<"prefix", "prefix", "std::string", /*default=*/"\"\"",
           "Prepended to each parameter's key when looking it up">,
    Option<"inlineValues", "inline", "bool", /*default=*/"false",
           "Copy the data into the IR instead of referring to the file">,
    Option<"allowMissing", "allow-missing", "bool", /*default=*/"false",
           "Leave parameters that the file lacks unchanged">,
  ];
}

def PipeFormBlocks : Pass<"pipe-form-blocks", "ModuleOp"> {
  let summary = "Outlines the model function into pipe.blocks and a pipe.graph";
  let description = [{
    Replaces the model's forward function `func` (linalg on tensors reading
    weights through `pipe.get_param`) by `pipe.block` symbols and a
    `pipe.graph` of the same name whose `pipe.run`s compute exactly what the
    function did. Each block takes the parameters it reads as `params(...)`
    arguments (bound by the run), the values it needs from other blocks or
    graph arguments as inputs, and returns what others need. Constants,
    `tensor.empty` and other free producers are cloned into each block that
    needs them; zero-FLOP glue (reshapes, slices, transposes, broadcasts,
    fills) joins the block of its producer. Structurally identical blocks
    share one block function; instances differ only in the parameters bound.

    - `granularity=op`: one block per compute op (instances `op17.matmul`).
    - `granularity=layer`: layers found from location scopes naming them
      (`loc("h.3.attn")`) where present, else from the repeated structure of
      the op sequence (instances `prologue`, `layer0`..., `epilogue`).
    - `granularity=coarse`: the op-level blocks merged into `num-blocks`
      contiguous ranges of the program order with balanced FLOPs (instances
      `part0`...); always acyclic.

    See docs/blocks-and-costs.md for the rules.

    ```
    pipe-opt model.mlir --pipe-lift-params --pipe-form-blocks=granularity=layer
    ```
  }];
  let dependentDialects = ["::mlir::pipe::PipeDialect"];
  let options = [
    Option<"granularity", "granularity", "std::string", /*default=*/"\"op\"",
           "op, layer or coarse">,
    Option<"numBlocks", "num-blocks", "int64_t", /*default=*/"8",
           "Number of blocks for granularity=coarse">,
    Option<"funcName", "func", "std::string", /*default=*/"\"forward\"",
           "The model function (default: @forward, or the only function "
           "with a body)">,
  ];
}

def PipeAnnotateCosts : Pass<"pipe-annotate-costs", "ModuleOp"> {
  let summary = "Writes the cost model's #pipe.cost on every pipe.block";
  let description = [{
    Sets the `cost` attribute of every `pipe.block` to its analytic cost for
    one micro-batch: forward, input-gradient and weight-gradient FLOPs
    (a multiply-add counts 2), parameter bytes, activation bytes saved for
    the backward under the `recompute` policy, and output bytes, with float
    tensors counted at `dtype`. A measured `profile` (JSON
    `{"blocks": {"<block or instance>": {"forward_ms": .., "backward_ms": ..}}}`)
    sets the times; an entry for a block wins over entries for its
    instances, whose mean is used otherwise. A `pipe-profile` cost table
    (`"format": "pipe-profile-1"`, docs/profiler.md) sets the times of the
    blocks whose structural hash and shapes it lists; the others keep
    analytic times, counted in one warning.

    ```
    pipe-opt model.mlir --pipe-form-blocks \
        --pipe-annotate-costs="recompute=recompute dtype=bf16"
    ```
  }];
  let options = [
    Option<"recompute", "recompute", "std::string", /*default=*/"\"save-all\"",
           "save-all, recompute or save-inputs (= recompute)">,
    Option<"profile", "profile", "std::string", /*default=*/"\"\"",
           "JSON file of measured block times overriding the estimate">,
    Option<"dtype", "dtype", "std::string", /*default=*/"\"f32\"",
           "Element type float tensors are counted at: f64, f32, tf32, "
           "bf16, f16, f8 or native (each tensor's own)">,
    Option<"transcendentalFlops", "transcendental-flops", "uint64_t",
           /*default=*/"1", "FLOPs charged per exp, log, tanh, erf, sqrt, ...">,
  ];
}

//===----------------------------------------------------------------------===//
// Training graphs: differentiation and checking routes
//===----------------------------------------------------------------------===//

def PipeDifferentiate : Pass<"pipe-differentiate", "ModuleOp"> {
  let summary = "Generates input- and weight-gradient blocks for every block";
  let description = [{
    For every forward `pipe.block` run by a `pipe.graph`, builds its
    reverse-mode derivative as two blocks: `@<blk>_bwd_input(params, inputs,
    output cotangents[, saved]) -> input cotangents` and
    `@<blk>_bwd_weight(params, inputs, output cotangents[, saved]) ->
    parameter gradients`, recorded on the forward block as
    `pipe.backward_input = @...` / `pipe.backward_weight = @...`. Derivatives
    come from `linalg.generic` in general (maps, iterators, scalar body);
    named linalg ops are generalized first. An op without a rule is an error
    naming the op. The graph's scalar result is marked as the loss with
    `pipe.loss_seed = 1.0`. With `recompute=save-all` the forward block also
    returns the intermediates the backward reads (`pipe.saved_results = N`
    counts them) and the graph's runs are updated; a block's `pipe.recompute`
    attribute overrides the option. Parameter positions that every run of
    a block binds to a `frozen` `pipe.param` are recorded as
    `pipe.frozen_params = array<i64: ...>` and get no gradient (a block
    with only such parameters has no weight-gradient block). See
    docs/autodiff.md.

    ```
    pipe-opt model.mlir --pipe-differentiate="recompute=save-inputs"
    ```
  }];
  let options = [
    Option<"recompute", "recompute", "std::string", /*default=*/"\"save-all\"",
           "What the forward keeps for the backward: save-all, save-inputs "
           "or recompute">,
  ];
  let dependentDialects = ["::mlir::affine::AffineDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def PipeLowerGraphToFunc : Pass<"pipe-lower-graph-to-func", "ModuleOp"> {
  let summary = "Lowers a differentiated graph and its blocks to func.func";
  let description = [{
    For checking gradients without the runtime. Every `pipe.block` becomes a
    `func.func` of the same name. Every `pipe.graph @g` becomes
    `@g_forward(params..., inputs...) -> results` and
    `@g_grad(params..., inputs...) -> (loss, gradients...)` which runs the
    blocks in order, then their backward blocks in reverse order seeded with
    the loss cotangent 1.0, summing the gradients of a parameter read by
    several runs (tied weights). Parameters are the float `pipe.param`s the
    graph reads, in module order. All `pipe.param`, `pipe.graph`,
    `pipe.placement` and `pipe.schedule` ops are removed.

    ```
    pipe-opt m.mlir --pipe-differentiate --pipe-lower-graph-to-func
    ```
  }];
  let options = [
    Option<"emitCInterface", "emit-c-interface", "bool", /*default=*/"true",
           "Put llvm.emit_c_interface on the generated entry functions">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def PipeInferIndexRanges : Pass<"pipe-infer-index-ranges", "ModuleOp"> {
  let summary = "Records the range of every integer graph input from its "
                "uses as an index";
  let description = [{
    For every integer argument of every `pipe.graph`, finds the tightest
    range its values must have over its uses as an index: the indexed
    dimension of each `tensor.extract` / `tensor.insert` it reaches (through
    `pipe.run`, integer casts, reshapes, slices and elementwise copies in
    `linalg.generic`), and the loop range of each `linalg.index` it is
    compared with (a class selected by its target). Values the model keeps
    away from the index (`select(x != K, x, c)`, e.g. the ignore index
    -100) are exempt. Recorded as `pipe.index_bound` and `pipe.index_exempt`
    on the argument, tightening any already there. `--pipe-lower-to-host`
    does the same for the manifest, where the data loader reads the ranges
    and checks every row of the data against them.

    ```
    pipe-opt m.mlir --pipe-lift-params --pipe-form-blocks --pipe-infer-index-ranges
    ```
  }];
}

def PipeGuardIndices : Pass<"pipe-guard-indices", "ModuleOp"> {
  let summary = "Checks every data-dependent index of the host code against "
                "its dimension";
  let description = [{
    After `--pipe-lower-to-host`, before bufferization (part of
    `--pipe-host-to-llvm`): every `tensor.extract` / `tensor.insert` (or
    `memref.load` / `memref.store`) index in a `func.func` that is not
    computed from constants, `linalg.index` and loop induction variables
    alone is compared with its dimension (unsigned, so negative indices
    count). An index out of range calls the runtime's `pipe_rt_index_fault`
    with the op's location and bound, which fails the action with that
    message, and is replaced by 0, so memory out of bounds is never touched.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def PipeFuseElementwise : Pass<"pipe-fuse-elementwise", "ModuleOp"> {
  let summary = "Fuses elementwise linalg producers into their consumers in "
                "block functions";
  let description = [{
    On tensors, before bufferization, in every function marked
    `pipe.packed_entry` (the block functions `--pipe-lower-to-host` makes):
    upstream's elementwise fusion (`linalg::populateElementwiseOpsFusionPatterns`)
    merges an all-parallel `linalg.generic` into the generic that reads it,
    so that bias + activation, residual + layer-norm parts and their
    backward chains run as one kernel on the GPU (`--pipe-host-to-cuda`
    makes one kernel per linalg op) instead of a launch and a round trip
    through memory each. A fused producer disappears when nothing else
    reads it.

    Work is never duplicated beyond cheap bodies (at most `recompute-limit`
    ops): a producer with several readers is computed again in each only
    if it is cheap and every reader takes it (its kernel disappears);
    otherwise an elementwise reader that reads each element once and comes
    before the other readers takes it with its value as a second result
    (a saved activation and the activation in one kernel); a producer read
    through a broadcast is inlined only if cheap. An `expand_shape` between
    two elementwise generics moves above the producer so that they meet.
    Nothing fuses into or out of an op that `pipe-linalg-to-gemm` turns into
    a GEMM call (those are not even handed to the fusion's cleanup
    patterns). A producer fused into a reduction (layer-norm and softmax
    statistics) lands before the reduction's `yield combine(out, x)`, which
    `pipe-linalg-to-gpu` still turns into a block reduction. See
    docs/cuda-lowering.md.

    ```
    pipe-opt host.mlir --pipe-fuse-elementwise
    ```
  }];
  let options = [
    Option<"recomputeLimit", "recompute-limit", "unsigned", /*default=*/"8",
           "Largest producer body (ops besides the yield) that may be "
           "computed more than once per element: fused into several "
           "readers, or read through a broadcast; 0 fuses only producers "
           "whose every element is computed once">,
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::affine::AffineDialect",
                           "::mlir::arith::ArithDialect"];
}

def PipeApproximateMath : Pass<"pipe-approximate-math", "ModuleOp"> {
  let summary = "Replaces f32 transcendental math ops by inline polynomials";
  let description = [{
    libm's scalar `tanhf`, `expf`, `erff`, `logf` calls keep the host loops
    from vectorising (GELU and softmax spent a sixth of a training step
    there). This pass rewrites those f32 `math` ops into MLIR's polynomial
    approximations (upstream's, accurate to a few ULP), which LLVM then
    vectorises with the loop around them. Part of `--pipe-host-to-llvm`.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::vector::VectorDialect"];
}

def PipeF32ToF64 : Pass<"pipe-f32-to-f64", "ModuleOp"> {
  let summary = "Rewrites every f32 type and constant to f64";
  let description = [{
    Used by gradient checks: finite differences need f64. Types nested in
    tensors, function types and attributes are rewritten; f32 float and
    dense constants are converted; `arith.extf`/`arith.truncf` that become
    f64 -> f64 are removed. `dense_resource` f32 constants are rejected.
  }];
}

def PipePrecision : Pass<"pipe-precision", "ModuleOp"> {
  let summary = "Runs GEMM-like linalg ops with bf16/f16 operands, f32 "
                "accumulation";
  let description = [{
    Mixed-precision policy. Every GEMM-like op (a `linalg.generic` with a
    reduction loop whose yield is `acc + a * b`, `a` and `b` read from two
    different f32 input tensors that each have a loop the other lacks, so
    matmuls, batched/attention contractions and their backward generics; named
    contractions are generalized first) gets those two operands truncated to
    the `gemm` type by an elementwise `arith.truncf` generic, and its body
    extends them back with `arith.extf`: the multiply-add and the output
    stay f32. Softmax, norms, reductions of one tensor and the loss
    (`sum(y * w)` with equal maps) are not GEMM-like and stay f32; parameters
    stay f32 (master weights), the casts are inside blocks. `gemm=f32`
    changes nothing. Run after `pipe-differentiate` so that backward GEMMs
    are converted too and accumulate in f32. See docs/autodiff.md.

    ```
    pipe-opt m.mlir --pipe-differentiate --pipe-precision="gemm=bf16"
    ```
  }];
  let options = [
    Option<"gemm", "gemm", "std::string", /*default=*/"\"f32\"",
           "Operand type of GEMM-like ops: bf16, f16 or f32 (no change)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

//===----------------------------------------------------------------------===//
// Placement and scheduling
//===----------------------------------------------------------------------===//

def PipePartition : Pass<"pipe-partition", "ModuleOp"> {
  let summary = "Partitions a costed block graph into stages on devices";
  let description = [{
    Reads the `pipe.graph` (whose blocks carry `#pipe.cost`, see
    `--pipe-annotate-costs`), builds the partitioning problem for `devices`
    devices of `device-model`, runs the partitioning `algorithm` (`seq`:
    contiguous stages by dynamic programming; `mixed`: FTPipe's Mixed-Pipe,
    where a device may host several non-adjacent stages; `exact`: exhaustive,
    small graphs only; `balanced`: `devices * stages-per-device` contiguous
    stages balanced by compute, round-robin, as `--pipe-place` makes them;
    the list is include/pipe/Partitioning/Partitioners.def) and writes the result as a `pipe.placement` after the
    graph. The objective is the predicted step time under `schedule` with
    `microbatches` micro-batches (docs/partitioning.md); memory per device
    counts parameters with the `optimizer`'s state and the activations the
    schedule keeps in flight. A text report goes to `text-report` (`-`:
    standard error) and a JSON one to `report`. Fails with the smallest
    per-device memory that would work when nothing fits.

    With `replicas` R > 1 the placement is one of R data-parallel copies
    (`pipe.placement ... replicas R`); the report adds the gradients' ring
    all-reduce over the replicas (device r * devices + d of the device model
    runs replica r's device d, so its links, and with `hosts` its
    inter-host link, decide) and, with `simulate`, the step of the
    replicated schedule, whose bucketed all-reduces overlap the backward
    (the all-reduce's exposed part). `replicas=0` chooses R: every R
    dividing `devices` and `microbatches` is partitioned on devices / R
    devices with microbatches / R micro-batches, and the smallest predicted
    step time (the replicated schedule simulated; without `simulate`,
    pipeline plus all-reduce) among those that fit wins.

    ```
    pipe-opt model.mlir --pipe-partition="algorithm=mixed devices=8 \
        device-model=rtx2080ti-x8 schedule=pipedream-async microbatches=8 \
        optimizer=adamw report=partition.json"
    ```
  }];
  let options = [
    Option<"algorithm", "algorithm", "std::string", /*default=*/"\"mixed\"",
           "Partitioning algorithm: mixed, seq, exact, balanced (or any "
           "registered)">,
    Option<"devices", "devices", "unsigned", /*default=*/"8",
           "Number of devices">,
    Option<"deviceModel", "device-model", "std::string",
           /*default=*/"\"rtx2080ti-x8\"",
           "Device model preset name or JSON file (docs/device-model.md)">,
    Option<"dtype", "dtype", "std::string", /*default=*/"\"f32\"",
           "Compute type whose FLOP rate turns FLOPs into time">,
    Option<"schedule", "schedule", "std::string", /*default=*/"\"gpipe\"",
           "Schedule kind the partition is for (any registered kind)">,
    Option<"microbatches", "microbatches", "unsigned", /*default=*/"8",
           "Micro-batches per optimizer step">,
    Option<"optimizer", "optimizer", "std::string", /*default=*/"\"adamw\"",
           "Optimizer state held per parameter: sgd, momentum, adamw, "
           "adafactor">,
    Option<"weightStashing", "weight-stashing", "bool", /*default=*/"false",
           "pipedream-async: keep one weight version per micro-batch in "
           "flight">,
    Option<"recompute", "recompute", "bool", /*default=*/"false",
           "Stage-level recomputation (GPipe, FTPipe): non-sink stages keep "
           "only their inputs and re-run their forward before the backward; "
           "use with blocks costed under recompute=save-all">,
    Option<"memoryGiB", "memory-gib", "double", /*default=*/"0",
           "Overrides every device's memory in GiB (0: the device model's)">,
    Option<"reserveMiB", "reserve-mib", "double", /*default=*/"0",
           "Memory per device kept back for the runtime, MiB">,
    Option<"simulate", "simulate", "bool", /*default=*/"true",
           "Rank the final candidates by simulating the schedule">,
    Option<"stagesPerDevice", "stages-per-device", "unsigned",
           /*default=*/"1",
           "balanced: contiguous stages per device, round-robin (0: one "
           "stage per block instance)">,
    Option<"replicas", "replicas", "unsigned", /*default=*/"1",
           "Data-parallel copies of the placement, each on `devices` devices "
           "of its own running `microbatches` per step; 0: choose the degree "
           "R with the best predicted step time (devices and microbatches "
           "are then the whole cluster's and step's, split R ways)">,
    Option<"reduceBucketBytes", "reduce-bucket-bytes", "uint64_t",
           /*default=*/"uint64_t(25) << 20",
           "With replicas: the buckets of the simulated all-reduces "
           "(pipe-schedule reduce-bucket-bytes; 0: one blocking reduction "
           "per parameter at the end of the step)">,
    Option<"graphName", "graph", "std::string", /*default=*/"\"\"",
           "The pipe.graph to partition (default: the only one)">,
    Option<"placementName", "placement", "std::string",
           /*default=*/"\"\"",
           "Name of the new pipe.placement (default: <graph>_<algorithm>)">,
    Option<"report", "report", "std::string", /*default=*/"\"\"",
           "Write a JSON report to this file">,
    Option<"textReport", "text-report", "std::string", /*default=*/"\"-\"",
           "Write the text report here ('-': standard error, '': nowhere)">,
  ];
}

def PipePlace : Pass<"pipe-place", "ModuleOp"> {
  let summary = "Groups a graph's block instances into stages on devices";
  let description = [{
    For every `pipe.graph` without a placement, adds `pipe.placement
    @<graph>_placement` made by a partitioner (include/pipe/Partitioning/
    Partitioners.def) through `--pipe-partition`'s driver. The default,
    `balanced`, cuts the block instances, in graph order, into `devices *
    stages-per-device` contiguous stages that minimise the most expensive
    stage (`#pipe.cost` forward plus backward time; 1 unit per block without
    a cost) and puts stage k on device k mod `devices`: one stage per
    device, round-robin chunks for `interleaved-1f1b`, or with
    `stages-per-device=0` one stage per block instance as `l2l` runs. Unlike
    `--pipe-partition`, the placement records no micro-batch count (the
    schedule chooses it) and memory is left to `--pipe-verify-schedule`.

    ```
    pipe-opt model.mlir --pipe-place="devices=4 stages-per-device=2"
    ```
  }];
  let options = [
    Option<"devices", "devices", "unsigned", /*default=*/"2",
           "Number of devices">,
    Option<"stagesPerDevice", "stages-per-device", "unsigned",
           /*default=*/"1",
           "Stages per device, round-robin (0: one per block instance)">,
    Option<"algorithm", "algorithm", "std::string", /*default=*/"\"balanced\"",
           "Partitioner (include/pipe/Partitioning/Partitioners.def)">,
    Option<"deviceModel", "device-model", "std::string", /*default=*/"\"h200\"",
           "Device model preset or JSON file that turns FLOPs into times">,
    Option<"replicas", "replicas", "unsigned", /*default=*/"1",
           "Data-parallel copies of the placement (pipe.placement replicas)">,
  ];
}

def PipeSchedule : Pass<"pipe-schedule", "ModuleOp"> {
  let summary = "Writes a per-device action list for each placement";
  let description = [{
    For every `pipe.placement` (or only `placement`), runs the schedule
    generator `kind` from lib/Scheduling (gpipe, 1f1b, interleaved-1f1b,
    zb-h1, pipedream-async, mixed, l2l, and any registered later) on the
    abstract pipeline built from the placement, the stage graph and the
    blocks' `#pipe.cost`, and adds `pipe.schedule @<placement>_<kind>`.
    Every kind reduces the gradients of parameters shared by several stages
    before updating them, and has a forward-only variant. On a placement
    with `replicas` > 1 the replicas' gradients of a parameter read on one
    device are summed by bucketed `pipe.reduce_bucket` all-reduces that
    start after the device's last backward writing them and are waited on
    before the update (`reduce-bucket-bytes`).

    ```
    pipe-opt placed.mlir --pipe-schedule="kind=1f1b microbatches=8"
    pipe-opt placed.mlir --pipe-schedule="kind=l2l microbatches=8 constant-memory=true"
    pipe-opt placed.mlir --pipe-schedule="kind=l2l steps=4 host-update=overlap"
    pipe-opt replicated.mlir --pipe-schedule="kind=1f1b reduce-bucket-bytes=1048576"
    pipe-opt placed.mlir --pipe-schedule="kind=interleaved-1f1b peer-order=true"
    ```

    With `peer-order`, each device posts its recvs from a peer in the order
    the peer sends them (a recv moves earlier, never later, so the schedule
    waits for nothing new; its buffer is allocated sooner): what a
    transport that matches a device pair's messages only by order (NCCL)
    needs, and what `--pipe-verify-schedule=peer-order` checks.
  }];
  let options = [
    Option<"kind", "kind", "std::string", /*default=*/"\"1f1b\"",
           "Schedule kind (a registered generator name)">,
    Option<"microbatches", "microbatches", "unsigned", /*default=*/"0",
           "Micro-batches per step (0: the count the placement records, "
           "else 8); must agree with the placement's">,
    Option<"steps", "steps", "unsigned", /*default=*/"1",
           "Optimizer steps covered (asynchronous kinds overlap them)">,
    Option<"forwardOnly", "forward-only", "bool", /*default=*/"false",
           "Forward passes only (evaluation)">,
    Option<"weights", "weights", "std::string", /*default=*/"\"stash\"",
           "pipedream-async: 'stash' weight versions, use 'stale' ones, or "
           "'predict' (stale, each forward on the weights extrapolated to "
           "its backward's version)">,
    Option<"constantMemory", "constant-memory", "bool", /*default=*/"false",
           "l2l: offload boundary activations to the host">,
    Option<"hostUpdate", "host-update", "std::string", /*default=*/"\"plain\"",
           "l2l with steps > 1: 'plain' (each step waits for every host "
           "update of the previous one), 'overlap' (a stage's next "
           "forward waits only for its own update) or 'delayed' (step k "
           "computes on the weights before step k-1's update)">,
    Option<"recompute", "recompute", "bool", /*default=*/"false",
           "Recompute each stage's forward before its backward">,
    Option<"reduceBucketBytes", "reduce-bucket-bytes", "uint64_t",
           /*default=*/"uint64_t(25) << 20",
           "Data parallelism: sum the replicas' gradients of parameters "
           "read on one device in asynchronous pipe.reduce_bucket "
           "all-reduces of at most this many bytes, each started once its "
           "gradients are final; 0: one blocking pipe.reduce_grad per "
           "parameter at the end of the step">,
    Option<"peerOrder", "peer-order", "bool", /*default=*/"false",
           "Post each device's recvs from a peer in the order the peer "
           "sends (recvs move earlier), as transports without message "
           "tags (NCCL) need; see pipe-verify-schedule peer-order">,
    Option<"placement", "placement", "std::string", /*default=*/"\"\"",
           "Only schedule this placement (default: all)">,
    Option<"deviceModel", "device-model", "std::string", /*default=*/"\"h200\"",
           "Device model preset or JSON file that turns FLOPs into times">,
  ];
}

def PipeVerifySchedule : Pass<"pipe-verify-schedule", "ModuleOp"> {
  let summary = "Checks schedules by playing their action lists";
  let description = [{
    Plays every `pipe.schedule` as a runtime would and reports, on the
    offending op, with its device and the reason: a required (stage,
    micro-batch, phase) action missing or repeated, data used before it is
    computed or received, a send without its recv or action lists that
    deadlock, parameters used while not loaded or after release, offloaded
    activations used before they are prefetched, a device whose peak memory
    exceeds its capacity in the device model (or `memory-limit` bytes). The
    IR is not changed.

    With `peer-order`, it also checks what a transport without message tags
    (NCCL) needs: between two devices, the sends of one and the recvs of the
    other in the same order. MPI and the in-process transport match messages
    by what they are, so the schedules that interleave transfers of several
    stage pairs between one device pair in different orders (mixed and
    interleaved placements) are correct there but not under NCCL unless
    generated with `--pipe-schedule=peer-order`.

    ```
    pipe-opt scheduled.mlir --pipe-verify-schedule=device-model=rtx2080ti-x8
    pipe-opt scheduled.mlir --pipe-verify-schedule=peer-order
    ```
  }];
  let options = [
    Option<"deviceModel", "device-model", "std::string", /*default=*/"\"\"",
           "Device model preset or JSON file for the memory check (none: "
           "no memory check unless memory-limit is set)">,
    Option<"memoryLimit", "memory-limit", "uint64_t", /*default=*/"0",
           "Capacity of every device in bytes (overrides the model)">,
    Option<"peerOrder", "peer-order", "bool", /*default=*/"false",
           "Require every device pair's sends and recvs in the same order "
           "(transports without tags, such as NCCL)">,
  ];
}

def PipeSimulate : Pass<"pipe-simulate", "ModuleOp"> {
  let summary = "Simulates schedules on a device model";
  let description = [{
    Plays every `pipe.schedule` in a discrete-event simulator: one compute
    stream per device, links with bandwidth and latency, one copy engine
    per direction between host and device, the host optimizer. Prints step
    time, throughput, per-device busy and bubble fractions, peak memory,
    exposed copy time and link utilisation; optionally writes the report as
    JSON and a Chrome trace (chrome://tracing, Perfetto) with one track per
    compute stream, link and copy engine. The IR is not changed.

    ```
    pipe-opt scheduled.mlir --pipe-simulate="device-model=h200 trace=t.json report=r.json"
    ```
  }];
  let options = [
    Option<"deviceModel", "device-model", "std::string", /*default=*/"\"h200\"",
           "Device model preset (h200, h200-8x8, rtx2080ti-x8, v100-l2l) or JSON file">,
    Option<"traceFile", "trace", "std::string", /*default=*/"\"\"",
           "Write a Chrome trace JSON here">,
    Option<"reportFile", "report", "std::string", /*default=*/"\"\"",
           "Write the report as JSON here ('-' for standard output)">,
    Option<"microbatchSize", "microbatch-size", "unsigned", /*default=*/"1",
           "Samples per micro-batch, for throughput">,
    Option<"ideal", "ideal", "bool", /*default=*/"false",
           "Ignore the device model's links, copies and optimizer (free "
           "communication), as the closed forms assume">,
  ];
}

#endif // PIPE_DIALECT_PIPE_TRANSFORMS_PASSES_TD
