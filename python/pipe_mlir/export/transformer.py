"""torch.nn's transformer modules, decomposed into the exporter's ops.

`nn.MultiheadAttention` (self-attention), `nn.TransformerEncoderLayer` and
`nn.TransformerEncoder` are fx leaves (they come from torch.nn). Their
forwards are not traced: torch's fast paths and `F.multi_head_attention_
forward` branch on flags and call fused kernels. Instead each is lowered
here from its submodules and attributes into what a hand-written layer
exports to: `linear_value` (transpose + matmul + bias) for the packed
in-projection, `extract_slice` for q / k / v, `linalg.transpose` to
[batch, heads, seq, head_dim], `linalg.batch_matmul` for the scores and the
context, `softmax_value`, `layer_norm_value`, relu / gelu generics and
residual adds.

Every weight is read through the weight table, so the IR names are the
PyTorch state-dict names (`layers.0.self_attn.in_proj_weight`, ...), and
ops carry their submodule's path as location (`layers.0.self_attn`,
`layers.0.linear1`, ...), so `--pipe-form-blocks=granularity=layer` finds
one layer per `layers.<i>`.

Supported: batch_first True and False (and unbatched [seq, d] inputs),
norm_first True and False, relu / gelu activations (strings, `F.relu`,
`F.gelu`, `torch.relu`, `nn.ReLU`, `nn.GELU`), any `layer_norm_eps`, with or
without biases, dropout only where it is off (eval or p == 0). Masks, causal
attention, cross-attention, kdim / vdim different from embed_dim,
add_bias_kv and add_zero_attn raise UnsupportedError naming the module.
"""

import contextlib
import math
import operator
from typing import Callable, Optional

import torch
import torch.nn.functional as F

from .errors import ExportError, UnsupportedError
from .ir import Value
from .lowering import (check_dropout, gelu_value, layer_norm_value,
                       linear_value, lowers_module, relu_value,
                       softmax_value)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _type_name(module: torch.nn.Module) -> str:
    cls = type(module)
    if getattr(torch.nn, cls.__name__, None) is cls:
        return f"torch.nn.{cls.__name__}"
    return f"{cls.__module__}.{cls.__qualname__}"


def _unsupported(node, module, path: str, what: str,
                 hint: str = "") -> UnsupportedError:
    """'unsupported <what> in torch.nn.X at 'path' (fx node 'n'): hint'."""
    message = (f"unsupported {what} in {_type_name(module)} at "
               f"'{path or '<root>'}' (fx node '{node.name}')")
    if hint:
        message += f": {hint}"
    return UnsupportedError(message)


@contextlib.contextmanager
def _scope(ctx, path: str):
    """Emits the ops of a submodule under its own module path."""
    saved = ctx.emit.scope
    ctx.emit.scope = path or None
    try:
        yield
    finally:
        ctx.emit.scope = saved


def _param(ctx, tensor) -> Optional[Value]:
    return None if tensor is None else ctx.weights.get(tensor)


def _check_dropout_module(node, module, path: str) -> None:
    """An nn.Dropout submodule of a layer must be off."""
    if isinstance(module, torch.nn.Dropout):
        check_dropout(node, module.p, module.training, module=path)


def _add(ctx, a: Value, b: Value, hint: str = "residual") -> Value:
    e = a.type.element
    return ctx.emit.elementwise(
        a.type, [a, b], lambda body, x, y: body.op("arith.addf", [x, y], e),
        hint=hint)


def _layer_norm(ctx, norm, path: str, x: Value) -> Value:
    with _scope(ctx, path):
        return layer_norm_value(ctx, x, list(norm.normalized_shape),
                                _param(ctx, norm.weight),
                                _param(ctx, norm.bias), norm.eps)


def _linear(ctx, node, linear, path: str, x: Value) -> Value:
    with _scope(ctx, path):
        return linear_value(ctx, node, x, ctx.weights.get(linear.weight),
                            _param(ctx, linear.bias))


# ---------------------------------------------------------------------------
# nn.MultiheadAttention


