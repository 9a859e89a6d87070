#!/usr/bin/env python3
"""Independent forward reference for the two-layer ReLU MLP + MSE head of
test/e2e/host-schedules-agree.mlir.

    mlp-reference.py WEIGHTS DATA LOG.jsonl MICROBATCHES [AFTER LR]

loss(x, y) = sum((relu(relu(x @ w0) @ w1) @ w2 - y)^2) / 32 for each data
row; the first step's loss is the mean over the first MICROBATCHES rows.
Compares it with the "loss" of step 1 in the runner's JSON log (relative
tolerance 1e-5) and prints `reference loss L matches`. With AFTER (the
weights saved after that one step of plain SGD at rate LR), also
back-propagates by hand and checks AFTER = WEIGHTS - LR * mean gradient
(absolute tolerance 1e-6), printing `reference SGD step matches`. Exits 1
on any mismatch.
"""
import json
import sys

from safetensors_f32 import read


def matmul(a, b, n, k, m):
    return [sum(a[i * k + t] * b[t * m + j] for t in range(k))
            for i in range(n) for j in range(m)]


def transpose(a, rows, cols):
    return [a[i * cols + j] for j in range(cols) for i in range(rows)]


def main(argv):
    if len(argv) not in (5, 7):
        sys.exit(__doc__)
    w, d = read(argv[1]), read(argv[2])
    mbs = int(argv[4])
    rows, n, k = d["input0"][0]
    row = n * k
    losses = []
    grads = {name: [0.0] * (k * k) for name in ("w0", "w1", "w2")}
    for r in range(mbs):
        x = d["input0"][1][r * row:(r + 1) * row]
        y = d["input1"][1][r * row:(r + 1) * row]
        z1 = matmul(x, w["w0"][1], n, k, k)
        h1 = [max(v, 0.0) for v in z1]
        z2 = matmul(h1, w["w1"][1], n, k, k)
        h2 = [max(v, 0.0) for v in z2]
        p = matmul(h2, w["w2"][1], n, k, k)
        losses.append(sum((a - b) ** 2 for a, b in zip(p, y)) / 32.0)
        # Backward: dL/dp, then through each layer (relu' = [z > 0]).
        dp = [2.0 * (a - b) / 32.0 for a, b in zip(p, y)]
        dw2 = matmul(transpose(h2, n, k), dp, k, n, k)
        dz2 = [g * (z > 0) for g, z in
               zip(matmul(dp, transpose(w["w2"][1], k, k), n, k, k), z2)]
        dw1 = matmul(transpose(h1, n, k), dz2, k, n, k)
        dz1 = [g * (z > 0) for g, z in
               zip(matmul(dz2, transpose(w["w1"][1], k, k), n, k, k), z1)]
        dw0 = matmul(transpose(x, n, k), dz1, k, n, k)
        for name, g in (("w0", dw0), ("w1", dw1), ("w2", dw2)):
            grads[name] = [a + b / mbs for a, b in zip(grads[name], g)]
    reference = sum(losses) / mbs
    with open(argv[3]) as f:
        got = json.loads(f.readline())["loss"]
    if abs(got - reference) > 1e-5 * abs(reference):
        sys.exit("step 1 loss %.9g, reference %.9g" % (got, reference))
    print("reference loss %.6g matches" % reference)
    if len(argv) == 7:
        after, lr = read(argv[5]), float(argv[6])
        for name, g in sorted(grads.items()):
            want = [v - lr * gv for v, gv in zip(w[name][1], g)]
            diff = max(abs(a - b) for a, b in zip(after[name][1], want))
            if diff > 1e-6:
                sys.exit("'%s' after one SGD step differs from the reference "
                         "by %g" % (name, diff))
        print("reference SGD step matches")


if __name__ == "__main__":
    main(sys.argv)
