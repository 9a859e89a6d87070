"""Compares two training runs: the per-step losses of their --log-json logs
and the tensors of their --save-weights files, bit for bit unless a
tolerance is given (rtol atol)."""
import json
import math
import sys

sys.path.insert(0, __file__.rsplit("/", 3)[0] + "/e2e/Inputs")
from safetensors_f32 import read  # noqa: E402


def losses(path):
    return [json.loads(line)["loss"] for line in open(path) if line.strip()]


def close(a, b, rtol, atol):
    return a == b if rtol is None else abs(a - b) <= atol + rtol * abs(b)


def main():
    log_a, log_b, w_a, w_b = sys.argv[1:5]
    rtol = float(sys.argv[5]) if len(sys.argv) > 5 else None
    atol = float(sys.argv[6]) if len(sys.argv) > 6 else 0.0
    la, lb = losses(log_a), losses(log_b)
    if len(la) != len(lb) or not la:
        sys.exit(f"{log_a}: {len(la)} steps, {log_b}: {len(lb)}")
    for step, (a, b) in enumerate(zip(la, lb), 1):
        if not close(a, b, rtol, atol):
            sys.exit(f"step {step}: loss {a!r} vs {b!r}")
    ta, tb = read(w_a), read(w_b)
    if sorted(ta) != sorted(tb):
        sys.exit("the weight files hold different tensors")
    if rtol is None and open(w_a, "rb").read() != open(w_b, "rb").read():
        sys.exit(f"{w_a} and {w_b} differ")
    for name in sorted(ta):
        if ta[name][0] != tb[name][0]:
            sys.exit(f"{name}: shape {ta[name][0]} vs {tb[name][0]}")
        for i, (a, b) in enumerate(zip(ta[name][1], tb[name][1])):
            if not (close(a, b, rtol, atol) or (math.isnan(a) and math.isnan(b))):
                sys.exit(f"{name}[{i}]: {a!r} vs {b!r}")
    kind = "bit for bit" if rtol is None else f"within rtol {rtol} atol {atol}"
    print(f"same: {len(la)} steps, {len(ta)} tensors, {kind}")


main()
