#!/usr/bin/python3
"""Writes safetensors files the way PyTorch-side tooling lays them out.

Standard library only (struct + json), following the format: an 8-byte
little-endian header length, a JSON header padded with spaces to a multiple
of 8 bytes ("__metadata__" first, then the tensors), then the data buffer with
tensors ordered by decreasing element size and then by name.

    /usr/bin/python3 make_safetensors.py OUT.safetensors   # the unit-test file

`save()` also accepts torch tensors when Debian's python3-torch is installed;
torch is never required.
"""

import ctypes
import json
import struct
import sys

# dtype name -> (bytes per element, struct format character or None)
DTYPES = {
    "F64": (8, "d"),
    "F32": (4, "f"),
    "F16": (2, "e"),
    "BF16": (2, None),  # struct has no bfloat16: see bf16_bits()
    "I64": (8, "q"),
    "I32": (4, "i"),
    "I16": (2, "h"),
    "I8": (1, "b"),
    "U8": (1, "B"),
    "BOOL": (1, "?"),
}


def bf16_bits(value):
    """bfloat16 bit pattern of `value` (round to nearest even)."""
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    bits += 0x7FFF + ((bits >> 16) & 1)
    return (bits >> 16) & 0xFFFF


def pack(dtype, values):
    """Little-endian bytes of a flat list of Python numbers."""
    if dtype == "BF16":
        return struct.pack("<%dH" % len(values), *[bf16_bits(v) for v in values])
    return struct.pack("<%d%s" % (len(values), DTYPES[dtype][1]), *values)


def _torch_entry(tensor):
    import torch  # only reached when the caller passed a torch tensor

    names = {
        torch.float64: "F64", torch.float32: "F32", torch.float16: "F16",
        torch.bfloat16: "BF16", torch.int64: "I64", torch.int32: "I32",
        torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8",
        torch.bool: "BOOL",
    }
    if tensor.dtype not in names:
        raise ValueError("unsupported torch dtype %s" % tensor.dtype)
    if sys.byteorder != "little":
        raise ValueError("torch tensors are only supported on little-endian hosts")
    flat = tensor.detach().cpu().contiguous()
    # Copy the raw bytes straight out of the (contiguous, CPU) storage:
    # numpy is not needed, and it has no bfloat16 anyway.
    raw = ctypes.string_at(flat.data_ptr(), flat.numel() * flat.element_size())
    return names[tensor.dtype], list(tensor.shape), raw


def save(tensors, path, metadata=None):
    """Writes `tensors` to `path`.

    `tensors` maps a name to a torch tensor or to (dtype, shape, values),
    where values is a flat list of numbers or already packed bytes.
    """
    entries = []
    for name, value in tensors.items():
        if isinstance(value, tuple):
            dtype, shape, data = value
            if not isinstance(data, (bytes, bytearray)):
                data = pack(dtype, data)
        else:
            dtype, shape, data = _torch_entry(value)
        count = 1
        for dim in shape:
            count *= dim
        if count * DTYPES[dtype][0] != len(data):
            raise ValueError("%s: %d bytes for shape %s of %s"
                             % (name, len(data), shape, dtype))
        entries.append((name, dtype, list(shape), bytes(data)))

    # Largest elements first keeps every tensor naturally aligned.
    entries.sort(key=lambda e: (-DTYPES[e[1]][0], e[0]))
    header = {}
    if metadata:
        header["__metadata__"] = {k: metadata[k] for k in sorted(metadata)}
    offset = 0
    for name, dtype, shape, data in entries:
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as out:
        out.write(struct.pack("<Q", len(text)))
        out.write(text)
        for entry in entries:
            out.write(entry[3])


# The tensors of test/unit/Support/Inputs/tiny.safetensors. SafetensorsTest
# checks these exact values, and that the C++ writer reproduces the file
# byte for byte.
def tiny_tensors():
    return {
        "embed.weight": ("F32", [2, 3], [0.0, 0.5, 1.0, 1.5, 2.0, 2.5]),
        "layers.0.bias": ("F16", [3], [1.5, -2.0, 0.25]),
        "layers.0.scale": ("BF16", [2], [1.0, -2.0]),
        "step": ("I64", [], [42]),
        "ids": ("I32", [2, 2], [1, -2, 3, -4]),
        "offsets": ("I16", [2], [-300, 300]),
        "signs": ("I8", [3], [-1, 0, 1]),
        "bytes": ("U8", [3], [0, 127, 255]),
        "mask": ("BOOL", [4], [True, False, True, True]),
        "lr": ("F64", [1], [0.001]),
        "empty": ("F32", [0, 4], []),
    }


TINY_METADATA = {"format": "pt", "producer": "make_safetensors.py"}


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: make_safetensors.py OUT.safetensors\n")
        return 2
    save(tiny_tensors(), argv[1], TINY_METADATA)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
