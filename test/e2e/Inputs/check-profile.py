"""Checks a pipe-runner --profile file (test/e2e/host-profile.mlir).

Prints one line per property so that FileCheck names the one that fails.
"""
import json
import sys

p = json.load(open(sys.argv[1]))
expected_steps = int(sys.argv[2])
assert p["steps"] == expected_steps, (p["steps"], expected_steps)
print(f"kind {p['kind']} devices {p['devices']} steps {p['steps']}")
rt = p["runtime"]
d = rt["devices"][0]
print("phases " + " ".join(k for k in ("forward", "recompute", "backward")
                           if d[k + "_ms"] > 0))
copies = ["h2d"] if d["h2d_ms"] > 0 else []
copies += ["d2h"] if d["d2h_ms"] > 0 else []
if d["copy_exposed_ms"] <= d["copy_ms"] + 1e-9:
    copies.append("exposed<=copy")
if 0 <= d["copy_exposed_fraction"] <= 1:
    copies.append("fraction-in-range")
print("copies " + " ".join(copies))
opt = ["busy"] if rt["optimizer_ms"] > 0 else []
if rt["optimizer_exposed_ms"] <= rt["optimizer_ms"] + 1e-9:
    opt.append("exposed<=busy")
print("optimizer " + " ".join(opt))
# The window spans the measured runs only (first action to last), so it
# cannot exceed their wall time (0.01 ms of rounding).
ok = rt["window_ms"] <= p["steps"] * p["step_ms"] + 0.01
print("window<=steps*step_ms " + ("ok" if ok else
      f"{rt['window_ms']} > {p['steps']} * {p['step_ms']}"))
print("peak bytes " + ("> 0" if p["peak_device_bytes"][0] > 0 else "0"))
print("median step " + ("> 0" if p["step_ms_median"] > 0 else "0"))
