"""The op lowering table: fx targets -> linalg-on-tensors.

Three registries, filled with decorators:

- `FUNCTIONS`: call_function targets (`torch.matmul`, `operator.add`,
  `torch.nn.functional.gelu`, ...),
- `METHODS`: call_method names (`"view"`, `"masked_fill"`, ...),
- `MODULES`: call_module leaf types (`torch.nn.Linear`, ...).

A lowering is `fn(ctx, node, *args, **kwargs)` with the node's arguments
resolved: an fx node that depends on the inputs or parameters becomes a
`Value` (or a tuple of them), a folded one its concrete value (a tensor, a
number). It returns a `Value`, a tuple of them, or a Python value. Shapes
and dtypes of results come from the example run (`ctx.out_type(node)`), so
view/reshape/flatten/unsqueeze and friends need no shape arithmetic here.

Composite ops (softmax, layer norm, linear, cross-entropy) are functions of
`Value`s shared by the functional and the module forms.
"""

import math
import operator
from typing import Any, Callable, Dict, List, Optional, Sequence

import torch
import torch.nn.functional as F

from .errors import ExportError, UnsupportedError, describe_target, where
from .ir import Body, TensorType, Value, affine_map, is_float
from .linalg import LinalgEmitter, Scalar, broadcast_shapes

FUNCTIONS: Dict[Any, Callable] = {}
METHODS: Dict[str, Callable] = {}
MODULES: Dict[type, Callable] = {}

DTYPES = {
    torch.float32: "f32", torch.float64: "f64", torch.float16: "f16",
    torch.int64: "i64", torch.int32: "i32", torch.int16: "i16",
    torch.int8: "i8", torch.bool: "i1",
}


def element_of(dtype: torch.dtype) -> str:
    if dtype not in DTYPES:
        raise UnsupportedError(f"unsupported dtype {dtype}")
    return DTYPES[dtype]


def tensor_type(tensor: torch.Tensor) -> TensorType:
    return TensorType(tuple(int(s) for s in tensor.shape),
                      element_of(tensor.dtype))


def lowers(*targets):
    """Registers a lowering for functions (callables) and Tensor methods
    (strings)."""
    def register(fn):
        for target in targets:
            if isinstance(target, str):
                METHODS[target] = fn
            else:
                FUNCTIONS[target] = fn
        return fn
    return register


def lowers_module(*types):
    def register(fn):
        for type_ in types:
            MODULES[type_] = fn
        return fn
    return register


# ---------------------------------------------------------------------------
# Context


class LoweringContext:
    """What a lowering needs: the emitter, the example values, weights and
    literal constants."""

    def __init__(self, traced, emitter: LinalgEmitter, weights) -> None:
        self.traced = traced
        self.emit = emitter
        self.weights = weights
        self._literals: Dict[int, Value] = {}
        self._keep_alive: List[Any] = []

    # -- example values ---------------------------------------------------

    def example(self, node):
        return self.traced.values[node]

    def out_type(self, node) -> TensorType:
        value = self.example(node)
        if not isinstance(value, torch.Tensor):
            raise ExportError(f"expected a tensor result{where(node)}, got "
                              f"{type(value).__name__}")
        return tensor_type(value)

    def module(self, node) -> torch.nn.Module:
        return self.traced.root.get_submodule(node.target)

    # -- operands ---------------------------------------------------------

    def tensor(self, arg, hint: str = "cst") -> Value:
        """A tensor operand as an IR value: weights become dense_resource
        constants, folded tensors literals."""
        if isinstance(arg, Value):
            return arg
        if isinstance(arg, torch.nn.Parameter):
            return self.weights.get(arg)
        if isinstance(arg, torch.Tensor):
            return self.literal(arg, hint)
        raise ExportError(f"expected a tensor, got {type(arg).__name__}")

    def operand(self, arg, element: str):
        """An elementwise operand: a Value, or a Scalar for Python numbers
        and one-element folded tensors."""
        if isinstance(arg, Value):
            return arg
        if isinstance(arg, torch.nn.Parameter):
            return self.weights.get(arg)
        if isinstance(arg, torch.Tensor):
            if arg.dim() == 0:
                return Scalar(arg.item(), element)
            return self.literal(arg)
        if isinstance(arg, (bool, int, float)):
            return Scalar(arg, element)
        raise ExportError(f"unsupported operand {arg!r}")

    def literal(self, tensor: torch.Tensor, hint: str = "cst") -> Value:
        """A folded tensor (a buffer, a mask) as a constant. Float tensors
        that are not splats are stored as their bit patterns in an integer
        constant plus a bitcast, so that --pipe-lift-params does not take
        them for trainable weights; integer and bool tensors are plain
        dense literals."""
        key = id(tensor)
        if key in self._literals:
            return self._literals[key]
        self._keep_alive.append(tensor)
        type_ = tensor_type(tensor)
        flat = tensor.detach().reshape(-1)
        emit = self.emit
        if flat.numel() > 0 and bool((flat == flat[0]).all()):
            value = flat[0].item()
            from .ir import format_scalar
            attr = f"dense<{format_scalar(value, type_.element)}>"
            result = emit.constant(attr, type_, hint)
        elif is_float(type_.element):
            bits = {"f32": ("i32", torch.int32), "f64": ("i64", torch.int64),
                    "f16": ("i16", torch.int16)}[type_.element]
            raw = flat.contiguous().view(bits[1]).numpy().tobytes()
            int_type = type_.with_element(bits[0])
            stored = emit.constant(f'dense<"0x{raw.hex().upper()}">',
                                   int_type, hint + "_bits")
            saved_scope, emit.scope = emit.scope, None
            result = emit.elementwise(
                type_, [stored],
                lambda b, x: b.raw(lambda r: f"{r} = arith.bitcast {x} : "
                                   f"{bits[0]} to {type_.element}"),
                compute=[bits[0]], result=type_.element, hint=hint)
            emit.scope = saved_scope
        elif type_.element == "i1":
            result = emit.constant(f"dense<{_nested_bools(tensor)}>", type_,
                                   hint)
        else:
            raw = flat.contiguous().numpy().tobytes()
            result = emit.constant(f'dense<"0x{raw.hex().upper()}">', type_,
                                   hint)
        self._literals[key] = result
        return result


