"""Compares the memory model's per-device peak (a --pipe-simulate report)
with the runtime's measured one (a --profile file).

usage: compare-peaks.py KIND REPORT.json PROFILE.json

Prints one line per device and then "within-model" when no device's
prediction exceeds its measured peak (the model counts only what the
runtime charges; what it leaves out is listed in docs/scheduling.md), or
"over-counted" when one does.
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
for d, (p, m) in enumerate(zip(predicted, measured)):
    print("%s device %d: predicted %d measured %d ratio %.3f" %
          (kind, d, p, m, p / m))
print(kind, "within-model" if all(p <= m for p, m in
                                  zip(predicted, measured)) else "over-counted")
