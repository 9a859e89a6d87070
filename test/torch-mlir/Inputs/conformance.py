#!/usr/bin/env python3
"""Data and PyTorch references for the torch-mlir conformance suite.

    conformance.py data MODEL DIR [--loss KIND] [--result N]
    conformance.py data cnn DIR --learnable ROWS
    conformance.py evaluate MODEL DIR WEIGHTS.safetensors
    conformance.py check MODEL DIR [--loss KIND] [--result N] [--perturb]

MODEL is one of the exports of test/torch-mlir (cnn, vit, encdec, mask,
multi, old-mlp, old-tosa). `data` writes DIR/data.safetensors: ROWS rows
of the model's inputs (`input0`, ...) and of the target the loss reads
(the last `input<n>`): class indices of the result's shape without its
last dimension for cross-entropy, floats of the result's shape for mse.

With `--learnable ROWS` (the CNN only, docs/torch-mlir.md) it writes ROWS
training rows and ROWS/4 evaluation rows (`eval_input<k>`) whose class
is the image channel with the largest mean, which the CNN can learn.

`evaluate` loads trained weights (pipe-train --save-weights) into the
PyTorch model and prints its mean loss over the evaluation rows, which is
pipe-train's eval loss.

`check` reads the weights pipe-train started from (DIR/init.safetensors,
written by --save-init-weights), the data and the JSON log
(DIR/log.jsonl), computes step 1's loss with PyTorch (the model written
with torch.nn.functional on those weights, the loss of each of the first
MICROBATCHES rows, averaged as the trainer does) and compares it with the
first "loss" of the log: within 1e-4 (relative above 1) it prints
"MODEL: first loss matches PyTorch", else it exits 1 saying both.
`--perturb` scales the model's first weight by 1.1 before computing, so
that a run can show the check fails when the weights differ.

The weights are matched by position: the lift pass names the elided
weights `__elided__`, `__elided___1`, ... in program order
(docs/ingestion.md, "Names"), which is the order of PARAMS below; their
shapes are checked against PARAMS.
"""
import argparse
import json
import math
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..",
                                "python"))
from pipe_mlir import safetensors  # noqa: E402

ROWS = 8
MICROBATCHES = 4  # pipe-train's default --microbatches


def linear_shapes(out, inp):
    return [[out, inp], [out]]


def attention_shapes(d):
    return sum((linear_shapes(d, d) for _ in range(3)), [])


# Each model: its inputs (dtype, shape, bound for integers), its results'
# shapes, its weights in program order and its forward in PyTorch.
MODELS = {
    "cnn": dict(
        inputs=[("F32", [2, 3, 8, 8])], results=[[2, 3]],
        params=[[4, 3, 3, 3], [4], [4], [4], [4], [4]] + linear_shapes(3, 4)),
    "vit": dict(
        inputs=[("F32", [2, 3, 4, 4])], results=[[2, 3]],
        params=[[8, 3, 2, 2], [8], [1, 4, 8], [8], [8]] + attention_shapes(8)
        + linear_shapes(8, 8) + [[8], [8]] + linear_shapes(16, 8)
        + linear_shapes(8, 16) + [[8], [8]] + linear_shapes(3, 8)),
    "encdec": dict(
        inputs=[("F32", [2, 4, 8]), ("I64", [2, 3], 6)], results=[[2, 3, 6]],
        params=attention_shapes(8) + linear_shapes(8, 8) + [[8], [8]]
        + [[6, 8]] + attention_shapes(8) + linear_shapes(8, 8) + [[8], [8]]
        + linear_shapes(6, 8)),
    "mask": dict(
        inputs=[("F32", [2, 4, 8])], results=[[2, 4, 5]],
        params=attention_shapes(8) + linear_shapes(5, 8)),
    "multi": dict(
        inputs=[("F32", [4, 8])], results=[[4, 16], [4, 5], [4, 5]],
        params=linear_shapes(16, 8) + linear_shapes(5, 16)),
    "old-mlp": dict(
        inputs=[("F32", [4, 2, 4])], results=[[4, 3]],
        params=linear_shapes(16, 8) + linear_shapes(3, 16)),
    "old-tosa": dict(
        inputs=[("F32", [4, 6])], results=[[4, 2]],
        params=[[1, 2, 3], [1, 2, 3]]),
}


