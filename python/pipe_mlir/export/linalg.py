"""Tensor-level ops in torch-mlir's linalg-on-tensors style.

`LinalgEmitter` writes linalg (generic and the named ops the project's
passes know: matmul, batch_matmul, transpose, fill), tensor (empty,
expand_shape, collapse_shape, extract_slice, insert_slice) and arith ops
into a `FunctionBuilder`. Broadcasting follows torch-mlir: a size-1 input
dimension is read through a constant 0 in its indexing map, missing leading
dimensions are dropped from the map. Every op carries the current module
scope as a name location.
"""

from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

from .ir import (Body, FunctionBuilder, TensorType, Value, affine_map,
                 format_scalar, identity_map, is_float, loc_suffix)


class Scalar:
    """A compile-time scalar operand of an elementwise op (a Python number
    or a folded 0-d tensor): materialized as a constant in the op's body."""

    def __init__(self, value, element: str) -> None:
        self.value = value
        self.element = element


Operand = Union[Value, Scalar]


def broadcast_map(input_shape: Sequence[int], out_shape: Sequence[int]
                  ) -> Optional[str]:
    """The indexing map reading an input of `input_shape` broadcast to
    `out_shape` (numpy rules), or None if they do not broadcast."""
    rank, in_rank = len(out_shape), len(input_shape)
    if in_rank > rank:
        return None
    results: List = []
    for i, size in enumerate(input_shape):
        j = rank - in_rank + i
        if size == out_shape[j]:
            results.append(j)
        elif size == 1:
            results.append("0")
        else:
            return None
    return affine_map(rank, results)


def broadcast_shapes(*shapes: Sequence[int]) -> Tuple[int, ...]:
    rank = max((len(s) for s in shapes), default=0)
    out = [1] * rank
    for shape in shapes:
        for i, size in enumerate(shape):
            j = rank - len(shape) + i
            if out[j] == 1:
                out[j] = size
            elif size not in (1, out[j]):
                raise ValueError(f"shapes {list(shapes)} do not broadcast")
    return tuple(out)


