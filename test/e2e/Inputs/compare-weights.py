#!/usr/bin/env python3
"""Compares the F32 tensors of two safetensors files.

    compare-weights.py A B TOLERANCE

Prints `match: N tensors, max abs diff D` when both files hold the same
tensor names and shapes and every element differs by at most TOLERANCE;
otherwise prints what differs and exits 1. Standard library only.
"""
import sys

from safetensors_f32 import read


def main(argv):
    if len(argv) != 4:
        sys.exit(__doc__)
    a, b, tolerance = read(argv[1]), read(argv[2]), float(argv[3])
    if sorted(a) != sorted(b):
        sys.exit("different tensors: %s vs %s" % (sorted(a), sorted(b)))
    worst = 0.0
    for name in sorted(a):
        if a[name][0] != b[name][0]:
            sys.exit("'%s': shape %s vs %s" % (name, a[name][0], b[name][0]))
        diff = max((abs(x - y) for x, y in zip(a[name][1], b[name][1])),
                   default=0.0)
        if not diff <= tolerance:
            sys.exit("'%s': max abs diff %g > %g" % (name, diff, tolerance))
        worst = max(worst, diff)
    print("match: %d tensors, max abs diff %g" % (len(a), worst))


if __name__ == "__main__":
    main(sys.argv)