def _nested_bools(tensor: torch.Tensor) -> str:
    if tensor.dim() == 0:
        return "true" if bool(tensor) else "false"
    return "[" + ", ".join(_nested_bools(t) for t in tensor) + "]"


def unsupported(node, what: str, hint: str = "") -> UnsupportedError:
    """'unsupported <what> in <target> at node 'n' (in module 'm')'."""
    target = describe_target(node) if node.op != "call_module" else \
        f"module '{node.target}'"
    message = f"unsupported {what} in {target}{where(node)}"
    if hint:
        message += f": {hint}"
    return UnsupportedError(message)


def _dim(dim: int, rank: int) -> int:
    return dim % rank if rank else 0


# ---------------------------------------------------------------------------
# Elementwise


def _binary(ctx, node, a, b, float_op: str, int_op: Optional[str]) -> Value:
    out = ctx.out_type(node)
    element = out.element
    if not is_float(element) and int_op is None:
        raise unsupported(node, f"integer operands ({element})")
    op = float_op if is_float(element) else int_op
    operands = [ctx.operand(a, element), ctx.operand(b, element)]
    return ctx.emit.elementwise(
        out, operands, lambda body, x, y: body.op(op, [x, y], element))


def _binary_scaled(ctx, node, b, alpha):
    """b * alpha for torch.add/sub's alpha (Python numbers only)."""
    if isinstance(b, (int, float)):
        return b * alpha
    raise unsupported(node, "alpha != 1")


@lowers(operator.add, torch.add, "add", operator.iadd)
def _add(ctx, node, a, b, alpha=1):
    if alpha != 1:
        b = _binary_scaled(ctx, node, b, alpha)
    return _binary(ctx, node, a, b, "arith.addf", "arith.addi")


@lowers(operator.sub, torch.sub, "sub", operator.isub)
def _sub(ctx, node, a, b, alpha=1):
    if alpha != 1:
        b = _binary_scaled(ctx, node, b, alpha)
    return _binary(ctx, node, a, b, "arith.subf", "arith.subi")


@lowers(operator.mul, torch.mul, "mul", operator.imul)
def _mul(ctx, node, a, b):
    return _binary(ctx, node, a, b, "arith.mulf", "arith.muli")


@lowers(operator.truediv, torch.div, "div", torch.true_divide,
        operator.itruediv)
def _div(ctx, node, a, b, rounding_mode=None):
    if rounding_mode is not None:
        raise unsupported(node, f"rounding_mode='{rounding_mode}'")
    return _binary(ctx, node, a, b, "arith.divf", None)


@lowers(torch.maximum, "maximum")
def _maximum(ctx, node, a, b):
    return _binary(ctx, node, a, b, "arith.maximumf", "arith.maxsi")


@lowers(torch.minimum, "minimum")
def _minimum(ctx, node, a, b):
    return _binary(ctx, node, a, b, "arith.minimumf", "arith.minsi")


@lowers(operator.neg, torch.neg, "neg")
def _neg(ctx, node, x):
    out = ctx.out_type(node)
    if not is_float(out.element):
        raise unsupported(node, "integer negation")
    return ctx.emit.elementwise(
        out, [ctx.tensor(x)], lambda b, v: b.op("arith.negf", [v],
                                                out.element))


@lowers(operator.pow, torch.pow, "pow")
def _pow(ctx, node, x, exponent):
    out = ctx.out_type(node)
    e = out.element
    if not is_float(e):
        raise unsupported(node, "integer pow")
    if isinstance(exponent, (int, float)):
        if exponent == 2:
            return ctx.emit.elementwise(
                out, [ctx.operand(x, e)], lambda b, v: b.op("arith.mulf",
                                                            [v, v], e))
        if exponent == 0.5:
            return ctx.emit.elementwise(
                out, [ctx.operand(x, e)], lambda b, v: b.op("math.sqrt", [v],
                                                            e))
        if exponent == 1:
            return ctx.tensor(x)
    operands = [ctx.operand(x, e), ctx.operand(exponent, e)]
    return ctx.emit.elementwise(
        out, operands, lambda b, v, p: b.op("math.powf", [v, p], e))


def _unary(op: str):
    def lower(ctx, node, x, *rest, **kwargs):
        if rest or kwargs.get("out") is not None:
            raise unsupported(node, "extra arguments")
        out = ctx.out_type(node)
        return ctx.emit.elementwise(
            out, [ctx.tensor(x)], lambda b, v: b.op(op, [v], out.element),
            hint=op.split(".")[-1])
    return lower


