#!/usr/bin/env python3
"""Runs a command that must fail cleanly on hostile input, for lit tests.

  expect-error.py [--exit CODES] [--timeout S] -- COMMAND [ARGS...]

Passes (exit 0) only if COMMAND ends by itself within S seconds (default 60)
with one of the exit codes CODES (comma-separated, default 1,2): never a
signal, an abort, a hang or a success. Its stdout and stderr are copied to
stdout, so that FileCheck can check the message. On a timeout the whole
process group is killed, so no process is left behind.
"""

import argparse
import os
import signal
import subprocess
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exit", default="1,2")
    parser.add_argument("--timeout", type=float, default=60)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command")
    allowed = {int(c) for c in args.exit.split(",")}
    process = subprocess.Popen(command, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        sys.stdout.write(output.decode(errors="replace"))
        print("expect-error: timed out after %gs: %s" % (args.timeout,
                                                         " ".join(command)))
        return 1
    sys.stdout.write(output.decode(errors="replace"))
    code = process.returncode
    if code < 0:
        print("expect-error: killed by signal %s: %s" % (
            signal.Signals(-code).name, " ".join(command)))
        return 1
    if code not in allowed:
        print("expect-error: exit %d, wanted one of %s: %s" % (
            code, sorted(allowed), " ".join(command)))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
