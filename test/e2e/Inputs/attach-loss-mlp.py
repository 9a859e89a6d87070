#!/usr/bin/env python3
"""An inference MLP for pipe-train --loss, and its PyTorch reference.

    attach-loss-mlp.py make DIR KIND
    attach-loss-mlp.py check DIR KIND REDUCTION LOG.jsonl MICROBATCHES
    attach-loss-mlp.py target DIR VALUE
    attach-loss-mlp.py accuracy DIR LOG.jsonl

`make` writes DIR/model.mlir, a hand-written linalg-on-tensors export of
x[4,8] -> linear(8,16) -> relu -> linear(16,5) returning (hidden, logits)
with fixed pseudo-random weights inline, and DIR/data.safetensors with
`input0` (features, [ROWS,4,8]) and `input1` (targets: class indices
[ROWS,4] with one -100 for cross-entropy and nll, [ROWS,4,5] floats for
mse). `check` computes the step-1 loss with torch.nn.functional on the same
weights and data (the mean over the first MICROBATCHES rows) and compares
it with the first "loss" of the JSON log (tolerance 1e-4 relative).
`target` writes DIR/target-VALUE.safetensors, the cross-entropy data with
row 1 element 3 of `input1` set to VALUE (range checks of the targets);
`target DIR ignored-row` the data with every target of row 1 -100
(`ignored-all`: every target), and
`check DIR cross-entropy-ignored-row ...` checks against it (a micro-batch
without a counted target contributes 0, where PyTorch's mean is NaN).
For the class kinds, `make` also writes the same rows as the held-out split
(`eval_input0`, `eval_input1`); `accuracy` recomputes the accuracy of the
initial weights on them with NumPy (a hit: the target's score is its row's
largest; -100 not counted) and compares it with the last "eval_accuracy"
of the JSON log (a run at --lr 0), exactly.
"""
import json
import struct
import sys

import numpy as np

ROWS, BATCH, IN, HIDDEN, CLASSES = 4, 4, 8, 16, 5


def weights():
    rng = np.random.default_rng(7)
    w1 = rng.normal(0, 0.5, (IN, HIDDEN)).astype(np.float32)
    b1 = rng.normal(0, 0.1, (HIDDEN,)).astype(np.float32)
    w2 = rng.normal(0, 0.5, (HIDDEN, CLASSES)).astype(np.float32)
    b2 = rng.normal(0, 0.1, (CLASSES,)).astype(np.float32)
    return w1, b1, w2, b2


def data(kind):
    rng = np.random.default_rng(11)
    x = rng.normal(0, 1, (ROWS, BATCH, IN)).astype(np.float32)
    if kind == "mse":
        y = rng.normal(0, 1, (ROWS, BATCH, CLASSES)).astype(np.float32)
    else:
        y = rng.integers(0, CLASSES, (ROWS, BATCH)).astype(np.int64)
        y[0, 2] = -100  # ignored by torch's default ignore_index
        if kind == "cross-entropy-ignored-row":
            y[1, :] = -100
    return x, y


def dense(a):
    body = ", ".join("%.9e" % v for v in a.reshape(-1))
    return "dense<[%s]>" % body if a.ndim == 1 else "dense<%s>" % (
        "[" + ", ".join("[" + ", ".join("%.9e" % v for v in row) + "]"
                        for row in a) + "]")


def linear(name, x, w, b, n, k, m):
    return f"""
    %{name}_w = arith.constant {dense(w)} : tensor<{k}x{m}xf32>
    %{name}_b = arith.constant {dense(b)} : tensor<{m}xf32>
    %{name}_e = tensor.empty() : tensor<{n}x{m}xf32>
    %{name}_z = linalg.fill ins(%zero : f32) outs(%{name}_e : tensor<{n}x{m}xf32>) -> tensor<{n}x{m}xf32>
    %{name}_mm = linalg.matmul ins(%{x}, %{name}_w : tensor<{n}x{k}xf32>, tensor<{k}x{m}xf32>) outs(%{name}_z : tensor<{n}x{m}xf32>) -> tensor<{n}x{m}xf32>
    %{name} = linalg.generic {{indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}} ins(%{name}_mm, %{name}_b : tensor<{n}x{m}xf32>, tensor<{m}xf32>) outs(%{name}_e : tensor<{n}x{m}xf32>) {{
    ^bb0(%a: f32, %c: f32, %o: f32):
      %s = arith.addf %a, %c : f32
      linalg.yield %s : f32
    }} -> tensor<{n}x{m}xf32>"""