def check_self_attention(node, m, path: str) -> None:
    """What the decomposition below does not cover, as UnsupportedError;
    attention dropout in training mode as ExportError."""
    if not m._qkv_same_embed_dim or getattr(m, "in_proj_weight", None) \
            is None:
        raise _unsupported(
            node, m, path, f"kdim={m.kdim}/vdim={m.vdim} different from "
            f"embed_dim={m.embed_dim}",
            "only the packed in_proj_weight (kdim = vdim = embed_dim) is "
            "lowered")
    if getattr(m, "bias_k", None) is not None or \
            getattr(m, "bias_v", None) is not None:
        raise _unsupported(node, m, path, "add_bias_kv=True")
    if getattr(m, "add_zero_attn", False):
        raise _unsupported(node, m, path, "add_zero_attn=True")
    if m.training and m.dropout > 0:
        raise ExportError(
            f"dropout with p={m.dropout} in training mode in module "
            f"'{path}' (attention weights of {_type_name(m)}, fx node "
            f"'{node.name}'): the exported forward is deterministic; call "
            "model.eval() before exporting, or use dropout=0")


def _layout(x_type, batch_first: bool):
    """(outer dims [A, B], batch, seq, batch_first) of an attention input
    [L, N, E] / [N, L, E] / unbatched [L, E] (as batch_first [1, L, E])."""
    if x_type.rank == 2:
        return (1, x_type.shape[0]), 1, x_type.shape[0], True
    if batch_first:
        return x_type.shape[:2], x_type.shape[0], x_type.shape[1], True
    return x_type.shape[:2], x_type.shape[1], x_type.shape[0], False


def self_attention_rows(ctx, node, m, path: str, rows: Value, outer,
                        batch: int, seq: int, batch_first: bool,
                        need_weights: bool = False,
                        average_weights: bool = True):
    """nn.MultiheadAttention's forward with query = key = value and no
    masks, on the input's rows: `rows` is [A*B, E], the input [A, B, E]
    collapsed, where [A, B] = `outer` is [N, L] (batch_first) or [L, N].
    Returns (output rows [A*B, E], attention weights [N, (H,) L, L] or
    None)."""
    emit, e = ctx.emit, rows.type.element
    heads, embed = m.num_heads, m.embed_dim
    head_dim = embed // heads
    outer = tuple(outer)
    with _scope(ctx, path):
        qkv = linear_value(ctx, node, rows, ctx.weights.get(m.in_proj_weight),
                           _param(ctx, m.in_proj_bias))   # [A*B, 3E]
        # q, k, v: [A*B, E] -> [A, B, H, Dh] -> [N*H, L, Dh] (k: Dh, L).
        split = outer + (heads, head_dim)
        to_heads = [0, 2, 1, 3] if batch_first else [1, 2, 0, 3]
        to_heads_t = [0, 2, 3, 1] if batch_first else [1, 2, 3, 0]
        parts = []
        for index in range(3):
            part = emit.extract_slice(qkv, [0, index * embed],
                                      [rows.type.shape[0], embed], [1, 1])
            parts.append(emit.reshape(part, split))
        q, k, v = parts
        # torch scales q by 1/sqrt(head_dim) before the product.
        scale = 1.0 / math.sqrt(head_dim)
        q = emit.elementwise(
            q.type, [q], lambda b, y: b.op("arith.mulf",
                                           [y, b.const(scale, e)], e),
            hint="q_scaled")
        flat = batch * heads
        q = emit.reshape(emit.transpose(q, to_heads), (flat, seq, head_dim))
        k = emit.reshape(emit.transpose(k, to_heads_t),
                         (flat, head_dim, seq))
        v = emit.reshape(emit.transpose(v, to_heads), (flat, seq, head_dim))
        scores = emit.batch_matmul(q, k)                  # [N*H, L, L]
        probs = softmax_value(ctx, scores, -1)
        context = emit.batch_matmul(probs, v)            # [N*H, L, Dh]
        context = emit.reshape(context, (batch, heads, seq, head_dim))
        from_heads = [0, 2, 1, 3] if batch_first else [2, 0, 1, 3]
        context = emit.reshape(emit.transpose(context, from_heads),
                               rows.type.shape)
    out = _linear(ctx, node, m.out_proj, _join(path, "out_proj"), context)

    weights = None
    if need_weights:
        with _scope(ctx, path):
            weights = emit.reshape(probs, (batch, heads, seq, seq))
            if average_weights:
                total = emit.reduce([weights], [1], False, "sum", e,
                                    hint="attn_sum")
                weights = emit.elementwise(
                    total.type, [total],
                    lambda b, y: b.op("arith.divf",
                                      [y, b.const(float(heads), e)], e),
                    hint="attn_weights")
    return out, weights