for _op, _targets in {
        "math.exp": (torch.exp, "exp"),
        "math.log": (torch.log, "log"),
        "math.tanh": (torch.tanh, "tanh", F.tanh),
        "math.sqrt": (torch.sqrt, "sqrt"),
        "math.rsqrt": (torch.rsqrt, "rsqrt"),
        "math.erf": (torch.erf, "erf", torch.special.erf),
        "math.sin": (torch.sin, "sin"),
        "math.cos": (torch.cos, "cos"),
        "math.absf": (torch.abs, "abs", operator.abs),
        "math.log1p": (torch.log1p, "log1p"),
}.items():
    lowers(*_targets)(_unary(_op))


def _sigmoid_body(b: Body, v: str, e: str) -> str:
    one = b.const(1.0, e)
    neg = b.op("arith.negf", [v], e)
    return b.op("arith.divf", [one, b.op("arith.addf",
                                         [one, b.op("math.exp", [neg], e)],
                                         e)], e)


def sigmoid_value(ctx, x: Value) -> Value:
    e = x.type.element
    return ctx.emit.elementwise(x.type, [x], lambda b, v: _sigmoid_body(b, v,
                                                                        e),
                                hint="sigmoid")


def relu_value(ctx, x: Value) -> Value:
    e = x.type.element
    return ctx.emit.elementwise(
        x.type, [x], lambda b, v: b.op("arith.maximumf",
                                       [v, b.const(0.0, e)], e), hint="relu")


def gelu_value(ctx, x: Value, approximate: str = "none") -> Value:
    e = x.type.element

    def erf_form(b: Body, v: str) -> str:
        scaled = b.op("arith.mulf", [v, b.const(1.0 / math.sqrt(2.0), e)], e)
        erf = b.op("math.erf", [scaled], e)
        half_x = b.op("arith.mulf", [v, b.const(0.5, e)], e)
        return b.op("arith.mulf", [half_x, b.op("arith.addf",
                                                [erf, b.const(1.0, e)], e)],
                    e)

    def tanh_form(b: Body, v: str) -> str:
        cube = b.op("arith.mulf", [b.op("arith.mulf", [v, v], e), v], e)
        inner = b.op("arith.addf", [v, b.op("arith.mulf",
                                            [cube, b.const(0.044715, e)],
                                            e)], e)
        scaled = b.op("arith.mulf",
                      [inner, b.const(math.sqrt(2.0 / math.pi), e)], e)
        tanh = b.op("math.tanh", [scaled], e)
        half_x = b.op("arith.mulf", [v, b.const(0.5, e)], e)
        return b.op("arith.mulf", [half_x, b.op("arith.addf",
                                                [tanh, b.const(1.0, e)], e)],
                    e)

    if approximate not in ("none", "tanh"):
        raise ExportError(f"unknown GELU approximation '{approximate}'")
    return ctx.emit.elementwise(
        x.type, [x], erf_form if approximate == "none" else tanh_form,
        hint="gelu")


@lowers(torch.sigmoid, "sigmoid", F.sigmoid)
def _sigmoid(ctx, node, x):
    return sigmoid_value(ctx, ctx.tensor(x))


@lowers(torch.relu, F.relu, "relu")
def _relu(ctx, node, x, inplace=False):
    return relu_value(ctx, ctx.tensor(x))


@lowers(F.gelu)
def _gelu(ctx, node, x, approximate="none"):
    return gelu_value(ctx, ctx.tensor(x), approximate)


@lowers(F.silu)
def _silu(ctx, node, x, inplace=False):
    x = ctx.tensor(x)
    e = x.type.element
    return ctx.emit.elementwise(
        x.type, [x], lambda b, v: b.op("arith.mulf",
                                       [v, _sigmoid_body(b, v, e)], e),
        hint="silu")


_COMPARE = {
    operator.eq: ("oeq", "eq"), torch.eq: ("oeq", "eq"), "eq": ("oeq", "eq"),
    operator.ne: ("une", "ne"), torch.ne: ("une", "ne"), "ne": ("une", "ne"),
    operator.lt: ("olt", "slt"), torch.lt: ("olt", "slt"),
    "lt": ("olt", "slt"),
    operator.le: ("ole", "sle"), torch.le: ("ole", "sle"),
    "le": ("ole", "sle"),
    operator.gt: ("ogt", "sgt"), torch.gt: ("ogt", "sgt"),
    "gt": ("ogt", "sgt"),
    operator.ge: ("oge", "sge"), torch.ge: ("oge", "sge"),
    "ge": ("oge", "sge"),
}


def _compare(ctx, node, a, b):
    key = node.target
    float_pred, int_pred = _COMPARE[key]
    example_a = ctx.example(node.args[0]) if hasattr(node.args[0], "op") \
        else node.args[0]
    example_b = ctx.example(node.args[1]) if hasattr(node.args[1], "op") \
        else node.args[1]
    compute = element_of(torch.result_type(example_a, example_b))
    out = ctx.out_type(node)
    operands = [ctx.operand(a, compute), ctx.operand(b, compute)]
    if is_float(compute):
        fn = (lambda body, x, y: body.raw(
            lambda r: f"{r} = arith.cmpf {float_pred}, {x}, {y} : {compute}"))
    else:
        pred = int_pred if compute != "i1" else int_pred.replace("s", "u")
        fn = (lambda body, x, y: body.raw(
            lambda r: f"{r} = arith.cmpi {pred}, {x}, {y} : {compute}"))
    return ctx.emit.elementwise(out, operands, fn, compute=compute,
                                result="i1", hint="cmp")


