"""Reads the measured per-device peak memory of a --profile file.

usage: peak-bytes.py PROFILE.json peak|device [DELTA]
  peak    the largest device peak plus DELTA (default 0), in bytes
  device  the device that has it
"""
import json
import sys

with open(sys.argv[1]) as f:
    peaks = json.load(f)["peak_device_bytes"]
device = max(range(len(peaks)), key=lambda d: peaks[d])
if sys.argv[2] == "device":
    print(device)
else:
    delta = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    print(peaks[device] + delta)
