"""torch.fx tracing with concrete shadow values.

`symbolic_trace` alone cannot follow the shape arithmetic real models do
(`B, T, C = x.size()`, `self.mask[:, :, :T, :T]`): sizes are proxies. The
exporter emits static shapes anyway, so `ConcreteTracer` runs the model on
the example inputs while it traces: every node gets its concrete value as
it is created, `size()`, `shape`, `dim()`, `len()` and iteration answer with
real numbers, and each node records the module path it was traced in
(`node.meta["pipe_scope"]`). A failure while evaluating a node (an example
input of the wrong shape) is reported at that node.

The result also says which nodes depend on the inputs or on parameters
("dynamic"); everything else is a constant the exporter folds.
"""

import inspect
from typing import Any, Dict, List, Sequence, Set

import torch
import torch.fx as fx
from torch.fx.node import map_arg

from .errors import ExportError, describe_target, where

# Tensor attributes that are static facts, answered from the example run.
_STATIC_ATTRIBUTES = {"shape", "dtype", "ndim", "device", "is_cuda",
                      "layout", "requires_grad", "is_leaf"}
_STATIC_METHODS = {"size", "dim", "numel", "nelement", "element_size",
                   "is_floating_point", "is_contiguous", "get_device"}


class ConcreteProxy(fx.Proxy):
    """A proxy that knows its node's value on the example inputs."""

    def __getattr__(self, k: str):
        if k in ("node", "tracer") or k.startswith("__"):
            raise AttributeError(k)
        value = self.tracer.values.get(self.node)
        if isinstance(value, torch.Tensor):
            if k in _STATIC_ATTRIBUTES:
                return getattr(value, k)
            if k in _STATIC_METHODS:
                return getattr(value, k)
            attribute = getattr(value, k, None)
            if attribute is not None and not callable(attribute):
                # A tensor-valued property such as `.T`: record it now.
                return self.tracer.create_proxy("call_function", getattr,
                                                (self, k), {})
        return fx.proxy.Attribute(self, k)

    def __len__(self) -> int:
        return len(self.tracer.values[self.node])

    def __iter__(self):
        value = self.tracer.values.get(self.node)
        if isinstance(value, (tuple, list, torch.Tensor)):
            return iter([self[i] for i in range(len(value))])
        return super().__iter__()

    def __bool__(self) -> bool:
        raise ExportError(
            f"control flow depends on a tensor value{where(self.node)}: the "
            "exporter records one static graph; compute the condition from "
            "shapes or module attributes instead")


class ConcreteTracer(fx.Tracer):
    """fx.Tracer that evaluates each node on the example inputs as it goes
    and records module scopes. fx's default leaves are kept: modules from
    torch.nn (Linear, LayerNorm, LSTM...) stay whole, as call_module nodes
    lowered by type; user modules are traced through."""

    def __init__(self, inputs: Dict[str, Any], scope_root: str = "") -> None:
        super().__init__()
        self.inputs = inputs
        self.scope_root = scope_root
        self.values: Dict[fx.Node, Any] = {}
        self.scopes: List[str] = []
        self._evaluating = 0

    def call_module(self, m, forward, args, kwargs):
        if self._evaluating:
            return forward(*args, **kwargs)
        try:
            path = self.path_of_module(m)
        except NameError:
            # Called but not a submodule (a loss object made on the fly):
            # without state it can be traced through, ops and all.
            if any(True for _ in m.parameters()) or \
                    any(True for _ in m.buffers()):
                raise ExportError(
                    f"{type(m).__name__} is called but is not a submodule of "
                    "the model, and it has parameters or buffers: assign it "
                    "to a module attribute") from None
            return forward(*args, **kwargs)
        self.scopes.append(path)
        try:
            return super().call_module(m, forward, args, kwargs)
        finally:
            self.scopes.pop()

    def getattr(self, attr, attr_val, parameter_proxy_cache):
        if self._evaluating:
            return attr_val
        return super().getattr(attr, attr_val, parameter_proxy_cache)

    def create_node(self, kind, target, args, kwargs, name=None,
                    type_expr=None):
        node = super().create_node(kind, target, args, kwargs, name,
                                   type_expr)
        scope = self.scopes[-1] if self.scopes else ""
        if self.scope_root and (scope == self.scope_root or
                                scope.startswith(self.scope_root + ".")):
            scope = scope[len(self.scope_root) + 1:]
        node.meta["pipe_scope"] = scope
        if kind == "get_attr":  # create_arg makes these without a proxy
            self.values[node] = self._evaluate(node)
        return node

    def proxy(self, node: fx.Node) -> fx.Proxy:
        self.values[node] = self._evaluate(node)
        return ConcreteProxy(node, self)

    def _evaluate(self, node: fx.Node) -> Any:
        if node.op == "placeholder":
            if node.target in self.inputs:
                return self.inputs[node.target]
            # A specialized argument (a default fx recorded as concrete_args).
            return node.args[0] if node.args else None
        if node.op == "get_attr":
            self._evaluating += 1  # plain attribute reads, no proxies
            try:
                value = self.root
                for part in node.target.split("."):
                    value = getattr(value, part)
                return value
            finally:
                self._evaluating -= 1
        args = map_arg(node.args, lambda n: self.values[n])
        kwargs = map_arg(node.kwargs, lambda n: self.values[n])
        self._evaluating += 1
        try:
            with torch.no_grad():
                if node.op == "call_function":
                    return node.target(*args, **kwargs)
                if node.op == "call_method":
                    return getattr(args[0], node.target)(*args[1:], **kwargs)
                if node.op == "call_module":
                    module = self.root.get_submodule(node.target)
                    return module(*args, **kwargs)
        except ExportError:
            raise
        except Exception as error:  # the model's own error, on real tensors
            what = describe_target(node) if node.op != "call_module" else \
                type(self.root.get_submodule(node.target)).__name__
            shapes = ", ".join(
                f"{name}: {list(v.shape)}" if isinstance(v, torch.Tensor)
                else f"{name}: {v!r}" for name, v in self.inputs.items())
            raise ExportError(
                f"running {what}{where(node)} on the example inputs failed: "
                f"{error}. The example inputs were ({shapes}); check their "
                "shapes and dtypes") from error
        finally:
            self._evaluating -= 1
        raise ExportError(f"unexpected fx node kind '{node.op}'")


