#!/usr/bin/env python3
"""Data for Inputs/elided-cnn.mlir, and the first losses of two runs.

    elided-cnn-data.py make FILE
    elided-cnn-data.py same A.jsonl B.jsonl
    elided-cnn-data.py frozen INIT.safetensors FINAL.safetensors

`make` writes FILE, a safetensors file with `input0` (images,
[ROWS,2,3,4,4] f32) and `input1` (class indices in [0, 5), [ROWS,2] i64).
`same` prints "same first loss" when the first "loss" of the two JSON logs
is equal, else both values. `frozen` prints "statistics frozen" when the
BatchNorm running mean and variance are 0 and 1 in both weight files and
the conv and linear weights changed between them.
"""
import json
import struct
import sys

import numpy as np


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, array in tensors.items():
        data = array.tobytes()
        dtype = {np.float32: "F32", np.int64: "I64"}[array.dtype.type]
        header[name] = {"dtype": dtype, "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def first_loss(path):
    with open(path) as f:
        for line in f:
            record = json.loads(line)
            if "loss" in record:
                return record["loss"]
    raise SystemExit(f"{path}: no loss")


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    size = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + size])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        out[name] = np.frombuffer(raw[8 + size + begin:8 + size + end],
                                  dtype=np.float32)
    return out


if sys.argv[1] == "make":
    rng = np.random.default_rng(3)
    rows = 8
    write_safetensors(sys.argv[2], {
        "input0": rng.normal(0, 1, (rows, 2, 3, 4, 4)).astype(np.float32),
        "input1": rng.integers(0, 5, (rows, 2)).astype(np.int64),
    })
elif sys.argv[1] == "frozen":
    init, final = read_safetensors(sys.argv[2]), read_safetensors(sys.argv[3])
    ok = all((w["bn.running_mean"] == 0).all() and
             (w["bn.running_var"] == 1).all() for w in (init, final))
    ok = ok and all((init[n] != final[n]).any()
                    for n in ("conv.weight", "fc.weight"))
    print("statistics frozen" if ok else "statistics changed or weights did "
          "not train")
else:
    a, b = first_loss(sys.argv[2]), first_loss(sys.argv[3])
    print("same first loss" if a == b else f"first losses differ: {a} {b}")
