"""Textual MLIR building blocks: types, SSA value naming, affine maps and a
line-oriented function builder.

The exporter writes MLIR as text (no MLIR Python bindings are needed). This
module knows nothing about PyTorch; `linalg.py` builds tensor-level ops on
top of it and `lowering.py` maps fx nodes to those.
"""

import re
import struct
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

# Element types the exporter emits, by MLIR name: (struct format, bytes).
ELEMENT_TYPES = {
    "f64": ("d", 8),
    "f32": ("f", 4),
    "f16": ("e", 2),
    "i64": ("q", 8),
    "i32": ("i", 4),
    "i16": ("h", 2),
    "i8": ("b", 1),
    "i1": ("?", 1),
}


def is_float(element: str) -> bool:
    return element.startswith("f") or element == "bf16"


def is_int(element: str) -> bool:
    return element.startswith("i")


@dataclass(frozen=True)
class TensorType:
    """A static ranked tensor type."""

    shape: Tuple[int, ...]
    element: str

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        count = 1
        for size in self.shape:
            count *= size
        return count

    def with_shape(self, shape: Sequence[int]) -> "TensorType":
        return TensorType(tuple(int(s) for s in shape), self.element)

    def with_element(self, element: str) -> "TensorType":
        return TensorType(self.shape, element)

    def __str__(self) -> str:
        dims = "".join(f"{size}x" for size in self.shape)
        return f"tensor<{dims}{self.element}>"


@dataclass(frozen=True)
class Value:
    """An SSA value of the function being built: its name (with '%') and
    its tensor type."""

    name: str
    type: TensorType

    def __str__(self) -> str:
        return self.name


class Namer:
    """Unique SSA names for one function (nested regions included: MLIR
    rejects a nested definition that reuses an outer name)."""

    _invalid = re.compile(r"[^A-Za-z0-9_$.]")

    def __init__(self) -> None:
        self._used: Dict[str, int] = {}

    def fresh(self, hint: str = "v") -> str:
        base = self._invalid.sub("_", hint) or "v"
        if base[0].isdigit():
            base = "v" + base
        count = self._used.get(base)
        if count is None:
            self._used[base] = 0
            return "%" + base
        while True:
            count += 1
            candidate = f"{base}_{count}"
            if candidate not in self._used:
                self._used[base] = count
                self._used[candidate] = 0
                return "%" + candidate


def affine_map(num_dims: int, results: Sequence) -> str:
    """affine_map<(d0, d1) -> (d0, 0)>; results are loop indices (int) or
    the string '0' for a constant zero (a broadcast size-1 dimension)."""
    dims = ", ".join(f"d{i}" for i in range(num_dims))
    exprs = ", ".join(r if isinstance(r, str) else f"d{r}" for r in results)
    return f"affine_map<({dims}) -> ({exprs})>"


def identity_map(rank: int) -> str:
    return affine_map(rank, list(range(rank)))


def format_float(value: float, element: str) -> str:
    """An exact MLIR literal for a float scalar of the given type: decimal
    for finite values (Python's repr of the value rounded to the type
    round-trips), hex bits for infinities and NaN."""
    fmt, bits_fmt, digits = {"f32": ("<f", "<I", 8), "f64": ("<d", "<Q", 16),
                             "f16": ("<e", "<H", 4)}[element]
    rounded = struct.unpack(fmt, struct.pack(fmt, value))[0]
    if rounded != rounded or rounded in (float("inf"), float("-inf")):
        bits = struct.unpack(bits_fmt, struct.pack(fmt, value))[0]
        return f"0x{bits:0{digits}X}"
    text = repr(float(rounded))
    if "." not in text:  # MLIR float literals need the dot: 1.0e-05
        mantissa, _, exponent = text.partition("e")
        text = mantissa + ".0" + ("e" + exponent if exponent else "")
    return text


def format_scalar(value, element: str) -> str:
    if is_float(element):
        return format_float(float(value), element)
    if element == "i1":
        return "true" if value else "false"
    return str(int(value))


def loc_suffix(scope: Optional[str]) -> str:
    """The location of an op: a name location carrying the module path,
    which --pipe-form-blocks uses to find layers and --pipe-lift-params to
    name weights."""
    if not scope:
        return ""
    return f' loc("{scope}")'


