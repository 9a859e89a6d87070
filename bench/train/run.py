#!/usr/bin/python3
"""Training throughput of pipe-train vs PyTorch CPU on the same byte-level
GPT and batch (bench/train/torch_gpt.py). Prints one JSON line per
configuration and a Markdown table for docs/benchmarks.md.

    bench/train/run.py [--steps N] [--build DIR]

Each configuration runs in a fresh process: pipe-train's tokens/s is the
trainer's own figure over the training steps (compile excluded; the compile
time is reported separately), PyTorch's is timed after 10 warm-up steps;
peak memory is each process's maximum RSS (wait4).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = ["--layers", "4", "--d-model", "128", "--heads", "4", "--ff", "512",
         "--seq", "64", "--batch", "16"]


def run_measured(cmd, env):
    """Like run(), plus the child's peak RSS (MiB) from wait4."""
    pid = os.fork()
    if pid == 0:
        os.environ.update(env)
        fd = os.open(os.devnull, os.O_RDONLY)
        os.dup2(fd, 0)
        out = os.open("/tmp/pipe-bench-train.out", os.O_WRONLY | os.O_CREAT |
                      os.O_TRUNC, 0o644)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.execv(cmd[0], cmd)
    _, status, usage = os.wait4(pid, 0)
    with open("/tmp/pipe-bench-train.out") as f:
        text = f.read()
    return text, os.waitstatus_to_exitcode(status), usage.ru_maxrss / 1024


def pipe_train(build, steps, name, extra, env):
    cmd = [os.path.join(build, "bin", "pipe-train"), *MODEL,
           "--steps", str(steps), "--log-every", str(steps), *extra]
    t0 = time.perf_counter()
    text, code, peak = run_measured(cmd, env)
    wall = time.perf_counter() - t0
    if code != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{text}")
    tok = float(re.search(r"throughput: ([0-9.]+) tok/s", text)[1])
    compile_s = float(re.search(r"compiled in ([0-9.]+) s", text)[1])
    return {"system": "pipe-train", "config": name, "tokens_per_s": tok,
            "compile_s": compile_s, "wall_s": wall, "peak_rss_mib": peak,
            "env": env, "command": " ".join(cmd)}


def torch_run(steps, threads, env):
    cmd = ["/usr/bin/python3", os.path.join(HERE, "torch_gpt.py"),
           "--steps", str(steps), "--threads", str(threads)]
    text, code, peak = run_measured(cmd, env)
    if code != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{text}")
    r = json.loads(text.strip().splitlines()[-1])
    r.update(config=f"{threads} torch thread(s)", env=env, peak_rss_mib=peak,
             command=" ".join(cmd))
    return r


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--build", default=os.path.join(HERE, "..", "..", "build"))
    a = p.parse_args()
    results = []
    # PyTorch: its best settings, with OpenBLAS's own kernel choice and with
    # the SkylakeX kernels pipe-train's BLAS tuning picks on this CPU.
    for coretype in ("", "SkylakeX"):
        for threads in (1, 2):
            env = {"OPENBLAS_NUM_THREADS": str(threads)}
            if coretype:
                env["OPENBLAS_CORETYPE"] = coretype
            results.append(torch_run(a.steps, threads, env))
    # pipe-train with its default BLAS tuning (docs/trainer.md).
    results.append(pipe_train(a.build, a.steps, "1 device, 1 micro-batch",
                              ["--devices", "1", "--microbatches", "1"], {}))
    results.append(pipe_train(
        a.build, a.steps, "2 devices, 1f1b, 4 micro-batches",
        ["--devices", "2", "--schedule", "1f1b", "--microbatches", "4"], {}))
    for r in results:
        print(json.dumps(r))
    print("\n| system | configuration | environment | tokens/s | "
          "peak RSS (MiB) | compile (s) |")
    print("|---|---|---|---|---|---|")
    for r in results:
        env = " ".join(f"{k}={v}" for k, v in r["env"].items()) or "(tuned)"
        print(f"| {r['system']} | {r['config']} | {env} | "
              f"{r['tokens_per_s']:.0f} | {r.get('peak_rss_mib', 0):.0f} | "
              f"{r.get('compile_s', float('nan')):.1f} |")


if __name__ == "__main__":
    main()
