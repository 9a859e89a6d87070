#!/usr/bin/env python3
"""Calibration of the simulator against the CPU runtime.

For two models (a GPT and a T5, scaled to this machine) and every schedule
kind, compares the simulator's predicted step time and per-device peak
memory (--pipe-simulate) with the runtime's measured ones (pipe-runner
--profile). Each model is profiled with pipe-profile (layer-level blocks for its
table; op-level blocks, which give enough parts to fit the forward's and
the backward's rates apart, for its device model: rates, links, host copies
and optimizer); predictions for
one model use the device model fitted on the *other* model, so the machine
terms are held out. Two block-time sources are reported:

  profiled  the model's own pipe-profile table (per-block part times,
            updates and working memory, as FTPipe profiles the model it
            partitions), measured with as many co-runners as the row keeps
            devices busy (--co-runners 2 for two devices, so that the times
            include the other device sharing caches and memory bandwidth;
            1 for L2L's one device); the schedule, transfers and bubbles are
            the simulator's;
  fitted    analytic block times from the other model's fitted device model
            (FLOPs / rate + bytes / bandwidth, the forward's and the
            backward's rates fitted apart on its op-level blocks; each
            figure the median of --fits profiles, since one profile of a
            shared VM moves the fitted rates by up to 20%), nothing measured
            on this model.

With --partitioners, a second table compares seq (contiguous stages) with
mixed (FTPipe's Mixed-Pipe) placements chosen on each model's own profile
(op-level blocks, device model fitted to it), predicted against measured,
for BERT-, GPT- and T5-shaped models on 2 devices: as 2 device threads of
one process, and (where mpirun is found) as 2 MPI ranks, one per device.

Every process runs one thread per device (PIPE_INTRA_OP_THREADS=0,
OPENBLAS_NUM_THREADS=1), so 2 devices use the 2 cores of the CI machine.

  bench/calibration/run.py [--build build] [--out DIR] [--steps N]
      [--models gpt,t5] [--kinds gpipe,1f1b,...] [--repeats N] [--fits N]
      [--partitioners [--profile-microbatches M]]

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
MODELS_PARTITIONED = {
    "bert": ["--model=tiny-bert", "--layers=4", "--d-model=128", "--heads=4",
             "--ff=512", "--seq=64", "--batch=4", "--vocab=256"],
    "gpt": MODELS["gpt"],
    "t5": MODELS["t5"],
}
DATA = {
    "bert": ["input0:I64:16x4x64:256", "input1:I64:16x4x64:2",
             "input2:I64:16x4:2"],
    "gpt": None,
    "t5": ["input0:I64:16x4x64:256", "input1:I64:16x4x32:256",
           "input2:I64:16x4x32:256"],
}

# name -> (placement options, schedule options, devices)
KINDS = {
    "gpipe": ("devices=2", "kind=gpipe microbatches=4", 2),
    "1f1b": ("devices=2", "kind=1f1b microbatches=4", 2),
    "interleaved": ("devices=2 stages-per-device=2",
                    "kind=interleaved-1f1b microbatches=4", 2),
    "zb-h1": ("devices=2", "kind=zb-h1 microbatches=4", 2),
    "pipedream-async": ("devices=2",
                        "kind=pipedream-async microbatches=4 steps=4 "
                        "weights=stash", 2),
    "mixed": ("devices=2", "kind=mixed microbatches=4", 2),
    "l2l": ("devices=1 stages-per-device=0", "kind=l2l microbatches=4", 1),
}


def run(cmd, **kwargs):
    result = subprocess.run(cmd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kwargs)
    if result.returncode:
        sys.exit("failed: %s\n%s%s" % (" ".join(cmd), result.stdout,
                                       result.stderr))
    return result.stdout


def median_model(models):
    """The device model whose every number is the median of `models`' (the
    same fields, fitted on repeated profiles); text from the first."""
    first = models[0]
    if isinstance(first, dict):
        return {k: median_model([m[k] for m in models]) for k in first}
    if isinstance(first, list):
        return [median_model([m[i] for m in models])
                for i in range(len(first))]
    if isinstance(first, bool) or not isinstance(first, (int, float)):
        return first
    return statistics.median(models)


def simulate(tool, scheduled, device_model, report, kind=None):
    """The step time (ms) and device peaks of the schedule of `kind` (the
    first one if None)."""
    run([tool("pipe-opt"), scheduled,
         "--pipe-simulate=device-model=%s report=%s" % (device_model, report),
         "-o", os.devnull])
    with open(report) as f:
        reports = [s["report"] for s in json.load(f)["schedules"]]
    r = next(r for r in reports if kind is None or r["kind"] == kind)
    return (r["step_time_s"] * 1e3,
            [d["peak_memory_bytes"] for d in r["devices"]])


def measure(tool, artifact, weights, data, steps, repeats, prefix,
            launcher=()):
    """The median over `repeats` runs of each run's median step time (ms),
    and the highest device peaks; with a `launcher` (mpirun), one rank per
    device, rank 0's profile (which has every device's peak)."""
    times, peaks = [], None
    for r in range(repeats):
        profile = "%s.run%d.json" % (prefix, r)
        run(list(launcher) + [
            tool("pipe-runner"), artifact, "--weights", weights, "--data",
            data, "--steps", str(steps), "--profile-skip", "4", "--profile",
            profile])
        with open(profile) as f:
            measured = json.load(f)
        times.append(measured["step_ms_median"])
        peaks = [max(a, b) for a, b in zip(
            peaks or measured["peak_device_bytes"],
            measured["peak_device_bytes"])]
    return statistics.median(times), peaks


def mpirun(ranks):
    """The launcher of `ranks` processes on this host (root and more ranks
    than cores allowed, as the test harness does), or None without MPI.
    Unlike the test harness it keeps the shared-memory transport's
    single-copy mechanism (Linux CMA): without it a large message moves in
    small fragments only while both ranks are inside MPI, which made 2-rank
    Mixed-Pipe steps 1.5-1.7x slower here."""
    path = shutil.which("mpirun")
    if not path:
        return None
    os.environ.update({"OMPI_ALLOW_RUN_AS_ROOT": "1",
                       "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"})
    return [path, "-np", str(ranks), "--oversubscribe", "--bind-to", "none",
            "-x", "OPENBLAS_NUM_THREADS", "-x", "PIPE_INTRA_OP_THREADS"]


def error(predicted, measured):
    return "%+.0f%%" % (100.0 * (predicted - measured) / measured)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--out", default=None,
                        help="keep the work files here (default: a "
                             "temporary directory)")
    parser.add_argument("--steps", type=int, default=24)
    parser.add_argument("--repeats", type=int, default=3,
                        help="measured runs per row (the median)")
    parser.add_argument("--fits", type=int, default=3,
                        help="op-level profiles per device model (the "
                             "median of their fits)")
    parser.add_argument("--models", default="gpt,t5")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--partitioners", action="store_true",
                        help="also compare seq and mixed placements")
    parser.add_argument("--profile-microbatches", type=int, default=1,
                        help="pipe-profile --microbatches for the seq and "
                             "mixed placements' profiles")
    args = parser.parse_args()
    models = [m for m in args.models.split(",") if m]
    kinds = [k for k in args.kinds.split(",") if k]
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
    for m in MODELS if models and kinds else []:
        base = os.path.join(work, m)
        run([tool("pipe-gen")] + MODELS[m] + ["-o", base + ".mlir"])
        if DATA[m]:
            run([sys.executable, make_data, base + ".data.safetensors"] +
                DATA[m])
        for devices in (1, 2):
            prefix = "%s.%d" % (base, devices)
            run([tool("pipe-profile"), base + ".mlir", "--repeats", "9",
                 "--warmup", "3", "--co-runners", str(devices), "-o",
                 prefix + ".table.json"])
            # The device model from the op-level blocks: enough parts to
            # fit the backward's rates apart from the forward's.
            fits = []
            for f in range(max(1, args.fits)):
                fit = "%s.device.%d.json" % (prefix, f)
                run([tool("pipe-profile"), base + ".mlir", "--granularity",
                     "op", "--repeats", "9", "--warmup", "3", "--co-runners",
                     str(devices), "-o", prefix + ".op-table.json",
                     "--fit-device-model", fit])
                with open(fit) as f:
                    fits.append(json.load(f))
            with open(prefix + ".device.json", "w") as f:
                json.dump(median_model(fits), f, indent=1)
            for source, profile in (("profiled", "=profile=" + prefix +
                                     ".table.json"), ("fitted", "")):
                run([tool("pipe-opt"), base + ".mlir", "--pipe-lift-params",
                     "--pipe-form-blocks=granularity=layer",
                     "--pipe-annotate-costs" + profile,
                     "--pipe-differentiate", "-o",
                     "%s.%s.mlir" % (prefix, source)])

    if models and kinds:
        print("| model | schedule | measured step (ms) | profiled (ms) "
              "| error | fitted (ms) | error | measured peak (KiB) "
              "| predicted (KiB) | error |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for m in models if kinds else []:
        other = [o for o in MODELS if o != m][0]
        for kind in kinds:
            place, schedule, devices = KINDS[kind]
            device_model = os.path.join(work, "%s.%d.device.json" %
                                        (other, devices))
            row = os.path.join(work, "%s-%s" % (m, kind))
            predicted = {}
            for source in ("profiled", "fitted"):
                scheduled = "%s.%s.mlir" % (row, source)
                run([tool("pipe-opt"),
                     os.path.join(work, "%s.%d.%s.mlir" % (m, devices,
                                                          source)),
                     "--pipe-place=" + place, "--pipe-schedule=" + schedule,
                     "-o", scheduled])
                step, peaks = simulate(tool, scheduled, device_model,
                                       scheduled + ".sim.json")
                predicted[source] = (step, peaks)
            run([tool("pipe-compile"), row + ".profiled.mlir", "-o",
                 row + ".so", "--weights", row + ".safetensors"])
            data = (os.path.join(work, m + ".data.safetensors")
                    if DATA[m] else text)
            step, peaks = measure(tool, row + ".so", row + ".safetensors",
                                  data, args.steps, args.repeats, row)
            peak = max(peaks)
            predicted_peak = max(predicted["profiled"][1])

            print("| %s | %s | %.2f | %.2f | %s | %.2f | %s | %.0f | %.0f "
                  "| %s |" % (
                      m, kind, step, predicted["profiled"][0],
                      error(predicted["profiled"][0], step),
                      predicted["fitted"][0],
                      error(predicted["fitted"][0], step), peak / 1024,
                      predicted_peak / 1024, error(predicted_peak, peak)))
            sys.stdout.flush()
    if args.partitioners:
        partitioners(args, tool, work, text, make_data)


def partitioners(args, tool, work, text, make_data):
    """Seq against mixed placements on measured op-level costs."""
    schedule = "pipedream-async"
    launcher = mpirun(2)
    print()
    print("| model | blocks | placement | stages -> devices | predicted step "
          "(ms) | measured, 2 devices in 1 process (ms) | error "
          "| measured, 2 MPI ranks (ms) | error |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for m, flags in MODELS_PARTITIONED.items():
        base = os.path.join(work, "op-" + m)
        run([tool("pipe-gen")] + flags + ["-o", base + ".mlir"])
        if DATA[m]:
            run([sys.executable, make_data, base + ".data.safetensors"] +
                DATA[m])
        run([tool("pipe-profile"), base + ".mlir", "--granularity", "op",
             "--repeats", "9", "--warmup", "3", "--co-runners", "2",
             "--microbatches", str(args.profile_microbatches), "-o",
             base + ".table.json", "--fit-device-model",
             base + ".device.json"])
        results = {}
        for algorithm in ("seq", "mixed"):
            row = "%s.%s" % (base, algorithm)
            run([tool("pipe-opt"), base + ".mlir", "--pipe-lift-params",
                 "--pipe-form-blocks=granularity=op",
                 "--pipe-annotate-costs=profile=" + base + ".table.json",
                 "--pipe-differentiate",
                 "--pipe-partition-and-schedule=partitioner=%s devices=2 "
                 "device-model=%s schedule=%s microbatches=4" % (
                     algorithm, base + ".device.json", schedule),
                 "-o", row + ".mlir"])
            predicted, _ = simulate(tool, row + ".mlir",
                                    base + ".device.json", row + ".sim.json",
                                    kind=schedule)
            run([tool("pipe-compile"), row + ".mlir", "-o", row + ".so",
                 "--weights", row + ".safetensors"])
            data = (base + ".data.safetensors") if DATA[m] else text
            measured, _ = measure(tool, row + ".so", row + ".safetensors",
                                  data, args.steps, args.repeats, row)
            with open(row + ".mlir") as f:
                placement = [line.split()[3] for line in f
                             if line.strip().startswith("pipe.stage @")]
            with open(base + ".table.json") as f:
                blocks = sum(b["instances"] for b in json.load(f)["blocks"])
            ranks = (measure(tool, row + ".so", row + ".safetensors", data,
                             args.steps, args.repeats, row + ".ranks",
                             launcher)[0]
                     if launcher else float("nan"))
            results[algorithm] = (predicted, measured, ranks)
            print("| %s | op (%d) | %s | %s | %.2f | %.2f | %s | %.2f | %s |"
                  % (m, blocks, algorithm, ",".join(placement), predicted,
                     measured, error(predicted, measured), ranks,
                     error(predicted, ranks)))
        (ps, ms, rs), (pm, mm, rm) = results["seq"], results["mixed"]
        print("| %s | | mixed over seq | | %.2fx | %.2fx | | %.2fx | |" % (
            m, ps / pm, ms / mm, rs / rm))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
