"""Compiling and training from Python: `compile`, `train`, `load_into`.

    from pipe_mlir.export import export_module
    from pipe_mlir import api

    exported = export_module(model.eval(), (idx,), loss_fn="cross_entropy",
                             targets=targets)
    compiled = api.compile(exported, devices=2, schedule="1f1b",
                           microbatches=4)
    print(compiled.step_time_s, compiled.device_stages)
    run = api.train(exported, data=(tokens, labels), steps=100,
                    optimizer="adamw", lr=3e-3, warmup=10, clip=1.0,
                    devices=2, microbatches=4, module=model)
    print(run.losses[-1], run.items_per_second)   # model now holds the
                                                  # trained weights

`compile` runs `pipe-opt` with pipe-train's compile pipelines
(`--pipe-ingest`, `--pipe-partition-and-schedule`), then simulate and
print-summary, and reads what it wrote (the JSON summary of
docs/summary-json.md, the simulator's JSON report and Chrome trace, the
partitioner's report). `train` runs
`pipe-train` (which compiles the same way, JITs the program and runs the
trainer of docs/trainer.md) and reads its JSON-lines log and summary.
Errors of the tools are `pipe_mlir.tools.ToolError`s carrying the tool's
messages; bad arguments are `ValueError`s raised before any tool runs.

The micro-batch size is the exported model's (its inputs' leading
dimension); `microbatches=M` micro-batches make one optimizer step, so the
global batch is M x that size and the loss of a step is the mean of the M
micro-batch losses (the gradient is the mean of theirs).
"""

import json
import math
import os
import re
import tempfile
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from . import tools
from .tools import ToolError

__all__ = ["compile", "train", "load_into", "parse_scheduled", "read_summary",
           "CompileResult", "TrainResult", "BlockInstance", "Stage",
           "Placement", "Schedule", "ToolError", "write_data"]


# --------------------------------------------------------------------------
# The scheduled IR, parsed
# --------------------------------------------------------------------------

@dataclass
class BlockInstance:
    """One `pipe.run` of the graph, in graph order."""

    index: int
    name: str              # instance name ("prologue", "blocks.0", ...)
    function: str          # block function (@layer: shared by layers)
    forward_flops: int = 0
    backward_flops: int = 0  # the fused backward's (input + weight parts)
    param_bytes: int = 0
    stage: Optional[str] = None
    device: Optional[int] = None


@dataclass
class Stage:
    name: str
    device: int
    blocks: List[str]


@dataclass
class Placement:
    name: str
    graph: str
    devices: int
    stages: List[Stage]

    def stage(self, name: str) -> Stage:
        for stage in self.stages:
            if stage.name == name:
                return stage
        raise KeyError(name)


@dataclass
class Schedule:
    name: str
    placement: str
    kind: str
    microbatches: int
    forward_only: bool
    steps: int
    # device -> {action kind: count}
    actions: Dict[int, Dict[str, int]] = field(default_factory=dict)


@dataclass
class ScheduledModule:
    """What `parse_scheduled` reads from a scheduled module's text."""

    graph: str
    input_types: List[str]
    blocks: List[BlockInstance]
    placements: List[Placement]
    schedules: List[Schedule]

    @property
    def batch(self) -> int:
        """Leading dimension of the graph's first input (samples per
        micro-batch), 1 if it has none."""
        if not self.input_types:
            return 1
        dims = self.input_types[0].split("x")[:-1]
        return int(dims[0]) if dims and dims[0].isdigit() else 1


# The version of pipe-print-summary's JSON (docs/summary-json.md) read here.
SUMMARY_JSON_VERSION = 1