def _rows(ctx, node, m, path: str, x: Value) -> Value:
    """An attention input [.., .., E] or [L, E] as rows [*, E]."""
    if x.type.rank not in (2, 3) or x.type.shape[-1] != m.embed_dim:
        raise _unsupported(node, m, path, f"input of type {x.type}",
                           f"expected [seq, batch, {m.embed_dim}], "
                           f"[batch, seq, {m.embed_dim}] or "
                           f"[seq, {m.embed_dim}]")
    return ctx.emit.reshape(x, (math.prod(x.type.shape[:-1]),
                                x.type.shape[-1]))


def _weights_used(node) -> bool:
    """Whether anything reads the attention weights (result 1) of an
    nn.MultiheadAttention call; fx dropped the unused reads already."""
    for user in node.users:
        if not (user.op == "call_function" and
                user.target is operator.getitem and user.args[1] == 0):
            return True
    return False


def _check_no_mask(node, m, path: str, **masks) -> None:
    for name, value in masks.items():
        if name == "is_causal":
            if value:
                raise _unsupported(node, m, path, "is_causal=True",
                                   "causal (masked) attention is not "
                                   "lowered; write the attention with "
                                   "Linear / @ / masked_fill / softmax")
        elif value is not None:
            raise _unsupported(node, m, path, f"{name} (an attention mask)",
                               "masks are not lowered; write the attention "
                               "with Linear / @ / masked_fill / softmax")


@lowers_module(torch.nn.MultiheadAttention)
def _m_multihead_attention(ctx, node, m, query, key, value,
                           key_padding_mask=None, need_weights=True,
                           attn_mask=None, average_attn_weights=True,
                           is_causal=False):
    path = node.meta.get("pipe_scope", node.target)
    _check_no_mask(node, m, path, key_padding_mask=key_padding_mask,
                   attn_mask=attn_mask, is_causal=is_causal)
    check_self_attention(node, m, path)
    if key is not query or value is not query:
        raise _unsupported(
            node, m, path, "cross-attention (key or value is not the query)",
            "only self-attention, attn(x, x, x), is lowered")
    x = ctx.tensor(query)
    rows = _rows(ctx, node, m, path, x)
    outer, batch, seq, batch_first = _layout(x.type, m.batch_first)
    out, weights = self_attention_rows(
        ctx, node, m, path, rows, outer, batch, seq, batch_first,
        need_weights=bool(need_weights) and _weights_used(node),
        average_weights=average_attn_weights)
    out = ctx.emit.reshape(out, x.type.shape)
    if weights is not None and x.type.rank == 2:  # unbatched
        weights = ctx.emit.reshape(weights, weights.type.shape[1:])
    return out, weights


# ---------------------------------------------------------------------------
# nn.TransformerEncoderLayer and nn.TransformerEncoder


def _callable_name(fn) -> str:
    if isinstance(fn, torch.nn.Module):
        return _type_name(fn)
    name = getattr(fn, "__name__", None)
    if name is None:
        return repr(fn)
    if getattr(F, name, None) is fn:
        return f"torch.nn.functional.{name}"
    if getattr(torch, name, None) is fn:
        return f"torch.{name}"
    module = getattr(fn, "__module__", None)
    return f"{module}.{name}" if module else name


def _activation(node, layer, path: str) -> Callable:
    """The feed-forward activation as fn(ctx, x)."""
    act = layer.activation
    if act in ("relu", F.relu, torch.relu) or \
            isinstance(act, torch.nn.ReLU):
        return relu_value
    if act in ("gelu", F.gelu):
        return gelu_value
    if isinstance(act, torch.nn.GELU):
        approximate = getattr(act, "approximate", "none")
        return lambda ctx, x: gelu_value(ctx, x, approximate)
    name = _callable_name(act)
    raise _unsupported(node, layer, path, f"activation {name}",
                       "the exporter lowers relu and gelu (strings, F.relu, "
                       "F.gelu, nn.ReLU, nn.GELU)")


def check_encoder_layer(node, layer, path: str) -> None:
    if not isinstance(layer, torch.nn.TransformerEncoderLayer):
        raise UnsupportedError(
            f"unsupported layer {_type_name(layer)} at '{path}' in a "
            f"torch.nn.TransformerEncoder (fx node '{node.name}'): only "
            "torch.nn.TransformerEncoderLayer layers are lowered")
    _activation(node, layer, path)
    check_self_attention(node, layer.self_attn, _join(path, "self_attn"))
    for name in ("dropout", "dropout1", "dropout2"):
        _check_dropout_module(node, getattr(layer, name, None),
                              _join(path, name))