def model():
    w1, b1, w2, b2 = weights()
    return f"""#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
module {{
  func.func @forward(%x: tensor<{BATCH}x{IN}xf32>) -> (tensor<{BATCH}x{HIDDEN}xf32>, tensor<{BATCH}x{CLASSES}xf32>) {{
    %zero = arith.constant 0.000000e+00 : f32
{linear("fc1", "x", w1, b1, BATCH, IN, HIDDEN)}
    %h_e = tensor.empty() : tensor<{BATCH}x{HIDDEN}xf32>
    %h = linalg.generic {{indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}} ins(%fc1 : tensor<{BATCH}x{HIDDEN}xf32>) outs(%h_e : tensor<{BATCH}x{HIDDEN}xf32>) {{
    ^bb0(%a: f32, %o: f32):
      %r = arith.maximumf %a, %zero : f32
      linalg.yield %r : f32
    }} -> tensor<{BATCH}x{HIDDEN}xf32>
{linear("fc2", "h", w2, b2, BATCH, HIDDEN, CLASSES)}
    return %h, %fc2 : tensor<{BATCH}x{HIDDEN}xf32>, tensor<{BATCH}x{CLASSES}xf32>
  }}
}}
"""


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, a in tensors.items():
        raw = np.ascontiguousarray(a).tobytes()
        dtype = {np.float32: "F32", np.int64: "I64"}[a.dtype.type]
        header[name] = {"dtype": dtype, "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def reference(kind, reduction, microbatches):
    import torch
    import torch.nn.functional as F
    w1, b1, w2, b2 = (torch.from_numpy(a) for a in weights())
    x, y = data(kind)
    losses = []
    for r in range(microbatches):
        logits = torch.relu(torch.from_numpy(x[r]) @ w1 + b1) @ w2 + b2
        target = torch.from_numpy(y[r])
        if kind.startswith("cross-entropy"):
            loss = F.cross_entropy(logits, target, reduction=reduction)
            if bool((target == -100).all()):
                loss = torch.tensor(0.0)
        elif kind == "nll":
            loss = F.nll_loss(logits, target, reduction=reduction)
        else:
            loss = F.mse_loss(logits, target, reduction=reduction)
        losses.append(float(loss))
    return sum(losses) / microbatches


def main(argv):
    if len(argv) == 4 and argv[1] == "make":
        with open(argv[2] + "/model.mlir", "w") as f:
            f.write(model())
        x, y = data(argv[3])
        tensors = {"input0": x, "input1": y}
        if argv[3] != "mse":
            tensors.update({"eval_input0": x, "eval_input1": y})
        write_safetensors(argv[2] + "/data.safetensors", tensors)
    elif len(argv) == 4 and argv[1] == "target":
        if argv[3] == "ignored-row":
            x, y = data("cross-entropy-ignored-row")
        elif argv[3] == "ignored-all":
            x, y = data("cross-entropy")
            y[:] = -100
        else:
            x, y = data("cross-entropy")
            y[1, 3] = int(argv[3])
        write_safetensors("%s/target-%s.safetensors" % (argv[2], argv[3]),
                          {"input0": x, "input1": y})
    elif len(argv) == 7 and argv[1] == "check":
        kind, reduction, log, mbs = argv[3], argv[4], argv[5], int(argv[6])
        want = reference(kind, reduction, mbs)
        with open(log) as f:
            got = json.loads(f.readline())["loss"]
        if abs(got - want) > 1e-4 * max(1.0, abs(want)):
            sys.exit("%s %s: step 1 loss %.9g, PyTorch %.9g"
                     % (kind, reduction, got, want))
        print("%s %s: loss matches PyTorch (%.9g, PyTorch %.9g)"
              % (kind, reduction, got, want))
    elif len(argv) == 4 and argv[1] == "accuracy":
        w1, b1, w2, b2 = weights()
        x, y = data("cross-entropy")
        logits = np.maximum(x @ w1 + b1, 0) @ w2 + b2
        counted = y != -100
        picked = np.take_along_axis(logits, np.where(counted, y, 0)[..., None],
                                    axis=-1)[..., 0]
        hits = int(np.sum(counted & (picked >= logits.max(axis=-1))))
        want = hits / int(counted.sum())
        with open(argv[3]) as f:
            got = [json.loads(l) for l in f if "eval_accuracy" in l][-1]
        if got["eval_accuracy"] != want:
            sys.exit("accuracy %r, NumPy %r (%d of %d)"
                     % (got["eval_accuracy"], want, hits, counted.sum()))
        print("accuracy matches NumPy (%d of %d)" % (hits, counted.sum()))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