lowers(*_COMPARE.keys())(_compare)


def _select(ctx, out: TensorType, cond, a, b) -> Value:
    e = out.element
    operands = [ctx.operand(cond, "i1"), ctx.operand(a, e),
                ctx.operand(b, e)]
    return ctx.emit.elementwise(
        out, operands, lambda body, c, x, y: body.select(c, x, y, e),
        compute=["i1", e, e], hint="select")


@lowers("masked_fill", torch.masked_fill)
def _masked_fill(ctx, node, x, mask, value):
    return _select(ctx, ctx.out_type(node), mask, value, x)


@lowers(torch.where)
def _where(ctx, node, cond, a=None, b=None):
    if a is None or b is None:
        raise unsupported(node, "torch.where(cond) without values")
    return _select(ctx, ctx.out_type(node), cond, a, b)


@lowers("float", "double", "long", "int", "bool", "half", "to", "type_as",
        "type")
def _convert(ctx, node, x, *args, **kwargs):
    out = ctx.out_type(node)
    value = ctx.tensor(x)
    if value.type.shape != out.shape:
        raise ExportError(
            f"internal: conversion changed the shape{where(node)}")
    return ctx.emit.cast(value, out.element)


@lowers("contiguous", "clone", torch.clone, "detach", torch.detach)
def _identity(ctx, node, x, *args, **kwargs):
    return ctx.tensor(x)


# ---------------------------------------------------------------------------
# Shapes


@lowers("view", "reshape", torch.reshape, "flatten", torch.flatten,
        "unsqueeze", torch.unsqueeze, "squeeze", torch.squeeze, "view_as",
        "reshape_as")
def _reshape(ctx, node, x, *args, **kwargs):
    return ctx.emit.reshape(ctx.tensor(x), ctx.out_type(node).shape)


@lowers("expand", "expand_as", torch.broadcast_to, "broadcast_to")
def _expand(ctx, node, x, *args, **kwargs):
    return ctx.emit.broadcast_to(ctx.tensor(x), ctx.out_type(node).shape)


@lowers("permute", torch.permute)
def _permute(ctx, node, x, *dims, **kwargs):
    if "dims" in kwargs:
        dims = kwargs["dims"]
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = dims[0]
    return ctx.emit.transpose(ctx.tensor(x), list(dims))


@lowers("transpose", torch.transpose, torch.swapaxes, "swapaxes")
def _transpose(ctx, node, x, dim0, dim1):
    value = ctx.tensor(x)
    rank = value.type.rank
    perm = list(range(rank))
    d0, d1 = _dim(dim0, rank), _dim(dim1, rank)
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return ctx.emit.transpose(value, perm)


@lowers("t", torch.t)
def _t(ctx, node, x):
    value = ctx.tensor(x)
    return ctx.emit.transpose(value, [1, 0]) if value.type.rank == 2 \
        else value


@lowers(getattr)
def _getattr(ctx, node, x, name):
    if name in ("T", "mT") and isinstance(x, Value):
        rank = x.type.rank
        perm = list(range(rank))[::-1] if name == "T" else \
            list(range(rank - 2)) + [rank - 1, rank - 2]
        return ctx.emit.transpose(x, perm)
    raise unsupported(node, f"attribute '{name}'")


@lowers(operator.getitem)
def _getitem(ctx, node, x, index):
    if isinstance(x, (tuple, list)):
        return x[index]
    value = ctx.tensor(x)
    if not isinstance(index, tuple):
        index = (index,)
    if any(isinstance(i, (Value, torch.Tensor, list)) for i in index):
        raise unsupported(node, "advanced (tensor) indexing",
                          "use slices and integers, or index_select via an "
                          "embedding")
    shape = value.type.shape
    consumed = sum(1 for i in index if i is not None and i is not Ellipsis)
    expanded: List[Any] = []
    for item in index:
        if item is Ellipsis:
            expanded += [slice(None)] * (len(shape) - consumed)
        else:
            expanded.append(item)
    expanded += [slice(None)] * (len(shape) - sum(
        1 for i in expanded if i is not None))
    offsets, sizes, strides = [], [], []
    dim = 0
    for item in expanded:
        if item is None:
            continue
        if isinstance(item, int):
            offsets.append(item % shape[dim])
            sizes.append(1)
            strides.append(1)
        elif isinstance(item, slice):
            start, stop, step = item.indices(shape[dim])
            count = len(range(start, stop, step))
            if count == 0 or step < 0:
                raise unsupported(node, "empty or reversed slice")
            offsets.append(start)
            sizes.append(count)
            strides.append(step)
        else:
            raise unsupported(node, f"index {item!r}")
        dim += 1
    sliced = ctx.emit.extract_slice(value, offsets, sizes, strides)
    return ctx.emit.reshape(sliced, ctx.out_type(node).shape)


def _split_outputs(ctx, node, x, dim) -> tuple:
    value = ctx.tensor(x)
    rank = value.type.rank
    d = _dim(dim, rank)
    outputs = ctx.example(node)
    pieces, offset = [], 0
    for piece in outputs:
        sizes = list(value.type.shape)
        size = int(piece.shape[d]) if piece.dim() == rank else 1
        sizes[d] = size
        offsets = [0] * rank
        offsets[d] = offset
        sliced = ctx.emit.extract_slice(value, offsets, sizes, [1] * rank)
        pieces.append(ctx.emit.reshape(sliced, tuple(piece.shape)))
        offset += size
    return tuple(pieces)


