#!/usr/bin/env python3
"""Writes a safetensors file of integer rows for the data-range tests.

    ids.py OUT [--shape 2x16] [--rows 2] [--fill V] [--eval]
               [--set NAME:ROW:ELEMENT:VALUE ...]

Tensors input0 and input1 (and eval_input0/1 with --eval), I64 of shape
[rows, *shape], every element V (default 1); each --set overwrites element
ELEMENT (row-major within the row) of row ROW of tensor NAME. Standard
library only: an 8-byte little-endian header length, the JSON header, then
the raw bytes in header order.
"""
import argparse
import json
import struct


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--shape", default="2x16")
    parser.add_argument("--rows", type=int, default=2)
    parser.add_argument("--fill", type=int, default=1)
    parser.add_argument("--eval", action="store_true")
    parser.add_argument("--set", action="append", default=[])
    args = parser.parse_args()
    shape = [int(d) for d in args.shape.split("x")]
    per_row = 1
    for d in shape:
        per_row *= d
    names = ["input0", "input1"]
    if args.eval:
        names += ["eval_input0", "eval_input1"]
    values = {n: [args.fill] * (args.rows * per_row) for n in names}
    for spec in args.set:
        name, row, element, value = spec.split(":")
        values[name][int(row) * per_row + int(element)] = int(value)
    header, blobs, offset = {}, [], 0
    for name in names:
        blob = struct.pack("<%dq" % len(values[name]), *values[name])
        header[name] = {"dtype": "I64", "shape": [args.rows] + shape,
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(args.out, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


if __name__ == "__main__":
    main()