def forward(name, w, inputs):
    import torch
    import torch.nn.functional as F

    def layer_norm(x, weight, bias):
        return F.layer_norm(x, x.shape[-1:], weight, bias, eps=1e-5)

    def attend(q, k, v, scale, mask=None):
        scores = q @ k.transpose(-2, -1) / scale
        if mask is not None:
            scores = torch.where(mask, scores,
                                 torch.tensor(torch.finfo(torch.float32).min))
        return torch.softmax(scores, dim=-1) @ v

    x = inputs[0]
    if name == "cnn":
        y = F.conv2d(x, w[0], w[1], padding=1)
        y = F.batch_norm(y, w[2], w[3], w[4], w[5], training=False, eps=1e-5)
        y = F.adaptive_avg_pool2d(F.max_pool2d(F.relu(y), 2), 1).flatten(1)
        return [F.linear(y, w[6], w[7])]
    if name == "vit":
        t = F.conv2d(x, w[0], w[1], stride=2).flatten(2).transpose(1, 2)
        t = t + w[2]
        h = layer_norm(t, w[3], w[4])

        def split(a):
            return a.reshape(2, 4, 2, 4).transpose(1, 2)
        q, k, v = (split(F.linear(h, w[5 + 2 * i], w[6 + 2 * i]))
                   for i in range(3))
        o = attend(q, k, v, 2.0).transpose(1, 2).reshape(2, 4, 8)
        t = t + F.linear(o, w[11], w[12])
        h = layer_norm(t, w[13], w[14])
        t = t + F.linear(F.gelu(F.linear(h, w[15], w[16])), w[17], w[18])
        t = layer_norm(t, w[19], w[20])
        return [F.linear(t.mean(1), w[21], w[22])]
    if name == "encdec":
        src, tokens = inputs
        scale = math.sqrt(8)

        def cross(xq, xkv, base):
            q = F.linear(xq, w[base], w[base + 1])
            k = F.linear(xkv, w[base + 2], w[base + 3])
            v = F.linear(xkv, w[base + 4], w[base + 5])
            return F.linear(attend(q, k, v, scale), w[base + 6], w[base + 7])
        enc = layer_norm(src + cross(src, src, 0), w[8], w[9])
        y = F.embedding(tokens, w[10])
        y = layer_norm(y + cross(y, enc, 11), w[19], w[20])
        return [F.linear(y, w[21], w[22])]
    if name == "mask":
        q, k, v = (F.linear(x, w[2 * i], w[2 * i + 1]) for i in range(3))
        causal = torch.tril(torch.ones(4, 4, dtype=torch.bool))
        return [F.linear(attend(q, k, v, math.sqrt(8), causal), w[6], w[7])]
    if name == "multi":
        h = torch.tanh(F.linear(x, w[0], w[1]))
        logits = F.linear(h, w[2], w[3])
        return [h, logits, torch.sigmoid(logits)]
    if name == "old-mlp":
        h = F.relu(F.linear(x.flatten(1), w[0], w[1]))
        return [F.linear(h, w[2], w[3])]
    if name == "old-tosa":
        return [torch.tanh(x.reshape(4, 2, 3) * w[0] + w[1]).sum(2)]
    raise KeyError(name)


def target_spec(model, loss, result):
    shape = model["results"][result]
    if loss == "mse":
        return ("F32", shape)
    return ("I64", shape[:-1], shape[-1])


def make_data(name, directory, loss, result):
    model = MODELS[name]
    rng = np.random.default_rng(sum(map(ord, name)))
    tensors = {}
    for i, spec in enumerate(model["inputs"] +
                             [target_spec(model, loss, result)]):
        shape = [ROWS] + list(spec[1])
        if spec[0] == "F32":
            a = rng.normal(0, 1, shape).astype(np.float32)
        else:
            a = rng.integers(0, spec[2], shape).astype(np.int64)
        tensors["input%d" % i] = a
    import torch
    safetensors.save_file({k: torch.from_numpy(v) for k, v in tensors.items()},
                          os.path.join(directory, "data.safetensors"))


