#!/usr/bin/env python3
"""Builds a text-classification task for pipe-train --classes.

Each class is one text file; a sample is a window of --seq bytes from it and
its label is the file's index. Every file is cut into blocks of --block
bytes; every tenth block is held out, the others give the training
windows, and a window never crosses a block, so no held-out byte is ever
trained on while both splits sample the whole text (a licence's last tenth
alone is boilerplate). Classes are balanced; windows start at seeded
random offsets. Output: a safetensors file with input0 [N, seq] (byte ids, i64),
input1 [N] (labels, i64) and eval_input0 / eval_input1, the format
pipe-train reads with --data (docs/finetune.md).

  make_task.py OUT.safetensors [--seq 64] [--block 512]
               [--train-per-class 2048] [--eval-per-class 256] [--seed 0]
               FILE...
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "python"))
from pipe_mlir import safetensors  # noqa: E402

HELD_OUT_EVERY = 10  # block k is held out when k % 10 == 9


def windows(blocks, count: int, seq: int, rng) -> np.ndarray:
    """`count` windows of `seq` bytes, each inside one of `blocks` (chosen
    in proportion to the windows it holds)."""
    fits = np.array([max(0, len(b) - seq + 1) for b in blocks], dtype=float)
    if fits.sum() == 0:
        raise ValueError(f"no block holds a window of {seq} bytes")
    picks = rng.choice(len(blocks), size=count, p=fits / fits.sum())
    rows = []
    for k in picks:
        start = rng.integers(0, fits[k])
        rows.append(np.frombuffer(blocks[k], dtype=np.uint8)[start:start + seq])
    return np.stack(rows).astype(np.int64)


def build(files, seq=64, train_per_class=2048, eval_per_class=256, seed=0,
          block=512):
    if block < seq:
        raise SystemExit(f"--block {block} is shorter than --seq {seq}")
    rng = np.random.default_rng(seed)
    parts = {"train": ([], []), "eval": ([], [])}
    for label, path in enumerate(files):
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise SystemExit(f"{path}: {e.strerror}")
        blocks = [data[i:i + block] for i in range(0, len(data), block)]
        split_blocks = {
            "train": [b for k, b in enumerate(blocks)
                      if k % HELD_OUT_EVERY != HELD_OUT_EVERY - 1],
            "eval": [b for k, b in enumerate(blocks)
                     if k % HELD_OUT_EVERY == HELD_OUT_EVERY - 1]}
        for split, count in (("train", train_per_class),
                             ("eval", eval_per_class)):
            try:
                x = windows(split_blocks[split], count, seq, rng)
            except ValueError as e:
                raise SystemExit(f"{path} ({split} part): {e}")
            parts[split][0].append(x)
            parts[split][1].append(np.full(count, label, dtype=np.int64))
    out = {}
    for split, prefix in (("train", ""), ("eval", "eval_")):
        x = np.concatenate(parts[split][0])
        y = np.concatenate(parts[split][1])
        order = rng.permutation(len(y))
        out[prefix + "input0"] = x[order]
        out[prefix + "input1"] = y[order]
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out")
    p.add_argument("files", nargs="+")
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--block", type=int, default=512)
    p.add_argument("--train-per-class", type=int, default=2048)
    p.add_argument("--eval-per-class", type=int, default=256)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    tensors = build(a.files, a.seq, a.train_per_class, a.eval_per_class,
                    a.seed, a.block)
    safetensors.save_file(tensors, a.out)
    print(f"{a.out}: {len(a.files)} classes, "
          f"{len(tensors['input1'])} train and "
          f"{len(tensors['eval_input1'])} held-out windows of {a.seq} bytes")


if __name__ == "__main__":
    main()
