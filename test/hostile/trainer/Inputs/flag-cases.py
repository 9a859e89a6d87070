#!/usr/bin/env python3
"""Runs every training flag at and beyond its documented bounds.

  flag-cases.py "EXPECT_ERROR" RUNNER ARTIFACT

For each case, RUNNER (pipe-runner) gets `ARTIFACT --weights w FLAG VALUE`
under EXPECT_ERROR (the %expect_error substitution: expect-error.py, run
in this process so that hundreds of cases cost no interpreter start-up
each). ARTIFACT does not exist,
so a value the parser accepts ends in "ARTIFACT: cannot open" (exit 1), and
one it refuses in a usage error (exit 2) that must name the flag and the
value. Prints one line per case and a count; exits 1 if any case failed.
"""

import contextlib
import importlib.util
import io
import shlex
import sys

MAX_STEPS = 10**11  # pipe_rt::kMaxSteps
MAX_THREADS = 1024  # pipe_rt::kMaxOptimizerThreads
COUNT_FLAGS = ["--steps", "--stop-after", "--warmup", "--eval-every",
               "--eval-batches", "--checkpoint-every", "--log-every",
               "--profile-skip"]
REAL_FLAGS = ["--lr", "--min-lr", "--momentum", "--dampening", "--eps",
              "--weight-decay"]
JUNK = ["-1", "1x", " 1", "+1", "1.5", "0x10", "", "١"]


def cases():
    """(flag, value, accepted)"""
    for flag in COUNT_FLAGS:
        for v in [0, 1, 2**31, 2**32 + 1, MAX_STEPS]:
            yield flag, str(v), True
        for v in [MAX_STEPS + 1, 2**63 - 1, 2**63, 2**64, 2**64 + 1, 10**30]:
            yield flag, str(v), False
        for v in JUNK:
            yield flag, v, False
    for v in [0, 2**63, 2**64 - 1]:
        yield "--seed", str(v), True
    for v in [2**64, 2**64 + 1, -1]:
        yield "--seed", str(v), False
    for v in [0, 1, MAX_THREADS]:
        yield "--threads", str(v), True
    for v in [MAX_THREADS + 1, 100000, 2**32, 2**32 + 1, -1]:
        yield "--threads", str(v), False
    for v in ["1e6", "0.5", "1e-9"]:
        yield "--watchdog", v, True
    for v in ["1000000.5", "1e20", "1e300", "inf", "-inf", "nan", "-1", "0",
              "-0", "5s", ""]:
        yield "--watchdog", v, False
    for flag in ["--beta1", "--beta2"]:
        for v in ["0", "0.5", "0.999999"]:
            yield flag, v, True
        for v in ["1", "1.0000001", "2", "nan", "-nan", "inf", "-0.1",
                  "-1e-30", "x"]:
            yield flag, v, False
    for flag in REAL_FLAGS:
        # --min-lr must stay <= --lr (1e-3 by default): only 0 for it.
        for v in ["0"] + ([] if flag == "--min-lr" else ["1e-3", "1e38"]):
            yield flag, v, True
        for v in ["1e39", "inf", "-inf", "nan", "-0.5", "1e-3x", ""]:
            yield flag, v, False
    for v in ["1", "1e-6", "1e38"]:
        yield "--clip", v, True
    for v in ["0", "-1", "inf", "nan", "1e39"]:
        yield "--clip", v, False


def load_expect_error(substitution):
    """expect-error.py, the last word of the %expect_error substitution."""
    path = shlex.split(substitution)[-1]
    spec = importlib.util.spec_from_file_location("expect_error", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def expect_error(module, args):
    """Runs expect-error.py's main on `args`: (its status, its output)."""
    out = io.StringIO()
    saved, sys.argv = sys.argv, ["expect-error.py"] + args
    try:
        with contextlib.redirect_stdout(out):
            status = module.main()
    finally:
        sys.argv = saved
    return status, out.getvalue()


def main():
    module = load_expect_error(sys.argv[1])
    runner, artifact = sys.argv[2], sys.argv[3]
    failures = total = 0
    for flag, value, accepted in cases():
        total += 1
        code = "1" if accepted else "2"
        status, out = expect_error(module, [
            "--exit", code, "--timeout", "30", "--", runner, artifact,
            "--weights", "w", flag, value])
        if accepted:
            ok = status == 0 and artifact + ": cannot open" in out
        else:
            ok = status == 0 and flag in out and value in out
        word = "accepted" if accepted else "refused"
        if ok:
            print("ok: %s %r %s: %s" % (flag, value, word, out.strip()))
        else:
            failures += 1
            print("FAIL: %s %r should be %s: %s" % (flag, value, word,
                                                    out.strip()))
    print("%d cases, %d failures" % (total, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
