"""Exceptions raised by the exporter."""


class ExportError(Exception):
    """The model cannot be exported as given (bad example inputs, a failed
    trace, data-dependent control flow, ...)."""


class UnsupportedError(ExportError):
    """The model uses a module, function or method the exporter has no
    lowering for. The message names the fx node, its target and the module
    path it came from."""


def where(node) -> str:
    """' at node 'x' (in module 'blocks.0.attn')' for an fx node."""
    scope = node.meta.get("pipe_scope", "") if node is not None else ""
    text = f" at node '{node.name}'" if node is not None else ""
    if scope:
        text += f" (in module '{scope}')"
    return text


def describe_target(node) -> str:
    """A readable name for what an fx node calls: 'torch.cumsum',
    'Tensor.masked_fill', 'operator.add', 'torch.nn.functional.gelu'."""
    if node.op == "call_method":
        return f"Tensor.{node.target}"
    target = node.target
    name = getattr(target, "__name__", None)
    if not callable(target) or name is None:
        return str(target)
    module = getattr(target, "__module__", None) or ""
    if module in ("_operator", "operator"):
        return f"operator.{name}"
    if module.startswith("torch.nn.functional"):
        return f"torch.nn.functional.{name}"
    import torch
    if getattr(torch, name, None) is target:
        return f"torch.{name}"
    return f"{module}.{name}" if module else name
