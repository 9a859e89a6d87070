"""Compares the memory model's per-device peak (a --pipe-simulate report)
with the runtime's measured one (a --profile file).

usage: compare-peaks.py KIND REPORT.json PROFILE.json

Prints one line per device with the ratio predicted / measured, then
"KIND within 10%" when every device's ratio is in [0.9, 1.1], or
"KIND off by more than 10%" when one is not.
"""
import json
import sys

kind, report_path, profile_path = sys.argv[1:4]
with open(report_path) as f:
    report = json.load(f)["schedules"][0]["report"]
with open(profile_path) as f:
    measured = json.load(f)["peak_device_bytes"]
predicted = [d["peak_memory_bytes"] for d in report["devices"]]
if len(predicted) != len(measured):
    sys.exit("%s: %d devices predicted, %d measured" %
             (kind, len(predicted), len(measured)))
ratios = [p / m for p, m in zip(predicted, measured)]
for d, (p, m, r) in enumerate(zip(predicted, measured, ratios)):
    print("%s device %d: predicted %d measured %d ratio %.3f" % (kind, d, p, m, r))
print(kind, "within 10%" if all(0.9 <= r <= 1.1 for r in ratios)
      else "off by more than 10%")
