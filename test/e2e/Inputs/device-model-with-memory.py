"""Writes a device model: PRESET.json with every device's memory_bytes set.

usage: device-model-with-memory.py PRESET.json OUT.json BYTES
"""
import json
import sys

preset, out, memory = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(preset) as f:
    model = json.load(f)
model["name"] = "test-memory"
for device in model["devices"]:
    device["memory_bytes"] = memory
with open(out, "w") as f:
    json.dump(model, f, indent=1)