@lowers("split", torch.split)
def _split(ctx, node, x, split_size_or_sections, dim=0):
    return _split_outputs(ctx, node, x, dim)


@lowers("chunk", torch.chunk)
def _chunk(ctx, node, x, chunks, dim=0):
    return _split_outputs(ctx, node, x, dim)


@lowers("unbind", torch.unbind)
def _unbind(ctx, node, x, dim=0):
    return _split_outputs(ctx, node, x, dim)


@lowers(torch.cat, torch.concat)
def _cat(ctx, node, tensors, dim=0):
    out = ctx.out_type(node)
    d = _dim(dim, out.rank)
    dest = ctx.emit.empty(out)
    offset = 0
    for item in tensors:
        value = ctx.emit.cast(ctx.tensor(item), out.element)
        offsets = [0] * out.rank
        offsets[d] = offset
        dest = ctx.emit.insert_slice(value, dest, offsets)
        offset += value.type.shape[d]
    return dest


# ---------------------------------------------------------------------------
# Reductions and normalizations


def _dims_arg(dim, rank) -> List[int]:
    if dim is None:
        return list(range(rank))
    if isinstance(dim, int):
        dim = [dim]
    return [_dim(d, rank) for d in dim]


@lowers(torch.sum, "sum", torch.mean, "mean")
def _sum_mean(ctx, node, x, dim=None, keepdim=False, dtype=None):
    value = ctx.tensor(x)
    out = ctx.out_type(node)
    dims = _dims_arg(dim, value.type.rank)
    total = ctx.emit.reduce([value], dims, keepdim, "sum", out.element)
    if node.target not in (torch.mean, "mean"):
        return total
    count = 1
    for d in dims:
        count *= value.type.shape[d]
    e = out.element
    return ctx.emit.elementwise(
        total.type, [total], lambda b, v: b.op("arith.divf",
                                               [v, b.const(float(count), e)],
                                               e), hint="mean")


@lowers(torch.amax, "amax", torch.amin, "amin")
def _amax(ctx, node, x, dim=(), keepdim=False):
    value = ctx.tensor(x)
    kind = "max" if node.target in (torch.amax, "amax") else "min"
    dims = _dims_arg(dim if dim != () else None, value.type.rank)
    return ctx.emit.reduce([value], dims, keepdim, kind,
                           ctx.out_type(node).element)


def softmax_value(ctx, x: Value, dim: int, log: bool = False) -> Value:
    emit, e = ctx.emit, x.type.element
    d = _dim(dim, x.type.rank)
    peak = emit.reduce([x], [d], True, "max", e, hint="max")
    if not log:
        exps = emit.elementwise(
            x.type, [x, peak],
            lambda b, v, m: b.op("math.exp",
                                 [b.op("arith.subf", [v, m], e)], e),
            hint="exp")
        total = emit.reduce([exps], [d], True, "sum", e, hint="sum")
        return emit.elementwise(
            x.type, [exps, total],
            lambda b, v, s: b.op("arith.divf", [v, s], e), hint="softmax")
    total = emit.reduce(
        [x, peak], [d], True, "sum", e,
        pre=lambda b, v, m: b.op("math.exp", [b.op("arith.subf", [v, m], e)],
                                 e), hint="sumexp")
    return emit.elementwise(
        x.type, [x, peak, total],
        lambda b, v, m, s: b.op("arith.subf", [b.op("arith.subf", [v, m], e),
                                               b.op("math.log", [s], e)], e),
        hint="log_softmax")


def _softmax_dim(node, dim):
    if dim is None:
        raise unsupported(node, "softmax without dim")
    return dim


@lowers(F.softmax, torch.softmax, "softmax")
def _softmax(ctx, node, x, dim=None, _stacklevel=3, dtype=None):
    value = ctx.emit.cast(ctx.tensor(x), ctx.out_type(node).element)
    return softmax_value(ctx, value, _softmax_dim(node, dim))


@lowers(F.log_softmax, torch.log_softmax, "log_softmax")
def _log_softmax(ctx, node, x, dim=None, _stacklevel=3, dtype=None):
    value = ctx.emit.cast(ctx.tensor(x), ctx.out_type(node).element)
    return softmax_value(ctx, value, _softmax_dim(node, dim), log=True)


def layer_norm_value(ctx, x: Value, normalized_shape: Sequence[int],
                     weight: Optional[Value], bias: Optional[Value],
                     eps: float) -> Value:
    emit, e = ctx.emit, x.type.element
    k = len(normalized_shape)
    rank = x.type.rank
    dims = list(range(rank - k, rank))
    count = float(math.prod(normalized_shape))
    total = emit.reduce([x], dims, True, "sum", e, hint="sum")
    centered = emit.elementwise(
        x.type, [x, total],
        lambda b, v, s: b.op("arith.subf",
                             [v, b.op("arith.divf", [s, b.const(count, e)],
                                      e)], e), hint="centered")
    squares = emit.reduce(
        [centered], dims, True, "sum", e,
        pre=lambda b, c: b.op("arith.mulf", [c, c], e), hint="sumsq")
    operands = [centered, squares] + [v for v in (weight, bias)
                                      if v is not None]

    def body(b: Body, c: str, sq: str, *affine: str) -> str:
        var = b.op("arith.divf", [sq, b.const(count, e)], e)
        rstd = b.op("math.rsqrt", [b.op("arith.addf", [var, b.const(eps, e)],
                                        e)], e)
        y = b.op("arith.mulf", [c, rstd], e)
        rest = list(affine)
        if weight is not None:
            y = b.op("arith.mulf", [y, rest.pop(0)], e)
        if bias is not None:
            y = b.op("arith.addf", [y, rest.pop(0)], e)
        return y

    return emit.elementwise(x.type, operands, body, hint="layer_norm")


