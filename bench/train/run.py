#!/usr/bin/python3
"""Training throughput of pipe-train vs PyTorch CPU on the same byte-level
GPT and batch (bench/train/torch_gpt.py). Prints one JSON line per
configuration and Markdown tables for docs/benchmarks.md.

    bench/train/run.py [--steps N] [--repeats R] [--build DIR] [--breakdown]

Each configuration runs in a fresh process, R times, the configurations
interleaved so that a slow spell of a shared machine hits all of them;
the table gives the median and the best run. pipe-train's tokens/s is the
trainer's own figure over the training steps (compile excluded; the
compile time is reported separately), PyTorch's is timed after 10 warm-up
steps; peak memory is each process's maximum RSS (wait4). The "1 core"
rows pin both sides to CPU 0 (taskset), so that pipe-train's host
optimizer threads and PyTorch's threads share one core.

--breakdown: where one device's training time goes, by class of work,
from `perf record` of pipe-runner on artifacts compiled with and without
pipe-linalg-to-vector (pipe-compile --vectorize=false): OpenBLAS GEMMs,
the generated block code (everything else the model computes), memory
copies and fills, allocation and page faults, the runtime (optimizer,
actions). Needs `perf`.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = ["--layers", "4", "--d-model", "128", "--heads", "4", "--ff", "512",
         "--seq", "64", "--batch", "16"]
PIN = ["taskset", "-c", "0"]


def run_measured(cmd, env):
    """Runs cmd with env added; returns its output, exit code and peak RSS
    (MiB) from wait4."""
    pid = os.fork()
    if pid == 0:
        os.environ.update(env)
        fd = os.open(os.devnull, os.O_RDONLY)
        os.dup2(fd, 0)
        out = os.open("/tmp/pipe-bench-train.out", os.O_WRONLY | os.O_CREAT |
                      os.O_TRUNC, 0o644)
        os.dup2(out, 1)
        os.dup2(out, 2)
        try:
            os.execvp(cmd[0], cmd)
        finally:
            os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    with open("/tmp/pipe-bench-train.out") as f:
        text = f.read()
    return text, os.waitstatus_to_exitcode(status), usage.ru_maxrss / 1024


def pipe_train(build, steps, extra, pin):
    cmd = [*(PIN if pin else []), os.path.join(build, "bin", "pipe-train"),
           *MODEL, "--steps", str(steps), "--log-every", str(steps), *extra]
    text, code, peak = run_measured(cmd, {})
    if code != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{text}")
    tok = float(re.search(r"throughput: ([0-9.]+) tok/s", text)[1])
    compile_s = float(re.search(r"compiled in ([0-9.]+) s", text)[1])
    return {"tokens_per_s": tok, "compile_s": compile_s, "peak_rss_mib": peak,
            "command": " ".join(cmd)}


def torch_run(steps, threads, env, pin):
    cmd = [*(PIN if pin else []), "/usr/bin/python3",
           os.path.join(HERE, "torch_gpt.py"), "--steps", str(steps),
           "--threads", str(threads)]
    text, code, peak = run_measured(cmd, env)
    if code != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{text}")
    r = json.loads(text.strip().splitlines()[-1])
    return {"tokens_per_s": r["tokens_per_s"], "peak_rss_mib": peak,
            "command": " ".join(cmd)}


def configurations(build, steps):
    """(system, configuration, environment, runner) for every row."""
    rows = []
    # PyTorch: its best settings, with OpenBLAS's own kernel choice and with
    # the SkylakeX kernels pipe-train's BLAS tuning picks on this CPU.
    for coretype in ("", "SkylakeX"):
        for threads in (1, 2):
            env = {"OPENBLAS_NUM_THREADS": str(threads)}
            if coretype:
                env["OPENBLAS_CORETYPE"] = coretype
            rows.append(("pytorch", f"{threads} thread(s)", env,
                         lambda t=threads, e=env: torch_run(steps, t, e,
                                                            False)))
    pinned = {"OPENBLAS_NUM_THREADS": "1", "OPENBLAS_CORETYPE": "SkylakeX"}
    rows.append(("pytorch", "1 thread, 1 core", pinned,
                 lambda: torch_run(steps, 1, pinned, True)))
    # pipe-train with its default BLAS tuning (docs/trainer.md).
    one = ["--devices", "1", "--microbatches", "1"]
    two = ["--devices", "2", "--schedule", "1f1b", "--microbatches", "4"]
    rows.append(("pipe-train", "1 device, 1 micro-batch", {},
                 lambda: pipe_train(build, steps, one, False)))
    rows.append(("pipe-train", "1 device, 1 core", {},
                 lambda: pipe_train(build, steps, one, True)))
    rows.append(("pipe-train", "2 devices, 1f1b, 4 micro-batches", {},
                 lambda: pipe_train(build, steps, two, False)))
    return rows


CLASSES = [
    ("GEMM (OpenBLAS)", lambda dso, sym: "openblas" in dso or "blas" in dso),
    ("generated block code", lambda dso, sym: dso.endswith(".so") and
     sym.startswith("pipe_")),
    ("memory copies and fills", lambda dso, sym: "libc" in dso and
     re.match(r"__(memmove|memcpy|memset)", sym) is not None),
    ("allocation and page faults", lambda dso, sym: ("libc" in dso and re.search(
        r"malloc|free|_int_", sym) is not None) or "kernel" in dso),
    ("runtime (optimizer, actions)", lambda dso, sym: "pipe-runner" in dso),
]


def breakdown(build, steps):
    """Per-class shares of pipe-runner's samples, vectorised or not."""
    if not shutil.which("perf"):
        sys.exit("--breakdown needs perf")
    work = tempfile.mkdtemp(prefix="pipe-bench-breakdown-")
    art = os.path.join(work, "art")
    subprocess.run([os.path.join(build, "bin", "pipe-train"), *MODEL,
                    "--devices", "1", "--microbatches", "1", "--artifact", art,
                    "--compile-only"], check=True, capture_output=True)
    weights = os.path.join(art, "weights.safetensors")
    tables = {}
    for vectorize in ("false", "true"):
        lib = os.path.join(work, f"vectorize-{vectorize}.so")
        subprocess.run([os.path.join(build, "bin", "pipe-compile"),
                        os.path.join(art, "scheduled.mlir"), "-o", lib,
                        f"--vectorize={vectorize}"], check=True)
        data = os.path.join(work, f"perf-{vectorize}.data")
        run = subprocess.run(
            ["perf", "record", "-q", "-o", data, "--",
             os.path.join(build, "bin", "pipe-runner"), lib, "--weights",
             weights, "--steps", str(steps), "--log-every", str(steps),
             "--optimizer", "adamw"], check=True, capture_output=True,
            text=True)
        tok = float(re.search(r"throughput: ([0-9.]+) tok/s", run.stdout +
                              run.stderr)[1])
        report = subprocess.run(
            ["perf", "report", "-i", data, "--no-children", "--stdio",
             "--sort", "dso,sym", "-F", "overhead,dso,sym"],
            check=True, capture_output=True, text=True).stdout
        shares = {name: 0.0 for name, _ in CLASSES}
        shares["other"] = 0.0
        for line in report.splitlines():
            m = re.match(r"\s*([0-9.]+)%\s+(\S+)\s+\[.\]\s+(\S+)", line)
            if not m:
                continue
            share, dso, sym = float(m[1]), m[2], m[3]
            name = next((n for n, match in CLASSES if match(dso, sym)),
                        "other")
            shares[name] += share
        tables[vectorize] = {"tokens_per_s": tok, "shares": shares}
    shutil.rmtree(work)
    return tables


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--build", default=os.path.join(HERE, "..", "..", "build"))
    p.add_argument("--breakdown", action="store_true")
    a = p.parse_args()
    rows = configurations(a.build, a.steps)
    runs = [[] for _ in rows]
    for _ in range(a.repeats):
        for i, (_, _, _, runner) in enumerate(rows):
            runs[i].append(runner())
    print("| system | configuration | environment | tokens/s median | "
          "tokens/s best | peak RSS (MiB) | compile (s) |")
    print("|---|---|---|---|---|---|---|")
    for (system, config, env, _), results in zip(rows, runs):
        tokens = [r["tokens_per_s"] for r in results]
        record = {"system": system, "config": config, "env": env,
                  "tokens_per_s": tokens,
                  "peak_rss_mib": max(r["peak_rss_mib"] for r in results),
                  "compile_s": statistics.median(
                      r.get("compile_s", float("nan")) for r in results),
                  "command": results[0]["command"]}
        print(json.dumps(record), file=sys.stderr)
        envtext = " ".join(f"{k}={v}" for k, v in env.items()) or "(tuned)"
        print(f"| {system} | {config} | {envtext} | "
              f"{statistics.median(tokens):.0f} | {max(tokens):.0f} | "
              f"{record['peak_rss_mib']:.0f} | {record['compile_s']:.1f} |")
    if a.breakdown:
        tables = breakdown(a.build, a.steps)
        print("\n| class of work | scalar loops (--vectorize=false) | "
              "vector rows (default) |")
        print("|---|---|---|")
        for name in [n for n, _ in CLASSES] + ["other"]:
            print(f"| {name} | {tables['false']['shares'][name]:.1f} % | "
                  f"{tables['true']['shares'][name]:.1f} % |")
        print(f"| tokens/s under perf | "
              f"{tables['false']['tokens_per_s']:.0f} | "
              f"{tables['true']['tokens_per_s']:.0f} |")


if __name__ == "__main__":
    main()
