#!/usr/bin/env python3
"""Writes hostile safetensors files for the reader tests, into OUTDIR.

    make-bad-safetensors.py OUTDIR

good.safetensors is valid (F32 w [2]); every other file breaks one rule of
the readers (docs/safetensors.md), named after it; trunc-<n>.safetensors is
good.safetensors cut after n bytes: every n in the length field and the
first header bytes, then every 6th and the last (each file costs a tool run;
the fuzzers try every cut in-process).
"""

import json
import os
import struct
import sys

W = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
DATA = struct.pack("<2f", 1.0, 2.0)


def raw(header, data=DATA, length=None):
    """A file whose header is the bytes `header` (str or bytes)."""
    if isinstance(header, str):
        header = header.encode()
    return struct.pack("<Q", len(header) if length is None else length) + \
        header + data


def of(entries, data=DATA):
    return raw(json.dumps(entries), data)


CASES = {
    "good": of({"w": W}),
    "dup-tensor": raw('{"w": %s, "w": %s}' % (json.dumps(W), json.dumps(W))),
    "dup-field": raw('{"w": {"dtype": "F32", "dtype": "F32", "shape": [2], '
                     '"data_offsets": [0, 8]}}'),
    "unknown-field": of({"w": dict(W, extra=1)}),
    "metadata-not-string": of({"__metadata__": {"k": 1}, "w": W}),
    "metadata-dup-key": raw('{"__metadata__": {"k": "a", "k": "b"}, "w": %s}'
                            % json.dumps(W)),
    "gap": of({"w": dict(W, data_offsets=[4, 12])}, DATA + DATA[:4]),
    "trailing": of({"w": W}, DATA + b"\0"),
    "overlap": of({"w": W, "v": dict(W, data_offsets=[4, 12])},
                  DATA + DATA[:4]),
    "overflow": of({"w": dict(W, shape=[2**62, 2**62])}),
    "size-mismatch": of({"w": dict(W, shape=[3])}),
    "header-beyond-file": raw(json.dumps({"w": W}), length=10**6),
    "header-over-budget": raw(json.dumps({"w": W}), length=100000001),
    "not-utf8": raw(b'{"w\xff": ' + json.dumps(W).encode() + b"}"),
    "malformed-json": raw('{"w": {"dtype": "F32", "shape": [2], '
                          '"data_offsets": [0, 8]'),
}


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    os.makedirs(argv[1], exist_ok=True)
    for name, contents in CASES.items():
        with open(os.path.join(argv[1], name + ".safetensors"), "wb") as f:
            f.write(contents)
    good = CASES["good"]
    cuts = sorted(set(range(10)) | set(range(10, len(good), 6)) |
                  {len(good) - 1})
    for n in cuts:
        with open(os.path.join(argv[1], "trunc-%d.safetensors" % n),
                  "wb") as f:
            f.write(good[:n])


if __name__ == "__main__":
    main(sys.argv)