class TracedModel:
    """The traced graph with each node's example value and whether it
    depends on the inputs or parameters."""

    def __init__(self, root: torch.nn.Module, graph: fx.Graph,
                 values: Dict[fx.Node, Any], inputs: Dict[str, Any]) -> None:
        self.root = root
        self.graph = graph
        self.values = values
        self.inputs = inputs
        self.placeholders = [n for n in graph.nodes
                             if n.op == "placeholder" and n.target in inputs]
        self.dynamic: Set[fx.Node] = set()
        for node in graph.nodes:
            if self._is_dynamic(node):
                self.dynamic.add(node)

    def _is_dynamic(self, node: fx.Node) -> bool:
        if node.op == "placeholder":
            return node.target in self.inputs
        if node.op == "get_attr":
            return isinstance(self.values.get(node), torch.nn.Parameter)
        if node.op == "call_module":
            module = self.root.get_submodule(node.target)
            if any(True for _ in module.parameters()):
                return True
        if node.op == "output":
            return True
        return any(n in self.dynamic for n in node.all_input_nodes)


def trace(module: torch.nn.Module, example_inputs: Sequence[Any],
          scope_root: str = "") -> TracedModel:
    """Traces `module.forward` on `example_inputs` (positional). Scopes are
    module paths relative to the submodule `scope_root` (the model inside a
    loss wrapper)."""
    signature = inspect.signature(module.forward)
    positional = [p for p in signature.parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if any(p.kind == p.VAR_POSITIONAL for p in signature.parameters.values()):
        raise ExportError("forward(*args) is not supported: give forward "
                          "named parameters")
    if len(example_inputs) > len(positional):
        raise ExportError(
            f"{len(example_inputs)} example inputs given, but forward takes "
            f"{len(positional)} ({', '.join(p.name for p in positional)})")
    inputs: Dict[str, Any] = {}
    concrete_args: Dict[str, Any] = {}
    for index, param in enumerate(positional):
        if index < len(example_inputs):
            value = example_inputs[index]
            if not isinstance(value, torch.Tensor):
                raise ExportError(
                    f"example input {index} ('{param.name}') is a "
                    f"{type(value).__name__}, not a torch.Tensor")
            inputs[param.name] = value
        elif param.default is not param.empty:
            concrete_args[param.name] = param.default
        else:
            raise ExportError(f"no example input for argument "
                              f"'{param.name}' of forward")
    tracer = ConcreteTracer(inputs, scope_root)
    try:
        graph = tracer.trace(module, concrete_args=concrete_args or None)
    except ExportError:
        raise
    except fx.proxy.TraceError as error:
        raise ExportError(f"torch.fx could not trace the model: {error}") \
            from error
    values = tracer.values
    _check_no_leftovers(graph, values)
    # Dead nodes (results nobody uses, the shape queries of the trace) are
    # dropped so they do not turn into dead IR.
    for node in reversed(list(graph.nodes)):
        if node.op not in ("placeholder", "output") and not node.users:
            graph.erase_node(node)
    return TracedModel(module, graph, values, inputs)


def _check_no_leftovers(graph: fx.Graph, values: Dict[fx.Node, Any]) -> None:
    for node in graph.nodes:
        if node.op in ("placeholder", "output"):
            continue
        if node not in values:
            raise ExportError(f"internal: node '{node.name}' has no value")