@lowers(F.layer_norm)
def _layer_norm(ctx, node, x, normalized_shape, weight=None, bias=None,
                eps=1e-5):
    return layer_norm_value(
        ctx, ctx.tensor(x), list(normalized_shape),
        None if weight is None else ctx.tensor(weight),
        None if bias is None else ctx.tensor(bias), eps)


# ---------------------------------------------------------------------------
# Contractions


def matmul_value(ctx, node, a: Value, b: Value) -> Value:
    """torch.matmul semantics: 1-D operands get a unit dimension, batch
    dimensions broadcast; 2-D x 2-D is linalg.matmul, N-D x 2-D collapses
    the leading dimensions into the rows, otherwise linalg.batch_matmul on
    the collapsed batch."""
    emit = ctx.emit
    if a.type.element != b.type.element or not is_float(a.type.element):
        raise unsupported(node, f"matmul of {a.type} and {b.type}")
    squeeze_rows = a.type.rank == 1
    squeeze_cols = b.type.rank == 1
    if squeeze_rows:
        a = emit.reshape(a, (1,) + a.type.shape)
    if squeeze_cols:
        b = emit.reshape(b, b.type.shape + (1,))
    m, k = a.type.shape[-2:]
    n = b.type.shape[-1]
    if b.type.rank == 2:
        batch = a.type.shape[:-2]
        rows = emit.reshape(a, (math.prod(batch) * m, k))
        result = emit.matmul(rows, b)
        result = emit.reshape(result, batch + (m, n))
    else:
        batch = broadcast_shapes(a.type.shape[:-2], b.type.shape[:-2])
        a = emit.broadcast_to(a, batch + (m, k))
        b = emit.broadcast_to(b, batch + (k, n))
        flat = math.prod(batch)
        result = emit.batch_matmul(emit.reshape(a, (flat, m, k)),
                                   emit.reshape(b, (flat, k, n)))
        result = emit.reshape(result, batch + (m, n))
    final = list(result.type.shape)
    if squeeze_cols:
        final.pop(-1)
    if squeeze_rows:
        final.pop(-2 if not squeeze_cols else -1)
    return emit.reshape(result, tuple(final))


@lowers(torch.matmul, operator.matmul, "matmul", torch.mm, "mm", torch.bmm,
        "bmm")
def _matmul(ctx, node, a, b):
    return matmul_value(ctx, node, ctx.tensor(a), ctx.tensor(b))


def linear_value(ctx, node, x: Value, weight: Value,
                 bias: Optional[Value]) -> Value:
    """y = x W^T + b: the weight is transposed by a linalg.transpose (so a
    weight tied to an embedding table is still the same constant), the
    leading dimensions of x collapsed into rows of one linalg.matmul and the
    bias added before expanding back."""
    emit = ctx.emit
    out_features, in_features = weight.type.shape
    lead = x.type.shape[:-1]
    rows = emit.reshape(x, (math.prod(lead), in_features))
    product = emit.matmul(rows, emit.transpose(weight, [1, 0]))
    if bias is not None:
        e = product.type.element
        product = emit.elementwise(
            product.type, [product, bias],
            lambda b, v, c: b.op("arith.addf", [v, c], e), hint="biased")
    return emit.reshape(product, lead + (out_features,))


@lowers(F.linear)
def _linear(ctx, node, x, weight, bias=None):
    return linear_value(ctx, node, ctx.tensor(x), ctx.tensor(weight),
                        None if bias is None else ctx.tensor(bias))


@lowers(torch.baddbmm, torch.addmm)
def _addmm(ctx, node, bias, a, b, beta=1, alpha=1):
    if beta != 1 or alpha != 1:
        raise unsupported(node, "beta/alpha != 1")
    product = matmul_value(ctx, node, ctx.tensor(a), ctx.tensor(b))
    e = product.type.element
    return ctx.emit.elementwise(
        product.type, [product, ctx.operand(bias, e)],
        lambda body, v, c: body.op("arith.addf", [v, c], e))


def embedding_value(ctx, ids: Value, weight: Value) -> Value:
    """A gather generic, as torch-mlir emits for aten.embedding: each output
    element extracts weight[ids[...], j]."""
    emit = ctx.emit
    if is_float(ids.type.element):
        raise ExportError(f"embedding indices must be integers, not "
                          f"{ids.type}")
    rank = ids.type.rank
    dim = weight.type.shape[1]
    out_type = TensorType(ids.type.shape + (dim,), weight.type.element)
    init = emit.empty(out_type)
    ids_map = affine_map(rank + 1, list(range(rank)))
    out_map = affine_map(rank + 1, list(range(rank + 1)))

    def body(b: Body) -> List[str]:
        index = b.raw(lambda r: f"{r} = arith.index_cast {b.args[0]} : "
                      f"{ids.type.element} to index", "idx")
        column = b.index(rank)
        value = b.raw(lambda r: f"{r} = tensor.extract {weight}[{index}, "
                      f"{column}] : {weight.type}", "row")
        return [value]

    return emit.generic([(ids, ids_map)], [(init, out_map)],
                        ["parallel"] * (rank + 1), body, hint="embedding")[0]


