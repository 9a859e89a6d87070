#!/usr/bin/env python3
"""Writes a copy of a safetensors file with one tensor's bytes changed.

  patch-safetensors.py IN OUT NAME VALUE

NAME may be a glob (the first tensor in file order that matches). An I64
scalar gets the integer VALUE, or its value plus N for VALUE `add:N`; for a
float tensor, VALUE is `nan@K` or `inf@K` (element K becomes that). The
header is kept, so only the value differs from IN: a crafted checkpoint,
well formed otherwise.
"""

import fnmatch
import json
import struct
import sys


def main():
    src, dst, name, value = sys.argv[1:5]
    data = bytearray(open(src, "rb").read())
    (n,) = struct.unpack_from("<Q", data, 0)
    header = json.loads(data[8:8 + n])
    names = sorted((v["data_offsets"][0], k) for k, v in header.items()
                   if k != "__metadata__" and fnmatch.fnmatchcase(k, name))
    if not names:
        sys.exit("patch-safetensors: no tensor %r in %s" % (name, src))
    info = header[names[0][1]]
    begin = 8 + n + info["data_offsets"][0]
    if info["dtype"] == "I64":
        if value.startswith("add:"):
            value = struct.unpack_from("<q", data, begin)[0] + int(value[4:])
        struct.pack_into("<q", data, begin, int(value))
    elif info["dtype"] in ("F32", "F64"):
        special, k = value.split("@")
        fmt = "<f" if info["dtype"] == "F32" else "<d"
        struct.pack_into(fmt, data, begin + int(k) * struct.calcsize(fmt),
                         float(special))
    else:
        sys.exit("patch-safetensors: cannot patch %s" % info["dtype"])
    open(dst, "wb").write(data)


if __name__ == "__main__":
    main()
