"""The export driver: trace, fold, lower node by node, print the module."""

import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Sequence, Tuple, Union

import torch
import torch.fx as fx
import torch.nn.functional as F
from torch.fx.node import map_aggregate

from .errors import ExportError, UnsupportedError, where
from .ir import FunctionBuilder, TensorType, Value
from .linalg import LinalgEmitter
from .lowering import LoweringContext, lower_node, tensor_type
from .tracer import trace
from . import transformer  # noqa: F401  (registers the transformer modules)

_KEY_INVALID = re.compile(r"[^A-Za-z0-9_.$]")


def sanitize_name(name: str) -> str:
    """A parameter name as --pipe-lift-params derives it: characters other
    than letters, digits, '_', '$', '.' become '_', a leading non-letter
    gets a 'p' prefix."""
    text = _KEY_INVALID.sub("_", name)
    if not text or not (text[0].isalpha() or text[0] == "_"):
        text = "p" + text
    return text


@dataclass
class ParamInfo:
    """One exported weight: its PyTorch name (the first one for tied
    weights), the dense_resource key in the IR, its type and tensor."""

    name: str
    key: str
    type: TensorType
    tensor: torch.Tensor

    @property
    def shape(self) -> Tuple[int, ...]:
        return self.type.shape


class WeightTable:
    """One `arith.constant dense_resource<key>` per distinct nn.Parameter
    (by identity: a parameter shared by two modules is one constant read
    twice, which --pipe-lift-params turns into one pipe.param)."""

    def __init__(self, emitter: LinalgEmitter, names: Dict[int, str]) -> None:
        self.emitter = emitter
        self.names = names
        self.params: List[ParamInfo] = []
        self._values: Dict[int, Value] = {}
        self._keys: Dict[str, int] = {}

    def get(self, param: torch.Tensor) -> Value:
        key_id = id(param)
        if key_id in self._values:
            return self._values[key_id]
        name = self.names.get(key_id, f"param{len(self.params)}")
        type_ = tensor_type(param)
        key = sanitize_name(name)
        if key in self._keys:
            self._keys[key] += 1
            key = f"{key}_{self._keys[key]}"
        self._keys.setdefault(key, 0)
        value = self.emitter.constant(f"dense_resource<{key}>", type_,
                                      hint=key.replace(".", "_"), loc=key)
        # A snapshot: later training steps must not change the export.
        self.params.append(ParamInfo(name, key, type_,
                                     param.detach().clone()))
        self._values[key_id] = value
        return value


LossSpec = Union[None, str, torch.nn.Module, Callable]


def _loss_callable(loss_fn: LossSpec) -> Callable:
    if loss_fn == "cross_entropy":
        def cross_entropy(output, targets):
            if output.dim() > 2:
                output = output.reshape(-1, output.shape[-1])
                targets = targets.reshape(-1)
            return F.cross_entropy(output, targets)
        return cross_entropy
    if loss_fn == "mse":
        return F.mse_loss
    if isinstance(loss_fn, str):
        raise ExportError(f"unknown loss '{loss_fn}': use 'cross_entropy', "
                          "'mse', an nn.Module or a callable(output, "
                          "targets)")
    if not callable(loss_fn):
        raise ExportError(f"loss_fn must be a string, an nn.Module or a "
                          f"callable, not {type(loss_fn).__name__}")
    return loss_fn


def _with_loss(model: torch.nn.Module, loss_fn: LossSpec,
               input_names: Sequence[str]) -> torch.nn.Module:
    """A module whose forward(inputs..., targets) returns
    loss(model(inputs...), targets). The model is the submodule `model`;
    the exporter strips that prefix from scopes and names."""
    names = list(input_names)
    if "targets" in names:
        raise ExportError("forward already has an argument named 'targets'")
    arguments = ", ".join(names)
    attribute = "loss" if isinstance(loss_fn, torch.nn.Module) else "_loss"
    source = (f"def forward(self, {arguments}, targets):\n"
              f"    return self.{attribute}(self.model({arguments}), "
              "targets)\n")
    namespace: Dict[str, Any] = {}
    exec(compile(source, "<pipe_mlir loss wrapper>", "exec"), namespace)
    wrapper_type = type("WithLoss", (torch.nn.Module,),
                        {"forward": namespace["forward"]})
    wrapper = wrapper_type()
    wrapper.model = model
    if isinstance(loss_fn, torch.nn.Module):
        wrapper.loss = loss_fn
    else:
        wrapper._loss = _loss_callable(loss_fn)
    wrapper.train(model.training)
    return wrapper


def _wrapped_leaf(model: torch.nn.Module,
                  input_names: Sequence[str]) -> torch.nn.Module:
    """A module whose forward(inputs...) returns model(inputs...), for a
    model that is itself a torch.nn leaf (an nn.TransformerEncoder): fx
    would trace into its forward (fast paths, flags) instead of lowering it
    by type. The model is the submodule `model`, stripped from scopes."""
    arguments = ", ".join(input_names)
    source = (f"def forward(self, {arguments}):\n"
              f"    return self.model({arguments})\n")
    namespace: Dict[str, Any] = {}
    exec(compile(source, "<pipe_mlir leaf wrapper>", "exec"), namespace)
    wrapper_type = type("Leaf", (torch.nn.Module,),
                        {"forward": namespace["forward"]})
    wrapper = wrapper_type()
    wrapper.model = model
    wrapper.train(model.training)
    return wrapper


