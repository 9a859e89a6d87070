#!/usr/bin/env python3
"""The CI run of the fuzz targets (ctest `fuzz`; docs/fuzzing.md).

    run-fuzzers.py --build-dir BUILD/fuzz [--tools-dir BUILD/bin]
                   [--scale F] [--jobs N]

Configures and builds test/fuzz with clang-22 in BUILD/fuzz (ccache when
installed), then runs every target once over a fresh seed corpus
(make-corpus.py) with a fixed seed and run count, and once on each
regression input under test/hostile/fuzz/<target>/. With --tools-dir, it
also runs mutate-tools.py for a bounded number of mutants with a fixed seed.
Fails on any crash, leak, sanitizer report or timeout. Exits 77 (ctest:
skipped) when clang-22 or its libFuzzer/sanitizer runtimes are missing.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SKIP = 77

# target -> (runs in CI, dictionary); the counts take a few seconds each on
# one core of the CI machine.
TARGETS = {
    "runtime-safetensors": (40000, "safetensors.dict"),
    "support-safetensors": (12000, "safetensors.dict"),
    "manifest": (40000, "manifest.dict"),
    "training-data": (20000, "safetensors.dict"),
    "checkpoint": (15000, "safetensors.dict"),
    "schedule-checker": (25000, None),
}
FUZZER_FLAGS = ["-seed=1", "-max_len=4096", "-timeout=10",
                "-rss_limit_mb=2048", "-print_final_stats=1"]


def find_clang():
    """clang++-22 if it links a libFuzzer + ASan + UBSan program."""
    clang = shutil.which("clang++-22")
    if not clang:
        return None, "clang++-22 not found (apt-get install clang-22 " \
                     "libfuzzer-22-dev libclang-rt-22-dev)"
    with tempfile.TemporaryDirectory() as tmp:
        source = os.path.join(tmp, "probe.cpp")
        with open(source, "w") as f:
            f.write('#include <cstddef>\n#include <cstdint>\nextern "C" int '
                    "LLVMFuzzerTestOneInput(const uint8_t *, size_t) "
                    "{ return 0; }\n")
        probe = subprocess.run(
            [clang, "-fsanitize=fuzzer,address,undefined", source, "-o",
             os.path.join(tmp, "probe")], capture_output=True, text=True)
        if probe.returncode != 0:
            return None, "clang++-22 cannot link -fsanitize=fuzzer,address," \
                         "undefined (libclang-rt-22-dev missing?):\n" + \
                         probe.stderr[-2000:]
    return clang, None


def build(clang, build_dir, jobs):
    if not os.path.exists(os.path.join(build_dir, "build.ninja")):
        command = ["cmake", "-S", HERE, "-B", build_dir, "-G", "Ninja",
                   "-DCMAKE_CXX_COMPILER=" + clang]
        if shutil.which("ccache"):
            command.append("-DCMAKE_CXX_COMPILER_LAUNCHER=ccache")
        subprocess.run(command, check=True)
    subprocess.run(["cmake", "--build", build_dir, "-j", str(jobs)],
                   check=True)


def scratch_env(scratch):
    """The data and checkpoint targets write their input to a file under
    TMPDIR for every run: keep it in memory (/dev/shm) where possible."""
    env = dict(os.environ)
    env["TMPDIR"] = scratch
    return env


def run_target(build_dir, target, runs, dictionary, corpus, env):
    command = [os.path.join(build_dir, "fuzz-" + target)] + FUZZER_FLAGS + [
        "-runs=%d" % runs,
        "-artifact_prefix=" + os.path.join(build_dir, "artifacts",
                                           target + "-")]
    if dictionary:
        command.append("-dict=" + os.path.join(HERE, dictionary))
    start = time.time()
    result = subprocess.run(command + [corpus], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True,
                            errors="replace", env=env)
    seconds = time.time() - start
    ok = result.returncode == 0
    print("fuzz-%s: %d runs in %.1f s (%.0f/s): %s" % (
        target, runs, seconds, runs / max(seconds, 1e-9),
        "ok" if ok else "FAILED (exit %d)" % result.returncode))
    if not ok:
        print(result.stdout[-20000:])
    return ok


def run_regressions(build_dir, target, env):
    directory = os.path.join(ROOT, "test/hostile/fuzz", target)
    if not os.path.isdir(directory):
        return True
    inputs = sorted(os.path.join(directory, name)
                    for name in os.listdir(directory)
                    if not name.startswith(".") and not name.endswith(".md"))
    if not inputs:
        return True
    result = subprocess.run(
        [os.path.join(build_dir, "fuzz-" + target), "-timeout=10",
         "-rss_limit_mb=2048"] + inputs,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        errors="replace", env=env)
    ok = result.returncode == 0
    print("fuzz-%s: %d regression inputs: %s" % (
        target, len(inputs), "ok" if ok else "FAILED"))
    if not ok:
        print(result.stdout[-20000:])
    return ok


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--tools-dir")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="multiplies every run count")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    build_dir = os.path.abspath(args.build_dir)

    clang, why = find_clang()
    if not clang:
        print("fuzz: skipped: " + why)
        return SKIP
    build(clang, build_dir, args.jobs)
    os.makedirs(os.path.join(build_dir, "artifacts"), exist_ok=True)

    ok = True
    shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    with tempfile.TemporaryDirectory(dir=build_dir) as corpus, \
            tempfile.TemporaryDirectory(dir=shm) as scratch:
        env = scratch_env(scratch)
        subprocess.run([sys.executable, os.path.join(HERE, "make-corpus.py"),
                        corpus], check=True)
        for target, (runs, dictionary) in TARGETS.items():
            ok &= run_regressions(build_dir, target, env)
            ok &= run_target(build_dir, target,
                             max(1, int(runs * args.scale)), dictionary,
                             os.path.join(corpus, target), env)

    if args.tools_dir:
        tools = os.path.abspath(args.tools_dir)
        if os.path.exists(os.path.join(tools, "pipe-opt")):
            result = subprocess.run(
                [sys.executable, os.path.join(HERE, "mutate-tools.py"),
                 "--tools-dir", tools, "--seed", "1", "--count",
                 str(max(1, int(40 * args.scale))), "--out",
                 os.path.join(build_dir, "mutate-tools")])
            ok &= result.returncode == 0
        else:
            print("mutate-tools: skipped: no pipe-opt in " + tools)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
