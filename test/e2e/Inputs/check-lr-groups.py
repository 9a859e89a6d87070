"""check-lr-groups.py: bit-level checks of parameter groups on safetensors
weights written by pipe-train (test/e2e/pipe-train-lr-groups.mlir).

  same A B WHICH     every param WHICH selects is bit-identical in A and B
  differ A B WHICH   every param WHICH selects differs between A and B
  decay INIT PLAIN DECAYED LR WD
                     one AdamW step from INIT, without (PLAIN) and with
                     (DECAYED) decoupled weight decay on the params of rank
                     0 or 1: DECAYED - PLAIN is the decay term -LR*WD*INIT
                     (NumPy replay of torch.optim.AdamW's p *= 1 - lr*wd)

WHICH: glob:PATTERN or not:PATTERN (fnmatch on the whole name, as
pipe-train's globs), rank<2 or rank>=2. Prints one summary line; exits
non-zero naming the first param that fails."""
import fnmatch
import struct
import sys

import numpy as np

import safetensors_f32


def selector(which):
    kind, _, pattern = which.partition(":")
    if kind == "glob":
        return lambda name, shape: fnmatch.fnmatchcase(name, pattern)
    if kind == "not":
        return lambda name, shape: not fnmatch.fnmatchcase(name, pattern)
    if which == "rank<2":
        return lambda name, shape: len(shape) < 2
    if which == "rank>=2":
        return lambda name, shape: len(shape) >= 2
    sys.exit("unknown selection '%s'" % which)


def bits(values):
    # Compare the bits, not the values: -0.0 == 0.0.
    return struct.pack("<%df" % len(values), *values)


def compare(mode, path_a, path_b, which):
    a, b = safetensors_f32.read(path_a), safetensors_f32.read(path_b)
    picks = selector(which)
    count = 0
    for name, (shape, values) in sorted(a.items()):
        if not picks(name, shape):
            continue
        same = bits(values) == bits(b[name][1])
        if same != (mode == "same"):
            sys.exit("param '%s' %s between %s and %s" %
                     (name, "differs" if mode == "same" else "is the same",
                      path_a, path_b))
        count += 1
    if count == 0:
        sys.exit("'%s' selects no param" % which)
    print("%s: %d params %s" %
          (which, count, "bit-identical" if mode == "same" else "differ"))


def decay(init_path, plain_path, decayed_path, lr, wd):
    init = safetensors_f32.read(init_path)
    plain = safetensors_f32.read(plain_path)
    decayed = safetensors_f32.read(decayed_path)
    moved = 0
    worst = 0.0
    for name, (shape, values) in sorted(init.items()):
        if len(shape) >= 2:
            continue
        p0 = np.array(values, dtype=np.float64)
        got = (np.array(decayed[name][1], dtype=np.float64) -
               np.array(plain[name][1], dtype=np.float64))
        want = -lr * wd * p0
        # The two runs round p0 * (1 - lr*wd) + update and p0 + update.
        err = np.abs(got - want).max()
        worst = max(worst, err)
        if err > 1e-6:
            sys.exit("param '%s': the decay term is off by %g" % (name, err))
        moved += bool(np.any(want != 0))
    if moved == 0:
        sys.exit("no param of rank 0 or 1 has a non-zero decay term")
    print("rank<2: decay term -lr*wd*p0 on %d params (max error %.1e)" %
          (moved, worst))


def main(argv):
    if argv[1] in ("same", "differ") and len(argv) == 5:
        compare(argv[1], argv[2], argv[3], argv[4])
    elif argv[1] == "decay" and len(argv) == 7:
        decay(argv[2], argv[3], argv[4], float(argv[5]), float(argv[6]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