def make_learnable_data(directory, rows):
    rng = np.random.default_rng(1)
    tensors = {}
    for prefix, count in (("", rows), ("eval_", max(1, rows // 4))):
        images = rng.normal(0, 1, [count, 2, 3, 8, 8]).astype(np.float32)
        labels = rng.integers(0, 3, [count, 2])
        images[np.arange(count)[:, None], np.arange(2)[None, :], labels] += 0.5
        tensors[prefix + "input0"] = images
        tensors[prefix + "input1"] = labels.astype(np.int64)
    import torch
    safetensors.save_file({k: torch.from_numpy(v) for k, v in tensors.items()},
                          os.path.join(directory, "data.safetensors"))


def load_weights(name, path):
    shapes = MODELS[name]["params"]
    stored = safetensors.load_file(path)
    by_position = {}
    for key, value in stored.items():
        match = re.fullmatch(r"__elided__(?:_(\d+))?", key)
        if not match:
            sys.exit("%s: weight '%s' is not an elided weight's name" %
                     (path, key))
        by_position[int(match.group(1) or 0)] = value
    if sorted(by_position) != list(range(len(shapes))):
        sys.exit("%s: %d weights (%s), the model has %d" %
                 (path, len(stored), ", ".join(sorted(stored)), len(shapes)))
    for i, shape in enumerate(shapes):
        if list(by_position[i].shape) != shape:
            sys.exit("%s: weight %d is %s, the model's is %s" %
                     (path, i, list(by_position[i].shape), shape))
    return [by_position[i] for i in range(len(shapes))]


def reference_loss(name, directory, loss, result, perturb):
    import torch
    import torch.nn.functional as F
    weights = [torch.from_numpy(a.astype(np.float32)) for a in
               load_weights(name, os.path.join(directory, "init.safetensors"))]
    if perturb:
        weights[0] = weights[0] * 1.1
    data = safetensors.load_file(os.path.join(directory, "data.safetensors"))
    count = len(MODELS[name]["inputs"])
    losses = []
    with torch.no_grad():
        for row in range(MICROBATCHES):
            inputs = [torch.from_numpy(data["input%d" % i][row])
                      for i in range(count)]
            out = forward(name, weights, inputs)[result]
            target = torch.from_numpy(data["input%d" % count][row])
            if loss == "mse":
                losses.append(float(F.mse_loss(out, target)))
            else:
                losses.append(float(F.cross_entropy(
                    out.reshape(-1, out.shape[-1]), target.reshape(-1))))
    return sum(losses) / len(losses)


def evaluate(name, directory, weights_path):
    import torch
    import torch.nn.functional as F
    weights = [torch.from_numpy(a.astype(np.float32))
               for a in load_weights(name, weights_path)]
    data = safetensors.load_file(os.path.join(directory, "data.safetensors"))
    images, labels = data["eval_input0"], data["eval_input1"]
    with torch.no_grad():
        losses = [float(F.cross_entropy(
            forward(name, weights, [torch.from_numpy(images[row])])[0],
            torch.from_numpy(labels[row]))) for row in range(len(images))]
    print("PyTorch eval loss on %s: %.4f" %
          (os.path.basename(weights_path), sum(losses) / len(losses)))


def first_loss(path):
    with open(path) as f:
        for line in f:
            record = json.loads(line)
            if "loss" in record:
                return record["loss"]
    sys.exit("%s: no loss" % path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("action", choices=["data", "check", "evaluate"])
    parser.add_argument("model", choices=sorted(MODELS))
    parser.add_argument("dir")
    parser.add_argument("weights", nargs="?")
    parser.add_argument("--loss", default="cross-entropy",
                        choices=["cross-entropy", "mse"])
    parser.add_argument("--result", type=int, default=0)
    parser.add_argument("--perturb", action="store_true")
    parser.add_argument("--learnable", type=int, metavar="ROWS")
    args = parser.parse_args()
    if args.learnable:
        if args.action != "data" or args.model != "cnn":
            parser.error("--learnable makes data for the cnn")
        make_learnable_data(args.dir, args.learnable)
        return
    if args.action == "evaluate":
        evaluate(args.model, args.dir, args.weights)
        return
    if args.action == "data":
        make_data(args.model, args.dir, args.loss, args.result)
        return
    want = reference_loss(args.model, args.dir, args.loss, args.result,
                          args.perturb)
    got = first_loss(os.path.join(args.dir, "log.jsonl"))
    if abs(got - want) > 1e-4 * max(1.0, abs(want)):
        sys.exit("%s: first loss %.9g, PyTorch %.9g" % (args.model, got, want))
    print("%s: first loss matches PyTorch (%.9g, PyTorch %.9g)" %
          (args.model, got, want))


if __name__ == "__main__":
    main()