class FunctionBuilder:
    """Collects the lines of one func.func. Constants go to a prologue at the
    top of the body (torch-mlir puts weights there too); everything else in
    program order."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.namer = Namer()
        self.constants: List[str] = []
        self.lines: List[str] = []
        self.indent = 2

    def emit(self, text: str) -> None:
        self.lines.append("  " * self.indent + text)

    def emit_constant(self, text: str) -> None:
        self.constants.append("    " + text)

    def fresh(self, hint: str = "v") -> str:
        return self.namer.fresh(hint)

    def render(self, args: Sequence[Value], results: Sequence[Value]) -> str:
        arg_text = ", ".join(f"{a.name}: {a.type}" for a in args)
        result_types = [str(r.type) for r in results]
        if len(result_types) == 1:
            result_text = result_types[0]
        else:
            result_text = "(" + ", ".join(result_types) + ")"
        out = [f"  func.func @{self.name}({arg_text}) -> {result_text} {{"]
        out += self.constants
        out += self.lines
        names = ", ".join(r.name for r in results)
        types = ", ".join(str(r.type) for r in results)
        out.append(f"    return {names} : {types}")
        out.append("  }")
        return "\n".join(out)


class Body:
    """Builds the scalar region of a linalg.generic: block arguments, then
    arith/math ops, then linalg.yield."""

    def __init__(self, builder: FunctionBuilder, arg_elements: Sequence[str],
                 hints: Sequence[str]) -> None:
        self.builder = builder
        self.args = [builder.fresh(h) for h in hints]
        self.arg_elements = list(arg_elements)
        self.lines: List[str] = []
        self._constants: Dict[Tuple[str, str], str] = {}

    def op(self, name: str, operands: Sequence[str], element: str,
           attrs: str = "") -> str:
        result = self.builder.fresh("x")
        attr_text = f" {attrs}" if attrs else ""
        self.lines.append(
            f"{result} = {name}{attr_text} {', '.join(operands)} : {element}")
        return result

    def raw(self, text_fn, hint: str = "x") -> str:
        """An op whose text does not fit op(): text_fn(result) -> line."""
        result = self.builder.fresh(hint)
        self.lines.append(text_fn(result))
        return result

    def const(self, value, element: str) -> str:
        key = (format_scalar(value, element), element)
        if key not in self._constants:
            result = self.builder.fresh("c")
            self.lines.append(
                f"{result} = arith.constant {key[0]} : {element}")
            self._constants[key] = result
        return self._constants[key]

    def index(self, dim: int) -> str:
        return self.raw(lambda r: f"{r} = linalg.index {dim} : index", "i")

    def cast(self, value: str, source: str, target: str) -> str:
        """Converts a scalar between element types (torch's promotion)."""
        if source == target:
            return value
        if is_float(source) and is_float(target):
            width = int(source[1:]), int(target[1:])
            name = "arith.extf" if width[0] < width[1] else "arith.truncf"
        elif is_int(source) and is_float(target):
            name = "arith.uitofp" if source == "i1" else "arith.sitofp"
        elif is_float(source) and is_int(target):
            if target == "i1":
                zero = self.const(0.0, source)
                return self.raw(
                    lambda r: f"{r} = arith.cmpf une, {value}, {zero} : "
                    f"{source}", "b")
            name = "arith.fptosi"
        else:
            if target == "i1":
                zero = self.const(0, source)
                return self.raw(
                    lambda r: f"{r} = arith.cmpi ne, {value}, {zero} : "
                    f"{source}", "b")
            width = int(source[1:]), int(target[1:])
            if width[0] < width[1]:
                name = "arith.extui" if source == "i1" else "arith.extsi"
            else:
                name = "arith.trunci"
        return self.raw(
            lambda r: f"{r} = {name} {value} : {source} to {target}", "x")

    def select(self, cond: str, a: str, b: str, element: str) -> str:
        return self.raw(
            lambda r: f"{r} = arith.select {cond}, {a}, {b} : {element}", "x")

    def render(self, yields: Sequence[str], yield_elements: Sequence[str],
               indent: str) -> List[str]:
        header = ", ".join(f"{a}: {e}" for a, e in zip(self.args,
                                                       self.arg_elements))
        out = [f"{indent}^bb0({header}):"]
        out += [f"{indent}  {line}" for line in self.lines]
        out.append(f"{indent}  linalg.yield {', '.join(yields)} : "
                   f"{', '.join(yield_elements)}")
        return out


def pack_values(values: Sequence, element: str) -> bytes:
    fmt, _ = ELEMENT_TYPES[element]
    return struct.pack("<" + fmt * len(values), *values)
