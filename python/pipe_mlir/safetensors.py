"""Safetensors files with the standard library (and torch tensors or NumPy
arrays when given them). Same layout as the project's C++ writer
(docs/safetensors.md): `__metadata__` first, tensors by decreasing element
size then name, naturally aligned, header padded with spaces to 8 bytes."""

import json
import struct
from typing import Dict, Optional, Tuple

_DTYPES = {  # torch dtype name -> (safetensors dtype, bytes)
    "float64": ("F64", 8), "float32": ("F32", 4), "float16": ("F16", 2),
    "bfloat16": ("BF16", 2), "int64": ("I64", 8), "int32": ("I32", 4),
    "int16": ("I16", 2), "int8": ("I8", 1), "uint8": ("U8", 1),
    "bool": ("BOOL", 1),
}


def _describe(tensor) -> Tuple[str, int, list, bytes]:
    """A torch tensor or a NumPy array (little-endian bytes, C order)."""
    name = str(tensor.dtype).replace("torch.", "")
    if name not in _DTYPES:
        raise ValueError(f"unsupported dtype {tensor.dtype}")
    dtype, size = _DTYPES[name]
    if not hasattr(tensor, "detach"):
        data = tensor.astype(tensor.dtype.newbyteorder("<"), order="C")
        return dtype, size, [int(s) for s in tensor.shape], data.tobytes()
    data = tensor.detach().contiguous().cpu()
    if name == "bfloat16":
        raw = data.view(__import__("torch").int16).numpy().tobytes()
    else:
        raw = data.numpy().tobytes()
    return dtype, size, [int(s) for s in tensor.shape], raw


def save_file(tensors: Dict[str, object], path: str,
              metadata: Optional[Dict[str, str]] = None) -> None:
    described = {name: _describe(t) for name, t in tensors.items()}
    order = sorted(described, key=lambda n: (-described[n][1], n))
    header: Dict[str, object] = {}
    if metadata:
        header["__metadata__"] = dict(sorted(metadata.items()))
    offset = 0
    for name in order:
        dtype, _, shape, raw = described[name]
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as out:
        out.write(struct.pack("<Q", len(text)))
        out.write(text)
        for name in order:
            out.write(described[name][3])


def load_header(path: str) -> Dict[str, object]:
    with open(path, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        return json.loads(f.read(length))


_NUMPY = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8",
          "I32": "<i4", "I16": "<i2", "I8": "i1", "U8": "u1", "BOOL": "?"}


def load_file(path: str) -> Dict[str, object]:
    """Every tensor of a safetensors file as a numpy array (BF16 widened to
    float32), by name; `__metadata__` is left out (see `load_header`)."""
    import numpy as np
    with open(path, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(length))
        data = f.read()
    tensors: Dict[str, object] = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        if not 0 <= begin <= end <= len(data):
            raise ValueError(f"{path}: tensor '{name}' lies outside the file")
        raw = data[begin:end]
        dtype = entry["dtype"]
        if dtype == "BF16":
            bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
            array = bits.view(np.float32)
        elif dtype in _NUMPY:
            array = np.frombuffer(raw, dtype=_NUMPY[dtype]).copy()
        else:
            raise ValueError(f"{path}: tensor '{name}' has unsupported "
                             f"dtype {dtype}")
        tensors[name] = array.reshape(entry["shape"])
    return tensors
