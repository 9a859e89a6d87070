#!/usr/bin/env python3
"""Independent float64 reference for the loss of pipe-gen's tiny models.

Usage: reference_loss.py FAMILY PARAMS MODEL RUNNER_OUTPUT [--heads N]

PARAMS is `pipe-gen --list-params` output (name [shape] key), MODEL the
generated IR (weights are read from its dialect_resources blobs), and
RUNNER_OUTPUT the loss printed by the lowered `@main` (`--emit-main`). The
inputs are rebuilt with the formula `@main` uses. Written from the model
definitions (Hugging Face BERT / GPT-2 / T5 semantics), not from the
generator's code, in plain Python (standard library only).
Prints "match" when both losses agree to 2e-4, else "MISMATCH" and exits 1.
"""
import math
import re
import struct
import sys


def read_params(path):
    params = {}
    for line in open(path):
        parts = line.split()
        if not parts:
            continue
        shape = [int(d) for d in parts[1].strip("[]").split("x") if d]
        params[parts[0]] = (shape, parts[2])
    return params


def read_blobs(path):
    text = open(path).read()
    blobs = {}
    section = text[text.index("dialect_resources"):]
    for key, hexdata in re.findall(r'([\w.]+): "0x([0-9A-Fa-f]+)"', section):
        raw = bytes.fromhex(hexdata)[4:]  # first 4 bytes: alignment
        blobs[key] = list(struct.unpack("<%df" % (len(raw) // 4), raw))
    sig = re.search(r"func\.func @forward\(([^)]*)\)", text).group(1)
    shapes = [[int(d) for d in m.split("x")]
              for m in re.findall(r"tensor<([0-9x]+)xi64>", sig)]
    return blobs, shapes


class Weights:
    def __init__(self, params, blobs):
        self.params, self.blobs = params, blobs

    def __call__(self, name):
        shape, key = self.params[name]
        flat = self.blobs[key]
        if len(shape) == 1:
            return flat
        rows, cols = shape
        return [flat[r * cols:(r + 1) * cols] for r in range(rows)]

    def has(self, name):
        return name in self.params


def linear_t(x, w, b=None):  # x @ W^T (+ b), W [out, in]
    out = []
    for row in x:
        y = [sum(a * c for a, c in zip(row, wr)) for wr in w]
        out.append([v + bb for v, bb in zip(y, b)] if b else y)
    return out


def conv1d(x, w, b):  # x @ W + b, W [in, out]
    cols = len(w[0])
    return [[sum(row[k] * w[k][j] for k in range(len(row))) + b[j]
             for j in range(cols)] for row in x]


def add(x, y):
    return [[a + c for a, c in zip(r, s)] for r, s in zip(x, y)]


def layer_norm(x, g, b, eps):
    out = []
    for row in x:
        m = sum(row) / len(row)
        var = sum((v - m) ** 2 for v in row) / len(row)
        r = 1.0 / math.sqrt(var + eps)
        out.append([(v - m) * r * gg + bb for v, gg, bb in zip(row, g, b)])
    return out


def rms_norm(x, g, eps):
    out = []
    for row in x:
        r = 1.0 / math.sqrt(sum(v * v for v in row) / len(row) + eps)
        out.append([v * r * gg for v, gg in zip(row, g)])
    return out


def softmax(row):
    m = max(row)
    e = [math.exp(v - m) for v in row]
    s = sum(e)
    return [v / s for v in e]


def attention(q, k, v, heads, scale, causal, bias=None):
    """q [Sq, H*dh], k/v [Sk, H*dh] for one sequence; bias[h][i][j]."""
    dh = len(q[0]) // heads
    out = [[0.0] * (heads * dh) for _ in q]
    for h in range(heads):
        sl = slice(h * dh, (h + 1) * dh)
        for i, qi in enumerate(q):
            scores = []
            for j, kj in enumerate(k):
                s = sum(a * c for a, c in zip(qi[sl], kj[sl]))
                if scale:
                    s /= math.sqrt(dh)
                if bias is not None:
                    s += bias[h][i][j]
                if causal and j > i:
                    s = -3.4028234663852886e38
                scores.append(s)
            p = softmax(scores)
            for t in range(dh):
                out[i][h * dh + t] = sum(p[j] * v[j][h * dh + t]
                                         for j in range(len(k)))
    return out


def cross_entropy(logits, labels):
    total = 0.0
    for row, lab in zip(logits, labels):
        m = max(row)
        lse = m + math.log(sum(math.exp(v - m) for v in row))
        total += lse - row[lab]
    return total / len(labels)


def gelu_tanh(v):
    return 0.5 * v * (1 + math.tanh(0.7978845608028654 *
                                     (v + 0.044715 * v ** 3)))


def gelu_erf(v):
    return 0.5 * v * (1 + math.erf(v / math.sqrt(2)))


def inputs(shapes, vocab, family):
    """The fixed inputs of pipe-gen --emit-main."""
    args = []
    for n, shape in enumerate(shapes):
        rows, cols = (shape[0], shape[1]) if len(shape) == 2 else (shape[0], 1)
        vals = []
        for i in range(rows * cols):
            r, c = i // cols, i % cols
            if n == 0:
                vals.append((r * 31 + c * 7 + 1) % vocab)
            elif n == 1:
                vals.append((r * 17 + c * 5 + 3) % vocab)
            else:
                vals.append(i % 2 if family == "bert"
                            else (r * 13 + c * 3 + 2) % vocab)
        args.append([vals[r * cols:(r + 1) * cols] for r in range(rows)]
                    if len(shape) == 2 else vals)
    return args


def gpt2(W, args, heads):
    ids, labels = args
    wte, wpe = W("transformer.wte.weight"), W("transformer.wpe.weight")
    losses = []
    logits_all, labels_all = [], []
    for b in range(len(ids)):
        x = [[a + c for a, c in zip(wte[t], wpe[s])]
             for s, t in enumerate(ids[b])]
        layer = 0
        while W.has("transformer.h.%d.ln_1.weight" % layer):
            p = "transformer.h.%d." % layer
            d = len(x[0])
            h = layer_norm(x, W(p + "ln_1.weight"), W(p + "ln_1.bias"), 1e-5)
            qkv = conv1d(h, W(p + "attn.c_attn.weight"),
                         W(p + "attn.c_attn.bias"))
            q = [r[:d] for r in qkv]
            k = [r[d:2 * d] for r in qkv]
            v = [r[2 * d:] for r in qkv]
            a = attention(q, k, v, heads, scale=True, causal=True)
            a = conv1d(a, W(p + "attn.c_proj.weight"), W(p + "attn.c_proj.bias"))
            x = add(x, a)
            h = layer_norm(x, W(p + "ln_2.weight"), W(p + "ln_2.bias"), 1e-5)
            h = conv1d(h, W(p + "mlp.c_fc.weight"), W(p + "mlp.c_fc.bias"))
            h = [[gelu_tanh(v) for v in r] for r in h]
            h = conv1d(h, W(p + "mlp.c_proj.weight"), W(p + "mlp.c_proj.bias"))
            x = add(x, h)
            layer += 1
        x = layer_norm(x, W("transformer.ln_f.weight"),
                       W("transformer.ln_f.bias"), 1e-5)
        logits_all += linear_t(x, wte)
        labels_all += labels[b]
    return cross_entropy(logits_all, labels_all)


def bert(W, args, heads):
    ids, labels = args[0], args[1]
    nsl = args[2] if len(args) > 2 else None
    word = W("bert.embeddings.word_embeddings.weight")
    pos = W("bert.embeddings.position_embeddings.weight")
    typ = W("bert.embeddings.token_type_embeddings.weight")
    eps = 1e-12
    mlm_logits, mlm_labels, pooled_all = [], [], []
    for b in range(len(ids)):
        x = [[a + c + e for a, c, e in zip(word[t], typ[0], pos[s])]
             for s, t in enumerate(ids[b])]
        x = layer_norm(x, W("bert.embeddings.LayerNorm.weight"),
                       W("bert.embeddings.LayerNorm.bias"), eps)
        layer = 0
        while W.has("bert.encoder.layer.%d.output.dense.weight" % layer):
            p = "bert.encoder.layer.%d." % layer
            lin = lambda n, inp: linear_t(inp, W(p + n + ".weight"),
                                          W(p + n + ".bias"))
            q = lin("attention.self.query", x)
            k = lin("attention.self.key", x)
            v = lin("attention.self.value", x)
            a = lin("attention.output.dense",
                    attention(q, k, v, heads, scale=True, causal=False))
            x = layer_norm(add(a, x), W(p + "attention.output.LayerNorm.weight"),
                           W(p + "attention.output.LayerNorm.bias"), eps)
            h = [[gelu_erf(v) for v in r] for r in lin("intermediate.dense", x)]
            h = lin("output.dense", h)
            x = layer_norm(add(h, x), W(p + "output.LayerNorm.weight"),
                           W(p + "output.LayerNorm.bias"), eps)
            layer += 1
        if nsl is not None:
            pooled = linear_t([x[0]], W("bert.pooler.dense.weight"),
                              W("bert.pooler.dense.bias"))[0]
            pooled_all.append([math.tanh(v) for v in pooled])
        t = linear_t(x, W("cls.predictions.transform.dense.weight"),
                     W("cls.predictions.transform.dense.bias"))
        t = [[gelu_erf(v) for v in r] for r in t]
        t = layer_norm(t, W("cls.predictions.transform.LayerNorm.weight"),
                       W("cls.predictions.transform.LayerNorm.bias"), eps)
        mlm_logits += linear_t(t, word, W("cls.predictions.bias"))
        mlm_labels += labels[b]
    loss = cross_entropy(mlm_logits, mlm_labels)
    if nsl is not None:
        nsp = linear_t(pooled_all, W("cls.seq_relationship.weight"),
                       W("cls.seq_relationship.bias"))
        loss += cross_entropy(nsp, nsl)
    return loss


def t5_bucket(rel, bidirectional, num_buckets=32, max_distance=128):
    ret = 0
    if bidirectional:
        num_buckets //= 2
        ret += num_buckets if rel > 0 else 0
        n = abs(rel)
    else:
        n = max(-rel, 0)
    max_exact = num_buckets // 2
    if n < max_exact:
        return ret + n
    large = max_exact + int(math.log(n / max_exact) /
                            math.log(max_distance / max_exact) *
                            (num_buckets - max_exact))
    return ret + min(large, num_buckets - 1)


def t5(W, args, heads):
    ids, labels, dec_ids = args
    shared = W("shared.weight")
    eps = 1e-6
    d = len(shared[0])

    def bias_for(stack, sq, sk, bidir):
        name = stack + ".block.0.layer.0.SelfAttention.relative_attention_bias.weight"
        if not W.has(name):
            return None
        table = W(name)
        return [[[table[t5_bucket(j - i, bidir)][h] for j in range(sk)]
                 for i in range(sq)] for h in range(heads)]

    def attn(p, xq, xkv, causal, bias):
        q = linear_t(xq, W(p + "q.weight"))
        k = linear_t(xkv, W(p + "k.weight"))
        v = linear_t(xkv, W(p + "v.weight"))
        return linear_t(attention(q, k, v, heads, False, causal, bias),
                        W(p + "o.weight"))

    def ffn(p, x):
        h = linear_t(x, W(p + "wi.weight"))
        h = [[max(v, 0.0) for v in r] for r in h]
        return linear_t(h, W(p + "wo.weight"))

    logits_all, labels_all = [], []
    for b in range(len(ids)):
        x = [shared[t][:] for t in ids[b]]
        eb = bias_for("encoder", len(x), len(x), True)
        layer = 0
        while W.has("encoder.block.%d.layer.0.layer_norm.weight" % layer):
            p = "encoder.block.%d." % layer
            h = rms_norm(x, W(p + "layer.0.layer_norm.weight"), eps)
            x = add(x, attn(p + "layer.0.SelfAttention.", h, h, False, eb))
            h = rms_norm(x, W(p + "layer.1.layer_norm.weight"), eps)
            x = add(x, ffn(p + "layer.1.DenseReluDense.", h))
            layer += 1
        enc = rms_norm(x, W("encoder.final_layer_norm.weight"), eps)
        y = [shared[t][:] for t in dec_ids[b]]
        db = bias_for("decoder", len(y), len(y), False)
        layer = 0
        while W.has("decoder.block.%d.layer.0.layer_norm.weight" % layer):
            p = "decoder.block.%d." % layer
            h = rms_norm(y, W(p + "layer.0.layer_norm.weight"), eps)
            y = add(y, attn(p + "layer.0.SelfAttention.", h, h, True, db))
            h = rms_norm(y, W(p + "layer.1.layer_norm.weight"), eps)
            y = add(y, attn(p + "layer.1.EncDecAttention.", h, enc, False, None))
            h = rms_norm(y, W(p + "layer.2.layer_norm.weight"), eps)
            y = add(y, ffn(p + "layer.2.DenseReluDense.", h))
            layer += 1
        y = rms_norm(y, W("decoder.final_layer_norm.weight"), eps)
        y = [[v * d ** -0.5 for v in r] for r in y]
        logits_all += linear_t(y, shared)
        labels_all += labels[b]
    return cross_entropy(logits_all, labels_all)


def main():
    argv = sys.argv[1:]
    heads = 2
    if "--heads" in argv:
        i = argv.index("--heads")
        heads = int(argv[i + 1])
        del argv[i:i + 2]
    family, params_path, model_path, out_path = argv
    params = read_params(params_path)
    blobs, shapes = read_blobs(model_path)
    W = Weights(params, blobs)
    vocab = next(s for n, (s, _) in params.items()
                 if n.endswith(("word_embeddings.weight", "wte.weight",
                                "shared.weight")))[0]
    args = inputs(shapes, vocab, family)
    ref = {"gpt2": gpt2, "bert": bert, "t5": t5}[family](W, args, heads)
    got = float(open(out_path).read().split()[0])
    ok = abs(ref - got) <= 2e-4 * max(1.0, abs(ref))
    print("%s reference=%.6f ir=%.6f" % ("match" if ok else "MISMATCH", ref, got))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
