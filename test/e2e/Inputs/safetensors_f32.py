"""Reads the F32 tensors of a safetensors file with the standard library,
for the e2e tests' Python checkers (compare-weights.py, mlp-reference.py).
"""
import json
import struct
import sys


def read(path):
    """{name: (shape, values)}; exits naming the tensor if one is not F32."""
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        data = f.read()
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] != "F32":
            sys.exit("%s: tensor '%s' is %s, not F32" % (path, name,
                                                          info["dtype"]))
        begin, end = info["data_offsets"]
        values = struct.unpack_from("<%df" % ((end - begin) // 4), data, begin)
        tensors[name] = (info["shape"], values)
    return tensors
