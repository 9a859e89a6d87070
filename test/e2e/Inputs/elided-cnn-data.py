#!/usr/bin/env python3
"""Checks of pipe-train-init.mlir's runs of Inputs/elided-cnn.mlir.

    elided-cnn-data.py same A.jsonl B.jsonl
    elided-cnn-data.py frozen INIT.safetensors FINAL.safetensors

`same` prints "same first loss" when the first "loss" of the two JSON logs
is equal, else both values. `frozen` prints "statistics frozen" when the
BatchNorm running mean and variance are 0 and 1 in both weight files and
the conv and linear weights changed between them. Standard library only.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import safetensors_f32  # noqa: E402


def first_loss(path):
    with open(path) as f:
        for line in f:
            record = json.loads(line)
            if "loss" in record:
                return record["loss"]
    sys.exit(f"{path}: no loss")


if sys.argv[1] == "frozen":
    init = safetensors_f32.read(sys.argv[2])
    final = safetensors_f32.read(sys.argv[3])
    ok = all(set(w["bn.running_mean"][1]) == {0.0} and
             set(w["bn.running_var"][1]) == {1.0} for w in (init, final))
    ok = ok and all(init[n][1] != final[n][1]
                    for n in ("conv.weight", "fc.weight"))
    print("statistics frozen" if ok else
          "statistics changed or weights did not train")
else:
    a, b = first_loss(sys.argv[2]), first_loss(sys.argv[3])
    print("same first loss" if a == b else f"first losses differ: {a} {b}")