class LinalgEmitter:
    """Builds tensor ops; the `scope` attribute is the location of the ops
    emitted next."""

    def __init__(self, builder: FunctionBuilder) -> None:
        self.b = builder
        self.scope: Optional[str] = None
        # Result of a reshape -> the value it reshapes (through chains of
        # reshapes), so that reshaping back gives that value itself.
        self._reshaped_from: Dict[str, Value] = {}

    # -- plumbing ---------------------------------------------------------

    def _loc(self) -> str:
        return loc_suffix(self.scope)

    def _emit(self, text: str) -> None:
        self.b.emit(text + self._loc())

    def fresh(self, hint: str = "v") -> str:
        return self.b.fresh(hint)

    def empty(self, type_: TensorType) -> Value:
        name = self.fresh("empty")
        self._emit(f"{name} = tensor.empty() : {type_}")
        return Value(name, type_)

    def fill(self, type_: TensorType, value) -> Value:
        """tensor.empty + linalg.fill with a scalar constant."""
        empty = self.empty(type_)
        cst = self.fresh("cst")
        self._emit(f"{cst} = arith.constant "
                   f"{format_scalar(value, type_.element)} : {type_.element}")
        name = self.fresh("fill")
        self._emit(f"{name} = linalg.fill ins({cst} : {type_.element}) "
                   f"outs({empty} : {type_}) -> {type_}")
        return Value(name, type_)

    def generic(self, inputs: Sequence[Tuple[Value, str]],
                outputs: Sequence[Tuple[Value, str]], iterators: Sequence[str],
                body_fn: Callable[[Body], Sequence[str]],
                hint: str = "v") -> List[Value]:
        """A linalg.generic. `body_fn(body)` gets a Body whose args are the
        input then output elements and returns the values to yield."""
        elements = [v.type.element for v, _ in inputs] + \
            [v.type.element for v, _ in outputs]
        hints = ["in"] * len(inputs) + ["out"] * len(outputs)
        body = Body(self.b, elements, hints)
        yields = list(body_fn(body))
        if len(outputs) != 1:
            raise NotImplementedError("single-result generics only")
        names = [self.fresh(hint)]
        result_types = [v.type for v, _ in outputs]
        maps = ", ".join(m for _, m in list(inputs) + list(outputs))
        iters = ", ".join(f'"{it}"' for it in iterators)
        text = f"{names[0]} = linalg.generic {{indexing_maps = [{maps}], " \
            f"iterator_types = [{iters}]}}"
        if inputs:
            text += f" ins({', '.join(v.name for v, _ in inputs)} : " \
                f"{', '.join(str(v.type) for v, _ in inputs)})"
        text += f" outs({', '.join(v.name for v, _ in outputs)} : " \
            f"{', '.join(str(v.type) for v, _ in outputs)}) {{"
        self.b.emit(text)
        for line in body.render(yields, [t.element for t in result_types],
                                ""):
            self.b.emit("  " + line if not line.startswith("^") else line)
        self.b.emit(f"}} -> {', '.join(str(t) for t in result_types)}"
                    + self._loc())
        return [Value(n, t) for n, t in zip(names, result_types)]

    # -- elementwise ------------------------------------------------------

    def elementwise(self, out_type: TensorType, operands: Sequence[Operand],
                    fn: Callable[..., str],
                    compute: Union[None, str, Sequence[str]] = None,
                    result: Optional[str] = None, hint: str = "v") -> Value:
        """out[i] = fn(body, *operands[i]) with numpy broadcasting. Each
        operand is converted to its `compute` element type first (one type
        for all, or one per operand; default: the result's element type);
        fn's value, of type `result` (default: the common compute type or
        the result's), is converted to the result's element type."""
        if compute is None or isinstance(compute, str):
            result = result or compute or out_type.element
            computes = [compute or out_type.element] * len(operands)
        else:
            computes = list(compute)
            result = result or out_type.element
        inputs = []
        for op in operands:
            if isinstance(op, Value):
                amap = broadcast_map(op.type.shape, out_type.shape)
                if amap is None:
                    raise ValueError(f"{op.type} does not broadcast to "
                                     f"{out_type}")
                inputs.append((op, amap))
        init = self.empty(out_type)

        def body_fn(body: Body) -> List[str]:
            args = iter(zip(body.args, body.arg_elements))
            scalars = []
            for op, element in zip(operands, computes):
                if isinstance(op, Value):
                    arg, own = next(args)
                    scalars.append(body.cast(arg, own, element))
                else:
                    scalars.append(body.const(op.value, element))
            return [body.cast(fn(body, *scalars), result, out_type.element)]

        return self.generic(inputs, [(init, identity_map(out_type.rank))],
                            ["parallel"] * out_type.rank, body_fn, hint)[0]

    def cast(self, value: Value, element: str) -> Value:
        if value.type.element == element:
            return value
        return self.elementwise(value.type.with_element(element), [value],
                                lambda b, x: x, compute=value.type.element,
                                hint="cast")

    def broadcast_to(self, value: Value, shape: Sequence[int]) -> Value:
        """Materializes a broadcast (a copy generic)."""
        if tuple(value.type.shape) == tuple(shape):
            return value
        return self.elementwise(value.type.with_shape(shape), [value],
                                lambda b, x: x, hint="bcast")

    # -- reductions -------------------------------------------------------

    def reduce(self, inputs: Sequence, dims: Sequence[int],
               keepdim: bool, kind: str, out_element: str,
               pre: Optional[Callable[..., str]] = None,
               domain: Optional[Sequence[int]] = None,
               hint: str = "red") -> Value:
        """Reduces over `dims` of the iteration `domain` (default: the first
        input's shape). Inputs broadcast to the domain; `pre(body, *elems)`
        computes the reduced element (default: the first input) and `kind`
        is 'sum', 'max' or 'min'. keepdim keeps size-1 dimensions, read
        through a constant-0 map like torch-mlir."""
        first = inputs[0][0] if isinstance(inputs[0], tuple) else inputs[0]
        domain = tuple(domain if domain is not None else first.type.shape)
        rank = len(domain)
        dims = sorted({d % rank for d in dims}) if rank else []
        if keepdim:
            out_shape = tuple(1 if i in dims else s
                              for i, s in enumerate(domain))
            out_map = affine_map(rank, ["0" if i in dims else i
                                        for i in range(rank)])
        else:
            out_shape = tuple(s for i, s in enumerate(domain) if i not in dims)
            out_map = affine_map(rank, [i for i in range(rank)
                                        if i not in dims])
        out_type = TensorType(out_shape, out_element)
        init_value = {"sum": 0.0, "max": float("-inf"),
                      "min": float("inf")}[kind]
        if not is_float(out_element):
            init_value = int(init_value) if kind == "sum" else None
            if init_value is None:
                raise NotImplementedError("integer max/min reductions")
        init = self.fill(out_type, init_value)
        ins = []
        for item in inputs:
            if isinstance(item, tuple):  # (value, explicit indexing map)
                ins.append(item)
                continue
            amap = broadcast_map(item.type.shape, domain)
            if amap is None:
                raise ValueError(f"{item.type} does not broadcast to "
                                 f"{domain}")
            ins.append((item, amap))
        inputs = [v for v, _ in ins]

        def body_fn(body: Body) -> List[str]:
            elems = body.args[:len(inputs)]
            acc = body.args[len(inputs)]
            element = pre(body, *elems) if pre else \
                body.cast(elems[0], inputs[0].type.element, out_element)
            op = {"sum": "arith.addf" if is_float(out_element)
                  else "arith.addi",
                  "max": "arith.maximumf", "min": "arith.minimumf"}[kind]
            return [body.op(op, [element, acc], out_element)]

        iterators = ["reduction" if i in dims else "parallel"
                     for i in range(rank)]
        return self.generic(ins, [(init, out_map)], iterators, body_fn,
                            hint)[0]

    # -- structured named ops ---------------------------------------------

    def transpose(self, value: Value, perm: Sequence[int]) -> Value:
        perm = [p % value.type.rank for p in perm] if value.type.rank else []
        if list(perm) == list(range(value.type.rank)):
            return value
        out_type = value.type.with_shape([value.type.shape[p] for p in perm])
        init = self.empty(out_type)
        name = self.fresh("transposed")
        self._emit(f"{name} = linalg.transpose ins({value} : {value.type}) "
                   f"outs({init} : {out_type}) permutation = "
                   f"[{', '.join(str(p) for p in perm)}]")
        return Value(name, out_type)

    def matmul(self, a: Value, b: Value) -> Value:
        """linalg.matmul of 2-D tensors (fills a zero accumulator)."""
        (m, _), (_, n) = a.type.shape, b.type.shape
        out = self.fill(TensorType((m, n), a.type.element), 0.0)
        name = self.fresh("matmul")
        self._emit(f"{name} = linalg.matmul ins({a}, {b} : {a.type}, "
                   f"{b.type}) outs({out} : {out.type}) -> {out.type}")
        return Value(name, out.type)

    def batch_matmul(self, a: Value, b: Value) -> Value:
        (batch, m, _), (_, _, n) = a.type.shape, b.type.shape
        out = self.fill(TensorType((batch, m, n), a.type.element), 0.0)
        name = self.fresh("bmm")
        self._emit(f"{name} = linalg.batch_matmul ins({a}, {b} : {a.type}, "
                   f"{b.type}) outs({out} : {out.type}) -> {out.type}")
        return Value(name, out.type)

    # -- shapes -----------------------------------------------------------

    @staticmethod
    def _grouping(src: Sequence[int], dst: Sequence[int]
                  ) -> Optional[List[List[int]]]:
        """Groups of consecutive `src` dims whose products are the `dst`
        dims (len(src) >= len(dst)), or None."""
        if not dst:
            return [] if all(s == 1 for s in src) else None
        groups: List[List[int]] = []
        i = 0
        for j, size in enumerate(dst):
            group: List[int] = []
            product = 1
            while i < len(src) and (not group or product < size):
                group.append(i)
                product *= src[i]
                i += 1
            if j == len(dst) - 1:
                while i < len(src):
                    group.append(i)
                    product *= src[i]
                    i += 1
            if product != size or not group:
                return None
            groups.append(group)
        return groups if i == len(src) else None

    def _collapse(self, value: Value, groups: List[List[int]],
                  out_type: TensorType) -> Value:
        name = self.fresh("collapsed")
        reassoc = ", ".join("[" + ", ".join(map(str, g)) + "]" for g in groups)
        self._emit(f"{name} = tensor.collapse_shape {value} [{reassoc}] : "
                   f"{value.type} into {out_type}")
        return Value(name, out_type)

    def _expand(self, value: Value, groups: List[List[int]],
                out_type: TensorType) -> Value:
        name = self.fresh("expanded")
        reassoc = ", ".join("[" + ", ".join(map(str, g)) + "]" for g in groups)
        shape = ", ".join(str(s) for s in out_type.shape)
        self._emit(f"{name} = tensor.expand_shape {value} [{reassoc}] "
                   f"output_shape [{shape}] : {value.type} into {out_type}")
        return Value(name, out_type)

    def reshape(self, value: Value, shape: Sequence[int]) -> Value:
        """collapse_shape or expand_shape where one suffices, else a
        collapse to 1-D followed by an expand."""
        shape = tuple(int(s) for s in shape)
        src = value.type.shape
        out_type = value.type.with_shape(shape)
        if src == shape:
            return value
        origin = self._reshaped_from.get(value.name, value)
        if origin.type.shape == shape:
            # A round trip (an encoder layer's [B, S, E] output expanded
            # from rows and collapsed again by the next layer) reads the
            # original value: no op, and --pipe-form-blocks does not see a
            # reshape that would join the producer's block and make the
            # boundary carry both shapes.
            return origin
        result = self._reshape(value, shape, src, out_type)
        self._reshaped_from[result.name] = origin
        return result

    def _reshape(self, value: Value, shape: Tuple[int, ...],
                 src: Tuple[int, ...], out_type: TensorType) -> Value:
        if len(src) >= len(shape):
            groups = self._grouping(src, shape)
            if groups is not None:
                return self._collapse(value, groups, out_type)
        if len(src) <= len(shape):
            groups = self._grouping(shape, src)
            if groups is not None:
                return self._expand(value, groups, out_type)
        flat = value
        if len(src) != 1:
            flat = self._collapse(value, [list(range(len(src)))],
                                  value.type.with_shape([value.type.numel]))
        if len(shape) == 1:
            return flat
        return self._expand(flat, [list(range(len(shape)))], out_type)

    def extract_slice(self, value: Value, offsets: Sequence[int],
                      sizes: Sequence[int], strides: Sequence[int]) -> Value:
        out_type = value.type.with_shape(sizes)
        if all(o == 0 for o in offsets) and tuple(sizes) == \
                value.type.shape and all(s == 1 for s in strides):
            return value
        name = self.fresh("slice")

        def fmt(xs):
            return ", ".join(str(x) for x in xs)
        self._emit(f"{name} = tensor.extract_slice {value}[{fmt(offsets)}] "
                   f"[{fmt(sizes)}] [{fmt(strides)}] : {value.type} to "
                   f"{out_type}")
        return Value(name, out_type)

    def insert_slice(self, source: Value, dest: Value,
                     offsets: Sequence[int]) -> Value:
        name = self.fresh("inserted")

        def fmt(xs):
            return ", ".join(str(x) for x in xs)
        self._emit(f"{name} = tensor.insert_slice {source} into "
                   f"{dest}[{fmt(offsets)}] [{fmt(source.type.shape)}] "
                   f"[{fmt([1] * source.type.rank)}] : {source.type} into "
                   f"{dest.type}")
        return Value(name, dest.type)

    # -- constants --------------------------------------------------------

    def constant(self, attr: str, type_: TensorType, hint: str = "cst",
                 loc: Optional[str] = None) -> Value:
        """An arith.constant in the function's prologue."""
        name = self.fresh(hint)
        self.b.emit_constant(f"{name} = arith.constant {attr} : {type_}"
                             + loc_suffix(loc))
        return Value(name, type_)