def read_summary(summary: Union[dict, str, os.PathLike]) -> ScheduledModule:
    """Reads the graph (block instances in order, with their block
    functions' `#pipe.cost`), the placements and the schedules (kind,
    micro-batches, action counts per device) from `pipe-print-summary`'s
    JSON (`format=json`, docs/summary-json.md): the parsed object or the
    path of its file.

    Raises ValueError for another schema version or a module without a
    `pipe.graph`."""
    if not isinstance(summary, dict):
        with open(os.fspath(summary)) as f:
            summary = json.load(f)
    version = summary.get("version")
    if version != SUMMARY_JSON_VERSION:
        raise ValueError(f"summary JSON version {version!r}; this pipe_mlir "
                         f"reads version {SUMMARY_JSON_VERSION}")
    if not summary["graphs"]:
        raise ValueError("no pipe.graph in the module: run --pipe-form-blocks "
                         "(compile() does) before reading a partition")
    costs = {b["name"]: b["cost"] or {} for b in summary["blocks"]}
    graph = summary["graphs"][0]
    # "4x16xf32" for tensor<4x16xf32>, as the IR spells the shape.
    input_types = ["x".join([("?" if d is None else str(d))
                             for d in t["shape"]] + [t["element_type"]])
                   if "shape" in t else t["type"] for t in graph["inputs"]]
    blocks: List[BlockInstance] = []
    for index, run in enumerate(graph["instances"]):
        cost = costs.get(run["block"], {})
        blocks.append(BlockInstance(
            index, run["name"], run["block"], cost.get("forward_flops", 0),
            # 0 before differentiation: the parts' sum.
            cost.get("backward_flops", 0)
            or cost.get("backward_input_flops", 0)
            + cost.get("backward_weight_flops", 0),
            cost.get("param_bytes", 0)))
    placements = [Placement(p["name"], p["graph"], p["devices"],
                            [Stage(s["name"], s["device"], list(s["blocks"]))
                             for s in p["stages"]])
                  for p in summary["placements"]]
    schedules = [Schedule(s["name"], s["placement"], s["kind"],
                          s["microbatches"], s["forward_only"], s["steps"],
                          {d["device"]: dict(d["counts"])
                           for d in s["devices"]})
                 for s in summary["schedules"]]

    # Stage and device of every block instance (the first placement's).
    if placements:
        where = {}
        for stage in placements[0].stages:
            for name in stage.blocks:
                where[name] = stage
        for block in blocks:
            if block.name in where:
                block.stage = where[block.name].name
                block.device = where[block.name].device
    return ScheduledModule(graph["name"], input_types, blocks, placements,
                           schedules)


_JSON_SUMMARY = "--pipe-print-summary=format=json output=-"


def _summarize(pipe_opt: str, args: List[str], stdin: str = "",
               timeout: float = 600) -> dict:
    """pipe-print-summary's JSON of what pipe-opt makes of `args` (the
    input among them, or `stdin`)."""
    out = tools.run_tool(pipe_opt, args + [_JSON_SUMMARY, "-o", os.devnull],
                         stdin, timeout=timeout)
    return json.loads(out)


def parse_scheduled(text: str) -> ScheduledModule:
    """`read_summary` of a module's text printed by `pipe-opt` after
    `--pipe-schedule` (or any later stage): pipe-opt reads it and writes
    the JSON summary.

    Raises ValueError when the text has no `pipe.graph`."""
    return read_summary(_summarize(tools.find_tool("pipe-opt"), ["-"], text))


# --------------------------------------------------------------------------
# compile
# --------------------------------------------------------------------------

@dataclass
class CompileResult:
    """What `compile` produced. Times are in seconds."""

    source_path: str             # the model's .mlir as given to pipe-opt
    scheduled_path: str          # pipe-opt's output (scheduled IR)
    options: Dict[str, Any]      # the compile() arguments used
    module: ScheduledModule
    summary: str                 # pipe-print-summary's text
    report: Optional[dict] = None        # pipe-simulate report= JSON
    report_path: Optional[str] = None
    trace_path: Optional[str] = None     # pipe-simulate trace= (Chrome)
    partition_report: Optional[dict] = None   # pipe-partition report=
    partition_report_path: Optional[str] = None
    partition_text: str = ""             # pipe-partition's text report
    exported: Any = None                 # the ExportedModel, if given one
    summary_json: Optional[dict] = None  # pipe-print-summary format=json
    summary_json_path: Optional[str] = None

    @property
    def placement(self) -> Placement:
        return self.module.placements[0]

    @property
    def blocks(self) -> List[BlockInstance]:
        return self.module.blocks

    @property
    def schedule(self) -> Schedule:
        """The training schedule (the first one that is not forward-only)."""
        for schedule in self.module.schedules:
            if not schedule.forward_only:
                return schedule
        return self.module.schedules[0]

    @property
    def stage_to_device(self) -> Dict[str, int]:
        return {s.name: s.device for s in self.placement.stages}

    @property
    def device_stages(self) -> Dict[int, List[str]]:
        """device -> its stages in stage order (several on a Mixed-Pipe or
        interleaved device)."""
        result: Dict[int, List[str]] = {d: [] for d in
                                        range(self.placement.devices)}
        for stage in self.placement.stages:
            result.setdefault(stage.device, []).append(stage.name)
        return result

    def _simulated(self) -> Optional[dict]:
        if not self.report:
            return None
        for entry in self.report.get("schedules", []):
            if entry.get("name") == self.schedule.name:
                return entry.get("report")
        return None

    @property
    def step_time_s(self) -> Optional[float]:
        """Simulated time of one optimizer step of the training schedule."""
        simulated = self._simulated()
        return None if simulated is None else simulated.get("step_time_s")

    @property
    def throughput(self) -> Optional[float]:
        """Simulated samples per second (micro-batch size from the IR)."""
        simulated = self._simulated()
        return (None if simulated is None
                else simulated.get("throughput_samples_per_s"))

    @property
    def bubble_fractions(self) -> List[float]:
        simulated = self._simulated() or {}
        return [d.get("bubble_fraction", 0.0)
                for d in simulated.get("devices", [])]


