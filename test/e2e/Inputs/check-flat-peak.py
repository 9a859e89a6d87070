"""Checks that the whole-run peak device bytes of --profile files (one per
depth) agree within a relative tolerance: L2L's memory is constant in depth.

usage: check-flat-peak.py TOLERANCE PROFILE.json...
"""
import json
import sys

tolerance = float(sys.argv[1])
peaks = []
for path in sys.argv[2:]:
    with open(path) as f:
        peaks.append(max(json.load(f)["peak_device_bytes"]))
spread = max(peaks) / min(peaks) - 1
print("peaks", " ".join(str(p) for p in peaks), "spread %.4f" % spread)
print("flat" if spread <= tolerance else "grows with depth")
