"""Numerical checks of exported IR: run `@forward` on the CPU.

`run_forward(mlir_text, inputs)` appends a `@main` that calls `@forward` on
the inputs (as constants) and prints every result element's bit pattern
(`arith.bitcast` to an integer, `vector.print`), so the values come back
exactly, not rounded to printf's digits. The module is lowered by pipe-opt
with the upstream pipeline (the one test/unit/Autodiff/GradCheck.cpp uses,
in f32) and run by LLVM's mlir-runner.
"""

import re
from typing import List, Sequence, Tuple

import numpy as np

from . import tools

LOWERING = [
    "--one-shot-bufferize=bufferize-function-boundaries "
    "function-boundary-type-conversion=identity-layout-map",
    "--convert-linalg-to-loops", "--lower-affine", "--convert-scf-to-cf",
    "--expand-strided-metadata", "--lower-affine",
    "--finalize-memref-to-llvm", "--convert-math-to-llvm",
    "--convert-math-to-libm", "--convert-to-llvm",
    "--reconcile-unrealized-casts",
]

_NUMPY = {"f64": np.float64, "f32": np.float32, "f16": np.float16,
          "i64": np.int64, "i32": np.int32, "i16": np.int16, "i8": np.int8,
          "i1": np.bool_}
# How each element type is printed: as the integer type of its bits.
_PRINTED = {"f64": ("i64", np.int64), "f32": ("i32", np.int32),
            "f16": ("i16", np.int16), "i64": ("i64", np.int64),
            "i32": ("i32", np.int32), "i16": ("i16", np.int16),
            "i8": ("i8", np.int8), "i1": ("i1", np.int64)}

_TYPE = re.compile(r"tensor<((?:\d+x)*)([a-z]+\d+)>")


def parse_type(text: str) -> Tuple[Tuple[int, ...], str]:
    match = _TYPE.fullmatch(text.strip())
    if not match:
        raise ValueError(f"not a static tensor type: {text}")
    dims = tuple(int(d) for d in match.group(1).split("x") if d)
    return dims, match.group(2)


def forward_signature(text: str, name: str = "forward"
                      ) -> Tuple[List[str], List[str]]:
    match = re.search(r"func\.func (?:public |private )?@" + re.escape(name)
                      + r"\(([^)]*)\)\s*->\s*(\([^)]*\)|tensor<[^>]*>)",
                      text)
    if not match:
        raise ValueError(f"no func.func @{name} with tensor results found")
    args = [a.split(":", 1)[1].strip().split(" {")[0]
            for a in match.group(1).split("%")[1:]]
    args = [a.rstrip(", ") for a in args]
    results = match.group(2).strip("()")
    return args, [r.strip() for r in results.split(",") if r.strip()]


def _literal(array: np.ndarray, type_text: str) -> str:
    shape, element = parse_type(type_text)
    data = np.ascontiguousarray(array.astype(_NUMPY[element]))
    if tuple(data.shape) != shape:
        raise ValueError(f"input of shape {list(data.shape)} given for "
                         f"{type_text}")
    if element == "i1":
        def nested(a):
            if a.ndim == 0:
                return "true" if bool(a) else "false"
            return "[" + ", ".join(nested(x) for x in a) + "]"
        return f"dense<{nested(data)}>"
    return f'dense<"0x{data.tobytes().hex().upper()}">'