def _workdir(workdir: Optional[str]) -> str:
    if workdir is None:
        return tempfile.mkdtemp(prefix="pipe_mlir_")
    os.makedirs(workdir, exist_ok=True)
    return workdir


def _model_source(model, workdir: str) -> Tuple[str, Any]:
    """(path of a .mlir file, the ExportedModel or None)."""
    if isinstance(model, CompileResult):
        return model.source_path, model.exported
    if hasattr(model, "mlir") and hasattr(model, "params"):  # ExportedModel
        path = os.path.join(workdir, "model.mlir")
        model.save(path)
        return path, model
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"no model file {path!r}")
        return path, None
    try:  # a torch module: point at export_module
        import torch
        if isinstance(model, torch.nn.Module):
            raise TypeError(
                "pass an exported model: pipe_mlir.export.export_module("
                f"{type(model).__name__}(...), inputs, loss_fn=..., "
                "targets=...), or the path of its .mlir")
    except ImportError:
        pass
    raise TypeError(f"expected an ExportedModel, a CompileResult or the "
                    f"path of a .mlir file, not {type(model).__name__}")


def _options(**kwargs) -> str:
    """A pass's option text. Strings are quoted, so that a path with a space
    stays one value and a value cannot add options of its own."""
    def value(v):
        if not isinstance(v, str):
            return str(v)
        if '"' in v or "\n" in v:
            raise ValueError(f"{v!r}: a pass option value may not contain a "
                             "double quote or a newline")
        return f'"{v}"'
    return " ".join(f"{k}={value(v)}" for k, v in kwargs.items()
                    if v is not None)


