"""One row of the memory-model comparison: schedules DIR/d.mlir (a
differentiated model) with PLACE and SCHEDULE options, simulates it,
compiles and runs it with --profile, and prints compare-peaks.py's lines.

usage: memory-model-row.py DIR NAME PLACE_OPTIONS SCHEDULE_OPTIONS
The tools are found on PATH (lit puts the build's bin first).
"""
import os
import subprocess
import sys

work, name, place, schedule = sys.argv[1:5]
base = os.path.join(work, name)


def run(*args):
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)


run("pipe-opt", os.path.join(work, "d.mlir"), "--pipe-place=" + place,
    "--pipe-schedule=" + schedule, "-o", base + ".mlir")
run("pipe-opt", base + ".mlir",
    "--pipe-simulate=device-model=h200 report=" + base + ".sim.json",
    "-o", os.devnull)
run("pipe-compile", base + ".mlir", "-o", base + ".so", "--weights",
    base + ".safetensors", "-O", "0")
# pipedream-async runs 4 steps at a time: 4 steps suit every kind.
run("pipe-runner", base + ".so", "--weights", base + ".safetensors", "--data",
    os.path.join(work, "data.txt"), "--steps", "4", "--profile-skip", "0",
    "--profile", base + ".profile.json")
sys.stdout.flush()
subprocess.run([sys.executable,
                os.path.join(os.path.dirname(__file__), "compare-peaks.py"),
                name, base + ".sim.json", base + ".profile.json"], check=True)
