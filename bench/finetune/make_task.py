#!/usr/bin/env python3
"""Builds a text-classification task for pipe-train --classes.

Each class is one text file; a sample is a window of --seq bytes from it and
its label is the file's index. The first 90% of every file gives the
training windows and the last 10% the held-out ones, so no held-out byte is
ever trained on. Classes are balanced; windows start at seeded random
offsets. Output: a safetensors file with input0 [N, seq] (byte ids, i64),
input1 [N] (labels, i64) and eval_input0 / eval_input1, the format
pipe-train reads with --data (docs/finetune.md).

  make_task.py OUT.safetensors [--seq 64] [--train-per-class 2048]
               [--eval-per-class 256] [--seed 0] FILE...
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "python"))
from pipe_mlir import safetensors  # noqa: E402

HELD_OUT = 0.1


def windows(data: bytes, count: int, seq: int, rng) -> np.ndarray:
    if len(data) < seq + 1:
        raise ValueError(f"{len(data)} bytes is too short for windows of "
                         f"{seq}")
    starts = rng.integers(0, len(data) - seq + 1, size=count)
    raw = np.frombuffer(data, dtype=np.uint8)
    return np.stack([raw[s:s + seq] for s in starts]).astype(np.int64)


def build(files, seq=64, train_per_class=2048, eval_per_class=256, seed=0):
    rng = np.random.default_rng(seed)
    parts = {"train": ([], []), "eval": ([], [])}
    for label, path in enumerate(files):
        with open(path, "rb") as f:
            data = f.read()
        cut = int(len(data) * (1 - HELD_OUT))
        for split, chunk, count in (("train", data[:cut], train_per_class),
                                    ("eval", data[cut:], eval_per_class)):
            try:
                x = windows(chunk, count, seq, rng)
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
    p.add_argument("--train-per-class", type=int, default=2048)
    p.add_argument("--eval-per-class", type=int, default=256)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    tensors = build(a.files, a.seq, a.train_per_class, a.eval_per_class,
                    a.seed)
    safetensors.save_file(tensors, a.out)
    print(f"{a.out}: {len(a.files)} classes, "
          f"{len(tensors['input1'])} train and "
          f"{len(tensors['eval_input1'])} held-out windows of {a.seq} bytes")


if __name__ == "__main__":
    main()