def _check_count(name: str, value, minimum: int) -> None:
    """ValueError unless `value` is an int (not a bool) >= `minimum`."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an int, not {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, not {value}")


def _bool(value: bool) -> str:
    return "true" if value else "false"


def compile(model, devices: int = 2, schedule: str = "1f1b",
            microbatches: int = 4, partitioner: Optional[str] = None,
            device_model: Optional[str] = None, stages_per_device: int = 1,
            recompute: bool = False, eval_schedule: bool = False,
            simulate: bool = True, data_parallel: int = 1,
            reduce_bucket_bytes: int = 25 << 20,
            peer_order: bool = False,
            workdir: Optional[str] = None,
            timeout: float = 600) -> CompileResult:
    """Partitions and schedules `model` with pipe-opt, as pipe-train does.

    model: an `ExportedModel` (written to `workdir/model.mlir`) or the path
    of a .mlir file whose `@forward` returns the scalar loss.
    partitioner: None places the blocks with `--pipe-place` (balanced
    contiguous stages, `stages_per_device` round-robin chunks per device);
    "mixed", "seq" or "exact" run FTPipe's `--pipe-partition` (which may
    give a device several non-adjacent stages) for `schedule` and
    `microbatches` on `device_model`.
    device_model: preset name or JSON file, passed to every pass that takes
    one; None leaves each pass its default (the partitioner rtx2080ti-x8,
    schedule and simulator h200) and skips the memory check.
    eval_schedule: also add the forward-only gpipe schedule pipe-train uses
    for evaluation.
    simulate: run `--pipe-simulate` with `trace=` and `report=` files in
    `workdir`.
    data_parallel: replicas of the placed pipeline (`replicas` on the
    placement), each training on its share of every step's micro-batches;
    with schedule "l2l", devices on one parameter server.
    reduce_bucket_bytes: with data_parallel > 1, the replicas' gradients of
    a device's own parameters are summed in all-reduces of at most this
    many bytes, each started after the device's last backward writing it
    (`pipe.reduce_bucket`); 0: one blocking `pipe.reduce_grad` per
    parameter at the end of the step.
    peer_order: every device posts its recvs from a peer in the order the
    peer sends (`pipe-schedule peer-order`), as NCCL between processes and
    `pipe-runner --transport mpi-in-order` need.

    Returns a `CompileResult`. Raises `ToolError` with pipe-opt's
    diagnostics if a pass fails (e.g. nothing fits in memory, an
    unsupported op in a hand-written module)."""
    for name, value in (("devices", devices), ("microbatches", microbatches),
                        ("stages_per_device", stages_per_device),
                        ("data_parallel", data_parallel)):
        _check_count(name, value, 1)
    _check_count("reduce_bucket_bytes", reduce_bucket_bytes, 0)
    if isinstance(device_model, os.PathLike):
        device_model = os.fspath(device_model)
    for name, value in (("schedule", schedule), ("partitioner", partitioner),
                        ("device_model", device_model)):
        if value is not None and not isinstance(value, str):
            raise ValueError(f"{name} must be a str, not {value!r}")
    workdir = _workdir(workdir)
    source, exported = _model_source(model, workdir)
    options = dict(devices=devices, schedule=schedule,
                   microbatches=microbatches, partitioner=partitioner,
                   device_model=device_model,
                   stages_per_device=stages_per_device, recompute=recompute,
                   data_parallel=data_parallel,
                   reduce_bucket_bytes=reduce_bucket_bytes,
                   peer_order=peer_order)
    scheduled = os.path.join(workdir, "scheduled.mlir")
    summary = os.path.join(workdir, "summary.txt")
    summary_json = os.path.join(workdir, "summary.json")
    pipe_opt = tools.find_tool("pipe-opt")
    # pipe-train's compile pipelines (pipe/Pipelines), with typed options.
    # The pipeline places a parameter-server schedule (l2l) itself: one
    # device, one stage per block instance.
    ingest = ["--pipe-ingest"]
    partition_json = partition_text = None
    if partitioner:
        partition_json = os.path.join(workdir, "partition.json")
        partition_text = os.path.join(workdir, "partition.txt")
    args = ingest + ["--pipe-partition-and-schedule=" + _options(
        partitioner=partitioner, devices=devices, schedule=schedule,
        microbatches=microbatches, recompute=_bool(recompute),
        eval=_bool(eval_schedule), replicas=data_parallel,
        **{"stages-per-device": stages_per_device,
           "device-model": device_model,
           "partition-report": partition_json,
           "partition-text-report": partition_text,
           "reduce-bucket-bytes": reduce_bucket_bytes,
           "peer-order": _bool(peer_order)})]
    trace = report = None
    if simulate:
        trace = os.path.join(workdir, "trace.json")
        report = os.path.join(workdir, "simulate.json")
        args.append("--pipe-simulate=" + _options(
            trace=trace, report=report,
            **{"microbatch-size": _source_batch(source, exported),
               "device-model": device_model}))
    args.append("--pipe-print-summary=" + _options(output=summary))
    args.append("--pipe-print-summary=" + _options(format="json",
                                                   output=summary_json))
    tools.run_tool(pipe_opt, args + [source, "-o", scheduled],
                   timeout=timeout)
    summary_data = _read_json(summary_json)
    module = read_summary(summary_data)
    result = CompileResult(source, scheduled, options, module,
                           _read_text(summary), exported=exported,
                           summary_json=summary_data,
                           summary_json_path=summary_json)
    if simulate:
        result.report = _read_json(report)
        result.report_path, result.trace_path = report, trace
    if partitioner:
        result.partition_report = _read_json(partition_json)
        result.partition_report_path = partition_json
        result.partition_text = _read_text(partition_text)
    return result


def _source_batch(path: str, exported=None) -> int:
    """Leading dimension of @forward's first argument (the micro-batch
    size, for the simulator's samples/s), 1 if unknown: the exported
    model's, else read from the model's own file (the input, before any
    pass)."""
    if exported is not None and exported.input_types:
        shape = tuple(exported.input_types[0].shape)
        return int(shape[0]) if shape else 1
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return 1
    match = re.search(r"func\.func @forward\(%[\w]+: tensor<(\d+)x", text)
    return int(match.group(1)) if match else 1


def _read_text(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def _read_json(path: str) -> Optional[dict]:
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


# --------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------

def _as_tensor(value, what: str):
    import torch
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().contiguous()
    try:
        import numpy as np
        if isinstance(value, np.ndarray):
            return torch.from_numpy(np.ascontiguousarray(value))
    except ImportError:
        pass
    raise TypeError(f"{what}: expected a torch tensor or numpy array, not "
                    f"{type(value).__name__}")


_MLIR_DTYPES = {"f32": "float32", "f64": "float64", "f16": "float16",
                "bf16": "bfloat16", "i64": "int64", "i32": "int32",
                "i16": "int16", "i8": "int8", "i1": "bool"}


def _input_signature(exported) -> Optional[List[Tuple[Tuple[int, ...], str]]]:
    if exported is None:
        return None
    result = []
    for type_ in exported.input_types:
        result.append((tuple(type_.shape), _MLIR_DTYPES.get(
            str(type_.element), str(type_.element))))
    return result


def write_data(path: str, inputs, eval_inputs=None, exported=None) -> str:
    """Writes the trainer's safetensors data file (docs/trainer.md):
    `inputs[k]` of shape [N, <input k's shape>] as `input<k>`,
    `eval_inputs[k]` as `eval_input<k>`. `inputs` is a sequence of tensors
    or numpy arrays (or a dict name -> tensor, written as given). With the
    `exported` model, shapes and dtypes are checked first (ValueError naming
    the input)."""
    from .safetensors import save_file
    tensors: Dict[str, Any] = {}
    signature = _input_signature(exported)

    def add(group, prefix):
        if isinstance(group, dict):
            for name, value in group.items():
                tensors[name] = _as_tensor(value, name)
            return
        if not isinstance(group, (list, tuple)):
            group = [group]
        rows = None
        for k, value in enumerate(group):
            name = f"{prefix}{k}"
            tensor = _as_tensor(value, name)
            if signature is not None:
                if len(group) != len(signature):
                    raise ValueError(
                        f"{prefix}: {len(group)} tensors given, the model "
                        f"has {len(signature)} inputs "
                        f"({_describe_signature(signature, exported)})")
                shape, dtype = signature[k]
                got_dtype = str(tensor.dtype).replace("torch.", "")
                if tuple(tensor.shape[1:]) != shape or got_dtype != dtype \
                        or tensor.dim() != len(shape) + 1:
                    raise ValueError(
                        f"{name} ({_input_name(exported, k)}) has shape "
                        f"{list(tensor.shape)} and dtype {got_dtype}; the "
                        f"model needs [N, {', '.join(map(str, shape))}] "
                        f"{dtype} (N rows of input {k}'s static shape "
                        f"{list(shape)})")
            if rows is None:
                rows = tensor.shape[0] if tensor.dim() else 0
            elif tensor.dim() == 0 or tensor.shape[0] != rows:
                raise ValueError(f"{name} has {tensor.shape[0]} rows, "
                                 f"{prefix}0 has {rows}")
            if rows == 0:
                raise ValueError(f"{name}: no rows")
            tensors[name] = tensor

    add(inputs, "input")
    if eval_inputs is not None:
        add(eval_inputs, "eval_input")
    save_file(tensors, path)
    return path


def _input_name(exported, k: int) -> str:
    names = getattr(exported, "input_names", None) or []
    return names[k] if k < len(names) else f"input {k}"


def _describe_signature(signature, exported) -> str:
    return ", ".join(f"{_input_name(exported, k)}: {list(s)} {d}"
                     for k, (s, d) in enumerate(signature))


# --------------------------------------------------------------------------
# train
# --------------------------------------------------------------------------

@dataclass
class TrainResult:
    """A finished pipe-train run. Losses and lrs are per optimizer step
    (index 0 = step 1); times in seconds."""

    losses: List[float]
    lrs: List[float]
    times: List[float]            # seconds since training started, per step
    throughputs: List[float]      # tokens or samples per second, per step
    unit: str                     # "tok" or "samples"
    eval_losses: List[Tuple[int, float]]  # (step, loss) of each evaluation
    eval_loss: Optional[float]    # the last evaluation's
    train_loss: Optional[float]   # summary: mean of the last 10 steps
    items_per_second: Optional[float]  # summary throughput
    wall_seconds: Optional[float]
    compile_seconds: Optional[float]
    weights_path: str
    log_path: str
    trace_path: Optional[str]
    scheduled_path: Optional[str]
    stdout: str
    command: List[str]
    log: List[dict] = field(default_factory=list)
    # Task metrics of each logged evaluation, {"accuracy": [(step, value)]}
    # (the model's --metric / --loss metrics), and of the last evaluation.
    eval_metrics: Dict[str, List[Tuple[int, float]]] = \
        field(default_factory=dict)
    final_metrics: Dict[str, float] = field(default_factory=dict)

    @property
    def step_times(self) -> List[float]:
        """Measured wall time of each step: differences of `times` (so a
        step followed by an evaluation includes it; `throughputs` are of
        the training runs alone)."""
        result, previous = [], 0.0
        for time in self.times:
            result.append(time - previous)
            previous = time
        return result

    def weights(self) -> Dict[str, Any]:
        """The trained params as numpy arrays, by IR name."""
        from .safetensors import load_file
        return load_file(self.weights_path)


_FLOAT = r"([-+0-9.eE]+|nan|inf|-)"


def _summary_value(text: str, pattern: str) -> Optional[float]:
    match = re.search(pattern, text)
    if not match:
        return None
    try:
        value = float(match.group(1))
    except ValueError:
        return None
    return None if math.isnan(value) else value


def _number_text(value) -> str:
    return repr(float(value)) if isinstance(value, float) else str(value)


def train(model, data, steps: int = 10, optimizer: str = "adamw",
          lr: float = 1e-3, min_lr: float = 0.0, warmup: int = 0,
          lr_schedule: str = "constant",
          weight_decay: Optional[float] = None, momentum: float = 0.0,
          dampening: float = 0.0, nesterov: bool = False,
          beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8,
          clip: float = 0.0, eval_data=None, eval_every: int = 0,
          eval_batches: int = 0, devices: Optional[int] = None,
          schedule: Optional[str] = None,
          microbatches: Optional[int] = None,
          partitioner: Optional[str] = None,
          device_model: Optional[str] = None,
          stages_per_device: Optional[int] = None,
          recompute: Optional[bool] = None,
          data_parallel: Optional[int] = None,
          reduce_bucket_bytes: Optional[int] = None,
          peer_order: Optional[bool] = None,
          trace: Union[bool, str] = False,
          module=None, init_weights: Optional[str] = None,
          lr_groups: Optional[Dict[str, float]] = None,
          decay_all: bool = False, freeze: Sequence[str] = (),
          loss: Optional[str] = None, metrics: Sequence[str] = (),
          async_weights: Optional[str] = None,
          async_steps: Optional[int] = None,
          opt_level: Optional[int] = None, extra_args: Sequence[str] = (),
          workdir: Optional[str] = None, timeout: float = 600) -> TrainResult:
    """Trains `model` with pipe-train and returns the losses and timings.

    model: an `ExportedModel`, the path of a .mlir file, or a
    `CompileResult` (its model and, unless given here, its devices,
    schedule, micro-batches, partitioner, device model, stages per device,
    recompute and data-parallel replicas).
    data: the path of a safetensors data file, or the input tensors
    (`[N, <input shape>]` each, in the order of the exported function's
    arguments: the model's inputs then the targets), written to
    `workdir/data.safetensors`; micro-batch g (g = step * microbatches + m)
    takes row g mod N. eval_data: the same for the evaluation split.
    Optimizer, learning rate and clipping options are pipe-train's
    (docs/trainer.md); weight_decay None = torch.optim's default (0.01 for
    AdamW, 0 for SGD; pipe-train's own default run uses 0.1), which params
    of rank 0 or 1 (biases, norm scales) do not get unless decay_all.
    lr_groups: {pattern: multiplier}, pipe-train's --lr-group: the params
    a pattern names (a glob on the whole name, or "re:" and a regular
    expression, as --freeze) train at multiplier times the scheduled rate.
    data_parallel: replicas of the pipeline in this process, each on its
    share of every step's micro-batches (pipe-train's --data-parallel;
    under "l2l", devices on one parameter server); reduce_bucket_bytes: the
    replicas' gradient all-reduces' bucket size (pipe-train's
    --reduce-bucket-bytes, `compile`'s); peer_order: recvs in each peer's
    send order (pipe-train's --peer-order, `compile`'s).
    freeze: patterns of params that do not train (pipe-train's --freeze).
    loss: a model returning logits or activations trains on this loss of
    its result against the data's last input (pipe-train's --loss:
    "cross-entropy", "nll", "mse"); metrics: task metrics the evaluations
    report beside the loss (--metric: "accuracy"), in `eval_metrics`.
    async_weights, async_steps: schedule "pipedream-async"'s weights
    ("stash", "stale" or "predict") and optimizer steps per pipeline fill.
    trace: True (or a path) writes the runtime's Chrome trace.
    module: a torch.nn.Module whose parameters receive the trained weights
    (`load_into`; names from the exported model, tied weights once).
    opt_level: pipe-train's -O (None: its default, 3).

    Raises ValueError for data that does not fit the exported model,
    ToolError with pipe-train's message when it fails."""
    workdir = _workdir(workdir)
    defaults = dict(devices=1, schedule="1f1b", microbatches=4,
                    partitioner=None, device_model=None, stages_per_device=1,
                    recompute=False, data_parallel=1,
                    reduce_bucket_bytes=25 << 20, peer_order=False)
    if isinstance(model, CompileResult):
        defaults.update(model.options)
    given = dict(devices=devices, schedule=schedule,
                 microbatches=microbatches, partitioner=partitioner,
                 device_model=device_model,
                 stages_per_device=stages_per_device, recompute=recompute,
                 data_parallel=data_parallel,
                 reduce_bucket_bytes=reduce_bucket_bytes,
                 peer_order=peer_order)
    settings = {k: (given[k] if given[k] is not None else defaults[k])
                for k in defaults}
    if steps < 1:
        raise ValueError("steps must be >= 1")
    if optimizer not in ("sgd", "adamw"):
        raise ValueError(f"optimizer must be 'sgd' or 'adamw', not "
                         f"{optimizer!r}")
    source, exported = _model_source(model, workdir)

    if isinstance(data, (str, os.PathLike)):
        data_path = os.fspath(data)
        if not os.path.isfile(data_path):
            raise FileNotFoundError(f"no data file {data_path!r}")
        if eval_data is not None:
            raise ValueError("eval_data goes into the data file when data "
                             "is a path (eval_input<k> tensors)")
    else:
        # An attached loss adds the targets as a last input the export
        # does not have.
        data_path = write_data(os.path.join(workdir, "data.safetensors"),
                               data, eval_data, None if loss else exported)

    log_path = os.path.join(workdir, "log.jsonl")
    weights_path = os.path.join(workdir, "weights.safetensors")
    scheduled_path = os.path.join(workdir, "scheduled.mlir")
    for path in (log_path, weights_path):
        if os.path.exists(path):
            os.remove(path)
    trace_path = None
    if trace:
        trace_path = (os.path.join(workdir, "runtime_trace.json")
                      if trace is True else os.fspath(trace))

    args = [source, "--data", data_path, "--steps", str(steps),
            "--devices", str(settings["devices"]),
            "--schedule", settings["schedule"],
            "--microbatches", str(settings["microbatches"]),
            "--optimizer", optimizer, "--lr", _number_text(lr),
            "--min-lr", _number_text(min_lr), "--warmup", str(warmup),
            "--lr-schedule", lr_schedule,
            "--beta1", _number_text(beta1), "--beta2", _number_text(beta2),
            "--eps", _number_text(eps),
            "--momentum", _number_text(momentum),
            "--dampening", _number_text(dampening),
            "--log-json", log_path, "--save-weights", weights_path,
            "--emit-scheduled", scheduled_path]
    if settings["partitioner"]:
        args += ["--partitioner", settings["partitioner"]]
    if settings["device_model"]:
        args += ["--device-model", settings["device_model"]]
    if settings["stages_per_device"] != 1:
        args += ["--stages-per-device", str(settings["stages_per_device"])]
    if settings["recompute"]:
        args.append("--recompute")
    if settings["peer_order"]:
        args.append("--peer-order")
    if settings["data_parallel"] != 1:
        args += ["--data-parallel", str(settings["data_parallel"]),
                 "--reduce-bucket-bytes",
                 str(settings["reduce_bucket_bytes"])]
    if nesterov:
        args.append("--nesterov")
    if weight_decay is None:
        # torch.optim's defaults, not pipe-train's default run's (0.1).
        weight_decay = 0.01 if optimizer == "adamw" else 0.0
    args += ["--weight-decay", _number_text(weight_decay)]
    if clip:
        args += ["--clip", _number_text(clip)]
    if eval_every:
        args += ["--eval-every", str(eval_every)]
    if eval_batches:
        args += ["--eval-batches", str(eval_batches)]
    if init_weights:
        args += ["--init-weights", os.fspath(init_weights)]
    for pattern, multiplier in (lr_groups or {}).items():
        args += ["--lr-group", f"{pattern}={_number_text(multiplier)}"]
    if decay_all:
        args.append("--decay-all")
    for pattern in freeze:
        args += ["--freeze", pattern]
    if loss:
        args += ["--loss", loss]
    for metric in metrics:
        args += ["--metric", metric]
    if async_weights:
        args += ["--async-weights", async_weights]
    if async_steps is not None:
        args += ["--async-steps", str(async_steps)]
    if trace_path:
        args += ["--trace", trace_path]
    if opt_level is not None:
        args += ["-O", str(opt_level)]
    args += list(extra_args)

    tool = tools.find_tool("pipe-train")
    stdout = tools.run_tool(tool, args, timeout=timeout)
    log = []
    if os.path.exists(log_path):
        with open(log_path) as f:
            log = [json.loads(line) for line in f if line.strip()]
    unit = "tok"
    throughputs = []
    for entry in log:
        if "samples_per_s" in entry:
            unit = "samples"
            throughputs.append(entry["samples_per_s"])
        else:
            throughputs.append(entry.get("tokens_per_s", float("nan")))
    eval_losses = [(e["step"], e["eval_loss"]) for e in log
                   if "eval_loss" in e]
    eval_loss = _summary_value(stdout, r"eval loss: " + _FLOAT)
    if eval_loss is None and eval_losses:
        eval_loss = eval_losses[-1][1]
    eval_metrics: Dict[str, List[Tuple[int, float]]] = {}
    for entry in log:
        for key, value in entry.items():
            if key.startswith("eval_") and key != "eval_loss":
                eval_metrics.setdefault(key[5:], []).append(
                    (entry["step"], value))
    final_metrics = {}
    for name, value in re.findall(r"^  eval (\w+): " + _FLOAT + "$", stdout,
                                  re.M):
        if name != "loss" and value not in ("-", "nan"):
            final_metrics[name] = float(value)
    result = TrainResult(
        losses=[e["loss"] for e in log], lrs=[e.get("lr") for e in log],
        times=[e.get("time", float("nan")) for e in log],
        throughputs=throughputs, unit=unit, eval_losses=eval_losses,
        eval_loss=eval_loss,
        train_loss=_summary_value(stdout, r"train loss \(mean of last \d+\)"
                                  r": " + _FLOAT),
        items_per_second=_summary_value(stdout, r"throughput: " + _FLOAT),
        wall_seconds=(log[-1]["time"] if log and "time" in log[-1] else
                      _summary_value(stdout, r"wall time " + _FLOAT)),
        compile_seconds=_summary_value(stdout, r"compiled in " + _FLOAT),
        weights_path=weights_path, log_path=log_path, trace_path=trace_path,
        scheduled_path=scheduled_path, stdout=stdout,
        command=[tool] + args, log=log, eval_metrics=eval_metrics,
        final_metrics=final_metrics)
    if module is not None:
        load_into(module, weights_path, exported)
    return result


# --------------------------------------------------------------------------
# Weights back into PyTorch
# --------------------------------------------------------------------------

def load_into(module, weights, exported=None, strict: bool = True):
    """Copies trained weights into a torch module's parameters, in place.

    weights: a safetensors path (pipe-train --save-weights, pipe-runner
    --save, a trainer checkpoint: optimizer state tensors are ignored) or a
    dict name -> array. Names are the IR's param names: the PyTorch
    parameter names made identifiers the way --pipe-lift-params does
    (`0.weight` -> `p0.weight`); `exported` gives the exact mapping. A tied
    parameter (one nn.Parameter under several names) is stored once, under
    its first name, and loaded once.

    strict: every parameter must be found (else ValueError listing the
    missing ones). A shape mismatch is always a ValueError. Returns the
    list of torch parameter names loaded."""
    import torch
    if isinstance(weights, (str, os.PathLike)):
        from .safetensors import load_file
        weights = load_file(os.fspath(weights))
    keys: Dict[str, str] = {}  # torch name -> IR key
    if exported is not None:
        keys = {p.name: p.key for p in exported.params}
    else:
        from .export.exporter import sanitize_name
        keys = {name: sanitize_name(name)
                for name, _ in module.named_parameters()}
    loaded, missing = [], []
    with torch.no_grad():
        for name, param in module.named_parameters():  # tied: first name
            key = keys.get(name)
            if key is None or key not in weights:
                missing.append(f"{name} (as {key or sanitize_key(name)})")
                continue
            value = torch.as_tensor(weights[key])
            if tuple(value.shape) != tuple(param.shape):
                raise ValueError(f"weights: '{key}' has shape "
                                 f"{list(value.shape)}, parameter '{name}' "
                                 f"has {list(param.shape)}")
            param.copy_(value.to(param.dtype))
            loaded.append(name)
    if missing and strict:
        raise ValueError("weights lack parameters: " + ", ".join(missing))
    return loaded


def sanitize_key(name: str) -> str:
    from .export.exporter import sanitize_name
    return sanitize_name(name)