def make_main(text: str, inputs: Sequence, name: str = "forward") -> str:
    """The @main function: inputs as constants, call, print bit patterns."""
    arg_types, result_types = forward_signature(text, name)
    if len(inputs) != len(arg_types):
        raise ValueError(f"@{name} takes {len(arg_types)} inputs, "
                         f"{len(inputs)} given")
    lines = ["  func.func @main() {"]
    names = []
    for index, (value, type_text) in enumerate(zip(inputs, arg_types)):
        array = value.detach().cpu().numpy() if hasattr(value, "detach") \
            else np.asarray(value)
        lines.append(f"    %in{index} = arith.constant "
                     f"{_literal(array, type_text)} : {type_text}")
        names.append(f"%in{index}")
    results = [f"%r{i}" for i in range(len(result_types))]
    head = results[0] if len(results) == 1 else f"%r:{len(results)}"
    lines.append(f"    {head} = func.call @{name}({', '.join(names)}) : "
                 f"({', '.join(arg_types)}) -> ({', '.join(result_types)})")
    if len(results) > 1:
        results = [f"%r#{i}" for i in range(len(results))]
    lines.append("    %c0 = arith.constant 0 : index")
    lines.append("    %c1 = arith.constant 1 : index")
    for index, (value, type_text) in enumerate(zip(results, result_types)):
        shape, element = parse_type(type_text)
        printed, _ = _PRINTED[element]
        count = int(np.prod(shape)) if shape else 1
        flat = value
        if len(shape) > 1:
            group = ", ".join(str(i) for i in range(len(shape)))
            flat = f"%flat{index}"
            lines.append(f"    {flat} = tensor.collapse_shape {value} "
                         f"[[{group}]] : {type_text} into "
                         f"tensor<{count}x{element}>")
        if shape:
            lines.append(f"    %n{index} = arith.constant {count} : index")
            lines.append(f"    scf.for %i{index} = %c0 to %n{index} step %c1"
                         " {")
            element_text = f"tensor.extract {flat}[%i{index}] : " \
                f"tensor<{count}x{element}>"
            indent = "      "
        else:
            element_text = f"tensor.extract {value}[] : {type_text}"
            indent = "    "
        lines.append(f"{indent}%e{index} = {element_text}")
        shown = f"%e{index}"
        if printed != element:
            lines.append(f"{indent}%b{index} = arith.bitcast %e{index} : "
                         f"{element} to {printed}")
            shown = f"%b{index}"
        lines.append(f"{indent}vector.print {shown} : {printed}")
        if shape:
            lines.append("    }")
    lines.append("    return")
    lines.append("  }")
    return "\n".join(lines)


def with_main(text: str, inputs: Sequence, name: str = "forward") -> str:
    main = make_main(text, inputs, name)
    trailer = text.find("\n{-#")
    body, rest = (text, "") if trailer < 0 else (text[:trailer],
                                                  text[trailer:])
    stripped = body.lstrip()
    if stripped.startswith("module"):
        close = body.rfind("}")
        return body[:close] + main + "\n" + body[close:] + rest
    return body + "\n" + main + "\n" + rest


def run_forward(mlir_text: str, inputs: Sequence, name: str = "forward",
                timeout: float = 300):
    """Runs `@name` of `mlir_text` (linalg-on-tensors, weights inline) on
    `inputs` (torch tensors or numpy arrays). Returns a numpy array, or a
    tuple of them for several results."""
    arg_types, result_types = forward_signature(mlir_text, name)
    module = with_main(mlir_text, inputs, name)
    lowered = tools.pipe_opt(module, *LOWERING)
    runner = tools.find_llvm_tool("mlir-runner")
    output = tools.run_tool(
        runner, ["-e", "main", "--entry-point-result=void",
                 "--shared-libs=" + ",".join(tools.runner_libs()), "-"],
        lowered, timeout)
    numbers = [int(line) for line in output.split()]
    arrays = []
    cursor = 0
    for type_text in result_types:
        shape, element = parse_type(type_text)
        count = int(np.prod(shape)) if shape else 1
        chunk = numbers[cursor:cursor + count]
        cursor += count
        if len(chunk) != count:
            raise RuntimeError(f"mlir-runner printed {len(numbers)} values, "
                               f"expected more for {type_text}")
        _, int_type = _PRINTED[element]
        bits = np.array(chunk, dtype=np.int64).astype(int_type)
        values = bits if element in ("i64", "i32", "i16", "i8") else \
            bits.astype(bool) if element == "i1" else \
            bits.view(_NUMPY[element])
        arrays.append(values.reshape(shape))
    if cursor != len(numbers):
        raise RuntimeError(f"mlir-runner printed {len(numbers)} values, "
                           f"expected {cursor}")
    return arrays[0] if len(arrays) == 1 else tuple(arrays)


def relative_error(actual, expected) -> float:
    """||actual - expected|| / max(||expected||, tiny), in float64."""
    a = np.asarray(actual, dtype=np.float64)
    e = np.asarray(expected, dtype=np.float64)
    return float(np.linalg.norm(a - e) / max(np.linalg.norm(e), 1e-30))
