#!/usr/bin/python3
"""Tokens/s of the default model (pipe-train's defaults: byte-level GPT,
4 layers, d 128, 1F1B) on 1 device, on 2 simulated devices in one process,
and as 2 MPI ranks of one device each (over MPI, and over MPI under
NCCL's rules: transfers matched by order, synchronous sends), all from the
same compiled programs and with one BLAS thread per process; then data parallelism as 2 MPI ranks
(2 replicas of the 1-device program), with the replicas' gradients summed
in buckets (pipe.reduce_bucket, the default) and with one blocking
reduce_grad per param; plus each rank's communication figures from
--profile. Prints a Markdown table for docs/benchmarks.md.

    bench/distributed/run.py [--steps N] [--build DIR]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile


def compile_program(build, out, devices, flags=()):
    subprocess.run([f"{build}/bin/pipe-train", "--devices", str(devices),
                    "--artifact", out, "--compile-only", *flags], check=True,
                   stdout=subprocess.DEVNULL)


def train(command, steps, profile, env):
    args = command + ["--steps", str(steps), "--eval-every", "0",
                      "--eval-batches", "1", "--profile", profile]
    subprocess.run(args, check=True, env=env, stdout=subprocess.DEVNULL)
    return json.load(open(profile))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--build", default="build")
    args = parser.parse_args()
    build = os.path.abspath(args.build)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1",
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for devices in (1, 2):
            compile_program(build, f"{tmp}/d{devices}", devices)
        # 2 replicas, each on half of a step's batch (16 in all, as above).
        data_parallel = ["--data-parallel", "2", "--batch", "8"]
        compile_program(build, f"{tmp}/dp", 1, data_parallel)
        compile_program(build, f"{tmp}/dp0", 1,
                        data_parallel + ["--reduce-bucket-bytes", "0"])
        def runner(program):
            d = f"{tmp}/{program}"
            return [f"{build}/bin/pipe-runner", f"{d}/program.so",
                    "--weights", f"{d}/weights.safetensors"]
        mpirun = ["mpirun", "-np", "2", "--oversubscribe", "--bind-to", "none",
                  "-x", "OPENBLAS_NUM_THREADS"]
        for name, command in [
                ("1 device, 1 process", runner("d1")),
                ("2 devices, 1 process", runner("d2")),
                ("2 ranks (MPI), 1 device each", mpirun + runner("d2")),
                ("2 ranks, MPI under NCCL's rules (--transport mpi-in-order)",
                 mpirun + runner("d2") + ["--transport", "mpi-in-order"]),
                ("2 ranks (MPI), 2 data-parallel replicas, buckets",
                 mpirun + runner("dp")),
                ("2 ranks (MPI), 2 data-parallel replicas, one reduce_grad "
                 "per param", mpirun + runner("dp0"))]:
            profile = train(command, args.steps, f"{tmp}/profile.json", env)
            row = {"config": name, "tokens_per_s": profile["tokens_per_s"],
                   "step_ms": profile["step_ms"]}
            if "transport" in profile:
                ranks = [profile["transport"]] + [
                    json.load(open(f"{tmp}/profile.json.rank{r}"))["transport"]
                    for r in range(1, profile["transport"]["ranks"])]
                row["sent_bytes_per_step"] = [t["sent_bytes"] / args.steps
                                              for t in ranks]
                row["wait_s_per_step"] = [t["wait_seconds"] / args.steps
                                          for t in ranks]
            print(json.dumps(row), flush=True)
            rows.append(row)
    base = rows[1]["tokens_per_s"]
    print("\n| configuration | tokens/s | vs 2 in-process devices | "
          "sent per step per rank | waiting per step per rank |")
    print("| --- | ---: | ---: | --- | --- |")
    for r in rows:
        sent = ", ".join(f"{b / 1024:.0f} KiB"
                         for b in r.get("sent_bytes_per_step", [])) or "-"
        wait = ", ".join(f"{w * 1e3:.2f} ms"
                         for w in r.get("wait_s_per_step", [])) or "-"
        print(f"| {r['config']} | {r['tokens_per_s']:.0f} | "
              f"{r['tokens_per_s'] / base:.2f}x | {sent} | {wait} |")


main()
