#!/usr/bin/env python3
"""Calibration of the simulator against the CPU runtime.

For two models (a GPT and a T5, scaled to this machine) and every schedule
kind, compares the simulator's predicted step time and per-device peak
memory (--pipe-simulate) with the runtime's measured ones (pipe-runner
--profile). Each model is profiled once with pipe-profile, which also fits a
device model (its rates, links, host copies and optimizer); predictions for
one model use the device model fitted on the *other* model, so the machine
terms are held out. Two block-time sources are reported:

  profiled  the model's own pipe-profile table (per-block part times and
            working memory, as FTPipe profiles the model it partitions),
            measured with --co-runners 2 so that the times include the
            other core's pipeline device sharing caches and memory
            bandwidth; the schedule, transfers, updates and bubbles are the
            simulator's;
  fitted    analytic block times from the other model's fitted device model
            (FLOPs / rate + bytes / bandwidth), nothing measured on this
            model.

Every process runs one thread per device (PIPE_INTRA_OP_THREADS=0,
OPENBLAS_NUM_THREADS=1), so 2 devices use the 2 cores of the CI machine.

  bench/calibration/run.py [--build build] [--out DIR] [--steps N]
      [--models gpt,t5] [--kinds gpipe,1f1b,...] [--repeats N]

Prints a Markdown table (recorded in docs/benchmarks.md, "Calibration").
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

# pipe-gen flags, and the data: None for text (a GPT's tokens and targets),
# else the inputs' safetensors specs for test/e2e/Inputs/make-data.py.
MODELS = {
    "gpt": ["--model=tiny-gpt", "--layers=4", "--d-model=128", "--heads=4",
            "--ff=512", "--seq=64", "--batch=4", "--vocab=256"],
    "t5": ["--model=tiny-t5", "--layers=2", "--decoder-layers=2",
           "--d-model=128", "--heads=4", "--ff=512", "--seq=64",
           "--decoder-seq=32", "--batch=4", "--vocab=256"],
}
DATA = {
    "gpt": None,
    "t5": ["input0:I64:16x4x64:256", "input1:I64:16x4x32:256",
           "input2:I64:16x4x32:256"],
}

# name -> (placement options, schedule options)
KINDS = {
    "gpipe": ("devices=2", "kind=gpipe microbatches=4"),
    "1f1b": ("devices=2", "kind=1f1b microbatches=4"),
    "interleaved": ("devices=2 stages-per-device=2",
                    "kind=interleaved-1f1b microbatches=4"),
    "zb-h1": ("devices=2", "kind=zb-h1 microbatches=4"),
    "pipedream-async": ("devices=2",
                        "kind=pipedream-async microbatches=4 steps=4 "
                        "weights=stash"),
    "mixed": ("devices=2", "kind=mixed microbatches=4"),
    "l2l": ("devices=1 stages-per-device=0", "kind=l2l microbatches=4"),
}


def run(cmd, **kwargs):
    result = subprocess.run(cmd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kwargs)
    if result.returncode:
        sys.exit("failed: %s\n%s%s" % (" ".join(cmd), result.stdout,
                                       result.stderr))
    return result.stdout


def simulate(tool, scheduled, device_model, report):
    run([tool("pipe-opt"), scheduled,
         "--pipe-simulate=device-model=%s report=%s" % (device_model, report),
         "-o", os.devnull])
    with open(report) as f:
        r = json.load(f)["schedules"][0]["report"]
    return (r["step_time_s"] * 1e3,
            [d["peak_memory_bytes"] for d in r["devices"]])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--out", default=None,
                        help="keep the work files here (default: a "
                             "temporary directory)")
    parser.add_argument("--steps", type=int, default=24)
    parser.add_argument("--repeats", type=int, default=3,
                        help="measured runs per row (the median)")
    parser.add_argument("--models", default="gpt,t5")
    parser.add_argument("--kinds", default=",".join(KINDS))
    args = parser.parse_args()
    models = args.models.split(",")
    kinds = args.kinds.split(",")
    for name in models + kinds:
        if name not in MODELS and name not in KINDS:
            sys.exit("unknown model or kind '%s'" % name)

    def tool(name):
        path = os.path.join(args.build, "bin", name)
        if not os.access(path, os.X_OK):
            sys.exit("%s not found; build first" % path)
        return path

    os.environ["PIPE_INTRA_OP_THREADS"] = "0"
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    work = args.out or tempfile.mkdtemp(prefix="pipe-calibration-")
    os.makedirs(work, exist_ok=True)
    text = os.path.join(work, "data.txt")
    shutil.copyfile("/usr/share/common-licenses/GPL-3", text)
    make_data = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                             "..", "..", "test", "e2e", "Inputs",
                             "make-data.py")

    # Profile every model first: each row uses the other one's device model.
    for m in MODELS:
        base = os.path.join(work, m)
        run([tool("pipe-gen")] + MODELS[m] + ["-o", base + ".mlir"])
        if DATA[m]:
            run([sys.executable, make_data, base + ".data.safetensors"] +
                DATA[m])
        run([tool("pipe-profile"), base + ".mlir", "--repeats", "9",
             "--warmup", "3", "--co-runners", "2", "-o", base + ".table.json",
             "--fit-device-model", base + ".device.json"])
        for source, profile in (("profiled", "=profile=" + base +
                                 ".table.json"), ("fitted", "")):
            run([tool("pipe-opt"), base + ".mlir", "--pipe-lift-params",
                 "--pipe-form-blocks=granularity=layer",
                 "--pipe-annotate-costs" + profile, "--pipe-differentiate",
                 "-o", "%s.%s.mlir" % (base, source)])

    print("| model | schedule | measured step (ms) | profiled (ms) | error "
          "| fitted (ms) | error | measured peak (KiB) | predicted (KiB) "
          "| error |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for m in models:
        other = [o for o in MODELS if o != m][0]
        device_model = os.path.join(work, other + ".device.json")
        for kind in kinds:
            place, schedule = KINDS[kind]
            row = os.path.join(work, "%s-%s" % (m, kind))
            predicted = {}
            for source in ("profiled", "fitted"):
                scheduled = "%s.%s.mlir" % (row, source)
                run([tool("pipe-opt"),
                     os.path.join(work, "%s.%s.mlir" % (m, source)),
                     "--pipe-place=" + place, "--pipe-schedule=" + schedule,
                     "-o", scheduled])
                step, peaks = simulate(tool, scheduled, device_model,
                                       scheduled + ".sim.json")
                predicted[source] = (step, peaks)
            run([tool("pipe-compile"), row + ".profiled.mlir", "-o",
                 row + ".so", "--weights", row + ".safetensors"])
            steps, peaks = [], None
            for r in range(args.repeats):
                profile = "%s.run%d.json" % (row, r)
                data = (os.path.join(work, m + ".data.safetensors")
                        if DATA[m] else text)
                run([tool("pipe-runner"), row + ".so", "--weights",
                     row + ".safetensors", "--data", data, "--steps",
                     str(args.steps), "--profile-skip", "4", "--profile",
                     profile])
                with open(profile) as f:
                    measured = json.load(f)
                steps.append(measured["step_ms"])
                peaks = [max(a, b) for a, b in zip(
                    peaks or measured["peak_device_bytes"],
                    measured["peak_device_bytes"])]
            step = statistics.median(steps)
            peak = max(peaks)
            predicted_peak = max(predicted["profiled"][1])

            def error(p, m):
                return "%+.0f%%" % (100.0 * (p - m) / m)

            print("| %s | %s | %.2f | %.2f | %s | %.2f | %s | %.0f | %.0f "
                  "| %s |" % (
                      m, kind, step, predicted["profiled"][0],
                      error(predicted["profiled"][0], step),
                      predicted["fitted"][0],
                      error(predicted["fitted"][0], step), peak / 1024,
                      predicted_peak / 1024, error(predicted_peak, peak)))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
