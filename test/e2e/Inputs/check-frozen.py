"""check-frozen.py INIT FINAL CHECKPOINT GLOB...: the params the globs name
(fnmatch on the whole name, as pipe-freeze-params) are bit-identical in
INIT and FINAL and have no optimizer state in CHECKPOINT; every other
param changed and has its AdamW state. Prints one summary line."""
import fnmatch
import json
import struct
import sys

import safetensors_f32


def names(path):
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        return set(json.loads(f.read(size))) - {"__metadata__"}


def main(argv):
    init = safetensors_f32.read(argv[1])
    final = safetensors_f32.read(argv[2])
    checkpoint = names(argv[3])
    globs = argv[4:]
    frozen = trained = 0
    for name, (_, before) in sorted(init.items()):
        after = final[name][1]
        state = {name + ".exp_avg", name + ".exp_avg_sq"} & checkpoint
        # Compare the bits, not the values: -0.0 == 0.0.
        same = struct.pack("<%df" % len(before), *before) == struct.pack(
            "<%df" % len(after), *after)
        if any(fnmatch.fnmatchcase(name, g) for g in globs):
            if not same:
                sys.exit("frozen param '%s' changed" % name)
            if state:
                sys.exit("frozen param '%s' has optimizer state %s" %
                         (name, sorted(state)))
            frozen += 1
        else:
            if same:
                sys.exit("trainable param '%s' did not change" % name)
            if len(state) != 2:
                sys.exit("trainable param '%s' lacks its AdamW state" % name)
            trained += 1
    print("%d frozen params bit-identical without optimizer state, %d "
          "trained" % (frozen, trained))


if __name__ == "__main__":
    main(sys.argv)