def encoder_layer_value(ctx, node, layer, path: str, x: Value) -> Value:
    """TransformerEncoderLayer.forward without masks:
    norm_first: x + sa(norm1(x)), then + ff(norm2(x));
    else:       norm1(x + sa(x)), then norm2(x + ff(x));
    sa = self_attn(x, x, x)[0], ff = linear2(activation(linear1(x)))
    (the dropouts are off).

    The layer works on x's rows [A*B, E] and expands its result to x's
    shape at the end; the next layer's collapse of that expand is the rows
    themselves (LinalgEmitter.reshape), so consecutive layers exchange
    one tensor and --pipe-form-blocks cuts between them cleanly (a reshape
    at the start of a layer would join the previous layer's block)."""
    check_encoder_layer(node, layer, path)
    activation = _activation(node, layer, path)
    attention = layer.self_attn
    attention_path = _join(path, "self_attn")
    with _scope(ctx, path):
        h = _rows(ctx, node, attention, attention_path, x)
    outer, batch, seq, batch_first = _layout(x.type, attention.batch_first)

    def sa_block(rows: Value) -> Value:
        return self_attention_rows(ctx, node, attention, attention_path,
                                   rows, outer, batch, seq, batch_first)[0]

    def ff_block(rows: Value) -> Value:
        rows = _linear(ctx, node, layer.linear1, _join(path, "linear1"),
                       rows)
        with _scope(ctx, path):
            rows = activation(ctx, rows)
        return _linear(ctx, node, layer.linear2, _join(path, "linear2"),
                       rows)

    norm1, norm2 = _join(path, "norm1"), _join(path, "norm2")
    if layer.norm_first:
        attended = sa_block(_layer_norm(ctx, layer.norm1, norm1, h))
        with _scope(ctx, path):
            h = _add(ctx, h, attended)
        fed = ff_block(_layer_norm(ctx, layer.norm2, norm2, h))
        with _scope(ctx, path):
            h = _add(ctx, h, fed)
    else:
        attended = sa_block(h)
        with _scope(ctx, path):
            h = _add(ctx, h, attended)
        h = _layer_norm(ctx, layer.norm1, norm1, h)
        fed = ff_block(h)
        with _scope(ctx, path):
            h = _add(ctx, h, fed)
        h = _layer_norm(ctx, layer.norm2, norm2, h)
    with _scope(ctx, path):
        return ctx.emit.reshape(h, x.type.shape)


@lowers_module(torch.nn.TransformerEncoderLayer)
def _m_encoder_layer(ctx, node, m, src, src_mask=None,
                     src_key_padding_mask=None, is_causal=False):
    path = node.meta.get("pipe_scope", node.target)
    _check_no_mask(node, m, path, src_mask=src_mask,
                   src_key_padding_mask=src_key_padding_mask,
                   is_causal=is_causal)
    return encoder_layer_value(ctx, node, m, path, ctx.tensor(src))


@lowers_module(torch.nn.TransformerEncoder)
def _m_encoder(ctx, node, m, src, mask=None, src_key_padding_mask=None,
               is_causal=None):
    path = node.meta.get("pipe_scope", node.target)
    _check_no_mask(node, m, path, mask=mask,
                   src_key_padding_mask=src_key_padding_mask,
                   is_causal=is_causal)
    norm = getattr(m, "norm", None)
    if norm is not None and not isinstance(norm, torch.nn.LayerNorm):
        raise _unsupported(node, m, path, f"final norm {_type_name(norm)}",
                           "only norm=None or a torch.nn.LayerNorm is "
                           "lowered")
    # Check every layer first: no half-emitted stack on an error.
    for index, layer in enumerate(m.layers):
        check_encoder_layer(node, layer, _join(path, f"layers.{index}"))
    x = ctx.tensor(src)
    for index, layer in enumerate(m.layers):
        x = encoder_layer_value(ctx, node, layer,
                                _join(path, f"layers.{index}"), x)
    if norm is not None:
        # On the rows, as the layers produce them, so the last layer does
        # not carry the expand to [.., .., E] (it joins the norm instead).
        rows = ctx.emit.reshape(x, (math.prod(x.type.shape[:-1]),
                                    x.type.shape[-1]))
        rows = _layer_norm(ctx, norm, _join(path, "norm"), rows)
        with _scope(ctx, _join(path, "norm")):
            x = ctx.emit.reshape(rows, x.type.shape)
    return x