def _is_lowered_leaf(model: torch.nn.Module) -> bool:
    """A torch.nn module that fx keeps whole and the exporter lowers by
    type (not nn.Sequential, which is traced through)."""
    from .lowering import MODULES
    return fx.Tracer().is_leaf_module(model, "") and any(
        t in MODULES for t in type(model).__mro__)


def _input_names(model: torch.nn.Module, count: int) -> List[str]:
    import inspect
    params = [p for p in inspect.signature(model.forward).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if count > len(params):
        raise ExportError(f"{count} example inputs given, but forward takes "
                          f"{len(params)} "
                          f"({', '.join(p.name for p in params)})")
    return [p.name for p in params[:count]]


class Exporter:
    """Exports one module: see `export_module`."""

    def __init__(self, module: torch.nn.Module, example_inputs: Sequence,
                 loss_fn: LossSpec = None, targets=None,
                 func_name: str = "forward") -> None:
        if not isinstance(module, torch.nn.Module):
            raise ExportError(f"expected a torch.nn.Module, not "
                              f"{type(module).__name__}")
        if isinstance(example_inputs, torch.Tensor):
            example_inputs = (example_inputs,)
        self.model = module
        self.inputs = tuple(example_inputs)
        self.loss_fn = loss_fn
        self.targets = targets
        self.func_name = func_name
        if loss_fn is not None and targets is None:
            raise ExportError("a loss needs example targets (targets=...)")
        if loss_fn is None and targets is not None:
            raise ExportError("targets given without a loss_fn")

    def run(self):
        """Returns the ExportedModel."""
        from . import ExportedModel
        model = self.model
        names = {id(p): n for n, p in model.named_parameters()}
        inputs: Tuple = self.inputs
        root = model
        prefix = ""
        if self.loss_fn is not None:
            input_names = _input_names(model, len(inputs))
            root = _with_loss(model, self.loss_fn, input_names)
            inputs = inputs + (self.targets,)
            prefix = "model"
        elif _is_lowered_leaf(model):
            root = _wrapped_leaf(model, _input_names(model, len(inputs)))
            prefix = "model"
        traced = trace(root, inputs, scope_root=prefix)

        builder = FunctionBuilder(self.func_name)
        emitter = LinalgEmitter(builder)
        weights = WeightTable(emitter, names)
        ctx = LoweringContext(traced, emitter, weights)

        lowered: Dict[fx.Node, Any] = {}
        args: List[Value] = []
        for node in traced.placeholders:
            example = traced.values[node]
            try:
                type_ = tensor_type(example)
            except UnsupportedError as error:
                raise UnsupportedError(f"example input '{node.target}': "
                                       f"{error}") from None
            value = Value(builder.fresh(node.target), type_)
            args.append(value)
            lowered[node] = value

        def resolve(arg):
            if isinstance(arg, fx.Node):
                if arg in lowered:
                    return lowered[arg]
                return traced.values[arg]  # folded: its example value
            return arg

        output_node = None
        for node in traced.graph.nodes:
            if node.op == "output":
                output_node = node
                continue
            if node.op == "placeholder" or node not in traced.dynamic:
                continue
            if node.op == "get_attr":
                lowered[node] = weights.get(traced.values[node])
                continue
            emitter.scope = node.meta.get("pipe_scope") or None
            node_args = map_aggregate(node.args, resolve)
            node_kwargs = map_aggregate(node.kwargs, resolve)
            result = lower_node(ctx, node, node_args, node_kwargs)
            self._check(ctx, node, result)
            lowered[node] = result
        emitter.scope = None

        results: List[Value] = []

        def collect(item):
            item = resolve(item)
            if isinstance(item, (tuple, list)):
                for inner in item:
                    collect(inner)
            elif isinstance(item, dict):
                for inner in item.values():
                    collect(inner)
            elif isinstance(item, Value):
                results.append(item)
            elif isinstance(item, torch.Tensor):
                results.append(ctx.tensor(item))
            else:
                raise ExportError(f"forward returns a {type(item).__name__};"
                                  " only tensors (or tuples of them) can be "
                                  "results")

        if output_node is not None:
            collect(output_node.args[0])
        if not results:
            raise ExportError("forward returns no tensor")
        function = builder.render(args, results)
        return ExportedModel(function, weights.params, args, results,
                             [n.target for n in traced.placeholders],
                             loss=self.loss_fn is not None)

    @staticmethod
    def _check(ctx, node, result) -> None:
        """The lowered result must have the type PyTorch computed."""
        example = ctx.example(node)
        if isinstance(result, Value) and isinstance(example, torch.Tensor):
            expected = tensor_type(example)
            if result.type != expected:
                raise ExportError(
                    f"internal: lowering of{where(node)} produced "
                    f"{result.type}, PyTorch computed {expected}")