@lowers(F.embedding)
def _embedding(ctx, node, ids, weight, padding_idx=None, max_norm=None,
               norm_type=2.0, scale_grad_by_freq=False, sparse=False):
    if max_norm is not None:
        raise unsupported(node, "embedding max_norm")
    return embedding_value(ctx, ctx.tensor(ids), ctx.tensor(weight))


# ---------------------------------------------------------------------------
# Dropout and losses


def check_dropout(node, p: float, training: bool,
                  module: Optional[str] = None) -> None:
    """`module`: the path of a dropout inside a composite module (an
    nn.TransformerEncoderLayer's dropout1), which fx does not see."""
    if training and p > 0:
        place = where(node) if module is None else \
            f" in module '{module}' (fx node '{node.name}')"
        raise ExportError(
            f"dropout with p={p} in training mode{place}: the exported "
            "forward is deterministic; call model.eval() before exporting, or "
            "use p=0 (the project's own dropout is counter-based, see "
            "docs/autodiff.md)")


@lowers(F.dropout, torch.dropout)
def _dropout(ctx, node, x, p=0.5, training=True, inplace=False):
    check_dropout(node, p, training)
    return ctx.tensor(x)


def cross_entropy_value(ctx, node, logits: Value, target: Value,
                        ignore_index: int, reduction: str) -> Value:
    """Mean (or sum, or none) negative log-likelihood of integer targets:
    log_softmax over the class dimension (1, or 0 for one sample), the
    target's entry picked by comparing linalg.index with the label (an
    ignored label matches no class), and the mean taken over the targets
    that are not ignore_index, as PyTorch does."""
    emit, e = ctx.emit, logits.type.element
    if is_float(target.type.element):
        raise unsupported(node, "class-probability targets",
                          "give integer class indices")
    rank = logits.type.rank
    class_dim = 1 if rank >= 2 else 0
    log_probs = softmax_value(ctx, logits, class_dim, log=True)
    domain = logits.type.shape
    target_map = affine_map(rank, [i for i in range(rank) if i != class_dim])
    te = target.type.element

    def pick(b: Body, lp: str, label: str) -> str:
        klass = b.index(class_dim)
        label_index = b.raw(lambda r: f"{r} = arith.index_cast {label} : "
                            f"{te} to index", "label")
        hit = b.raw(lambda r: f"{r} = arith.cmpi eq, {klass}, {label_index}"
                    " : index", "hit")
        return b.select(hit, lp, b.const(0.0, e), e)

    picked = emit.reduce([log_probs, (target, target_map)], [class_dim],
                         False, "sum", e, pre=pick, domain=domain,
                         hint="picked")
    if reduction == "none":
        return emit.elementwise(picked.type, [picked],
                                lambda b, v: b.op("arith.negf", [v], e),
                                hint="nll")
    total = emit.reduce([picked], list(range(picked.type.rank)), False,
                        "sum", e, hint="nll_sum")
    if reduction == "sum":
        return emit.elementwise(total.type, [total],
                                lambda b, v: b.op("arith.negf", [v], e),
                                hint="loss")
    if reduction != "mean":
        raise unsupported(node, f"reduction='{reduction}'")

    def valid(b: Body, label: str) -> str:
        ignored = b.const(ignore_index, te)
        keep = b.raw(lambda r: f"{r} = arith.cmpi ne, {label}, {ignored} : "
                     f"{te}", "keep")
        return b.cast(keep, "i1", e)

    count = emit.reduce([target], list(range(target.type.rank)), False,
                        "sum", e, pre=valid, hint="count")
    return emit.elementwise(
        total.type, [total, count],
        lambda b, s, c: b.op("arith.negf", [b.op("arith.divf", [s, c], e)],
                             e), hint="loss")


@lowers(F.cross_entropy)
def _cross_entropy(ctx, node, x, target, weight=None, size_average=None,
                   ignore_index=-100, reduce=None, reduction="mean",
                   label_smoothing=0.0):
    if weight is not None or label_smoothing:
        raise unsupported(node, "class weights or label smoothing")
    if size_average is not None or reduce is not None:
        raise unsupported(node, "deprecated size_average/reduce arguments")
    return cross_entropy_value(ctx, node, ctx.tensor(x), ctx.tensor(target),
                               ignore_index, reduction)


def mse_value(ctx, node, a: Value, b: Value, reduction: str) -> Value:
    emit, e = ctx.emit, a.type.element
    domain = broadcast_shapes(a.type.shape, b.type.shape)
    if reduction == "none":
        return emit.elementwise(
            TensorType(domain, e), [a, b],
            lambda body, x, y: _square_diff(body, x, y, e), hint="sq_err")
    total = emit.reduce([a, b], list(range(len(domain))), False, "sum", e,
                        pre=lambda body, x, y: _square_diff(body, x, y, e),
                        domain=domain, hint="sq_err_sum")
    if reduction == "sum":
        return total
    if reduction != "mean":
        raise unsupported(node, f"reduction='{reduction}'")
    count = float(math.prod(domain))
    return emit.elementwise(
        total.type, [total],
        lambda body, s: body.op("arith.divf", [s, body.const(count, e)], e),
        hint="loss")


def _square_diff(body: Body, x: str, y: str, e: str) -> str:
    diff = body.op("arith.subf", [x, y], e)
    return body.op("arith.mulf", [diff, diff], e)


