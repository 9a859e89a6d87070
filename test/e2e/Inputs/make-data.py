#!/usr/bin/env python3
"""Writes a small deterministic safetensors data file for pipe-runner.

    make-data.py OUT NAME:DTYPE:D0xD1x...:MOD[:SHIFT] [NAME:... ...]

Each tensor NAME gets DTYPE (F32, F64, I64 or I32) and shape D0xD1x...;
element i is (i * 7 + 3) % MOD; for float types it is divided by MOD and
SHIFT (default 0) is subtracted, so values lie in [-SHIFT, 1 - SHIFT). Standard library only; the layout follows the safetensors format
(8-byte little-endian header length, JSON header padded with spaces to a
multiple of 8, then the tensors' bytes in header order).
"""
import json
import struct
import sys

FORMATS = {"F32": "f", "F64": "d", "I64": "q", "I32": "i"}


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    header, blobs, offset = {}, [], 0
    for spec in argv[2:]:
        try:
            fields = spec.split(":")
            name, dtype, shape_text, mod_text = fields[:4]
            shift = float(fields[4]) if len(fields) == 5 else 0.0
            if len(fields) > 5:
                raise ValueError
            shape = [int(d) for d in shape_text.split("x")]
            mod = int(mod_text)
            fmt = FORMATS[dtype]
        except (ValueError, KeyError):
            sys.exit("bad tensor spec '%s' (NAME:DTYPE:D0xD1:MOD[:SHIFT])"
                     % spec)
        count = 1
        for d in shape:
            count *= d
        values = [(i * 7 + 3) % mod for i in range(count)]
        if dtype.startswith("F"):
            values = [v / mod - shift for v in values]
        blob = struct.pack("<%d%s" % (count, fmt), *values)
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(argv[1], "wb") as out:
        out.write(struct.pack("<Q", len(text)))
        out.write(text)
        for blob in blobs:
            out.write(blob)


if __name__ == "__main__":
    main(sys.argv)
