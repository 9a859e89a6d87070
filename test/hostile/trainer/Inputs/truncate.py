#!/usr/bin/env python3
"""Writes truncated copies of a file, for the hostile-input tests.

  truncate.py FILE PREFIX

Writes PREFIX-<k>0.so for every tenth k of FILE's size (0% .. 90%), and
PREFIX-hdr.so (64 bytes: one ELF header), PREFIX-63.so (63 bytes, less than
a header) and PREFIX-short.so (one byte short).
"""

import sys


def main():
    path, prefix = sys.argv[1:3]
    data = open(path, "rb").read()
    cuts = {"%d0" % k: len(data) * k // 10 for k in range(10)}
    cuts.update({"hdr": 64, "63": 63, "short": len(data) - 1})
    for name, size in cuts.items():
        with open("%s-%s.so" % (prefix, name), "wb") as f:
            f.write(data[:size])


if __name__ == "__main__":
    main()