@lowers(F.mse_loss)
def _mse_loss(ctx, node, x, target, size_average=None, reduce=None,
              reduction="mean"):
    if size_average is not None or reduce is not None:
        raise unsupported(node, "deprecated size_average/reduce arguments")
    e = ctx.out_type(node).element
    return mse_value(ctx, node, ctx.emit.cast(ctx.tensor(x), e),
                     ctx.emit.cast(ctx.tensor(target), e), reduction)


# ---------------------------------------------------------------------------
# Modules (torch.nn leaves)


@lowers_module(torch.nn.Linear)
def _m_linear(ctx, node, m, x):
    return linear_value(ctx, node, ctx.tensor(x), ctx.weights.get(m.weight),
                        None if m.bias is None else ctx.weights.get(m.bias))


@lowers_module(torch.nn.Embedding)
def _m_embedding(ctx, node, m, ids):
    if m.max_norm is not None:
        raise unsupported(node, "Embedding max_norm")
    return embedding_value(ctx, ctx.tensor(ids), ctx.weights.get(m.weight))


@lowers_module(torch.nn.LayerNorm)
def _m_layer_norm(ctx, node, m, x):
    weight = ctx.weights.get(m.weight) if m.weight is not None else None
    bias = ctx.weights.get(m.bias) if m.bias is not None else None
    return layer_norm_value(ctx, ctx.tensor(x), list(m.normalized_shape),
                            weight, bias, m.eps)


@lowers_module(torch.nn.GELU)
def _m_gelu(ctx, node, m, x):
    return gelu_value(ctx, ctx.tensor(x), getattr(m, "approximate", "none"))


@lowers_module(torch.nn.ReLU)
def _m_relu(ctx, node, m, x):
    return relu_value(ctx, ctx.tensor(x))


@lowers_module(torch.nn.Tanh)
def _m_tanh(ctx, node, m, x):
    value = ctx.tensor(x)
    return ctx.emit.elementwise(
        value.type, [value],
        lambda b, v: b.op("math.tanh", [v], value.type.element), hint="tanh")


@lowers_module(torch.nn.Sigmoid)
def _m_sigmoid(ctx, node, m, x):
    return sigmoid_value(ctx, ctx.tensor(x))


@lowers_module(torch.nn.Softmax)
def _m_softmax(ctx, node, m, x):
    return softmax_value(ctx, ctx.tensor(x), _softmax_dim(node, m.dim))


@lowers_module(torch.nn.LogSoftmax)
def _m_log_softmax(ctx, node, m, x):
    return softmax_value(ctx, ctx.tensor(x), _softmax_dim(node, m.dim),
                         log=True)


@lowers_module(torch.nn.Dropout)
def _m_dropout(ctx, node, m, x):
    check_dropout(node, m.p, m.training)
    return ctx.tensor(x)


@lowers_module(torch.nn.Identity)
def _m_identity(ctx, node, m, x, *args, **kwargs):
    return ctx.tensor(x)


@lowers_module(torch.nn.Flatten, torch.nn.Unflatten)
def _m_flatten(ctx, node, m, x):
    return ctx.emit.reshape(ctx.tensor(x), ctx.out_type(node).shape)


@lowers_module(torch.nn.CrossEntropyLoss)
def _m_cross_entropy(ctx, node, m, x, target):
    if m.weight is not None or m.label_smoothing:
        raise unsupported(node, "class weights or label smoothing")
    return cross_entropy_value(ctx, node, ctx.tensor(x), ctx.tensor(target),
                               m.ignore_index, m.reduction)


@lowers_module(torch.nn.MSELoss)
def _m_mse(ctx, node, m, x, target):
    e = ctx.out_type(node).element
    return mse_value(ctx, node, ctx.emit.cast(ctx.tensor(x), e),
                     ctx.emit.cast(ctx.tensor(target), e), m.reduction)


# ---------------------------------------------------------------------------
# Dispatch


def lower_node(ctx: LoweringContext, node, args, kwargs):
    """Finds the lowering for `node` and runs it."""
    if node.op == "call_module":
        module = ctx.module(node)
        fn = None
        for type_ in type(module).__mro__:
            if type_ in MODULES:
                fn = MODULES[type_]
                break
        if fn is None:
            cls = type(module)
            name = f"torch.nn.{cls.__name__}" if getattr(
                torch.nn, cls.__name__, None) is cls else \
                f"{cls.__module__}.{cls.__qualname__}"
            raise UnsupportedError(
                f"unsupported module {name} at '{node.target}' (fx node "
                f"'{node.name}'): the exporter lowers "
                f"{', '.join(sorted(t.__name__ for t in MODULES))} and "
                "traces through user-defined modules")
        return fn(ctx, node, module, *args, **kwargs)
    if node.op == "call_method":
        fn = METHODS.get(node.target)
        if fn is None and node.target.endswith("_") and \
                node.target[:-1] in METHODS:
            raise UnsupportedError(
                f"unsupported in-place method Tensor.{node.target}"
                f"{where(node)}: use the out-of-place form "
                f"(Tensor.{node.target[:-1]})")
    else:
        fn = FUNCTIONS.get(node.target)
    if fn is None:
        raise UnsupportedError(
            f"unsupported {node.op} {describe_target(node)}{where(node)}")
    try:
        return fn(ctx, node, *args, **kwargs)
    except TypeError as error:
        raise UnsupportedError(
            f"unsupported arguments to {describe_target(node)}{where(node)}:"
            f" {error}") from error
