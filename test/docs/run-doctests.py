#!/usr/bin/env python3
"""Runs the shell blocks of the documentation that are marked runnable, so a
renamed flag or a moved file fails a test instead of a reader.

Usage: run-doctests.py --build-dir BUILD [--source-dir SRC] [--list]
                       [--timeout SECONDS] [FILE.md ...]

FILEs (relative to SRC) default to README.md and docs/tutorial-*.md.

Markers, invisible on GitHub, which renders the blocks as ordinary ones:

    <!-- doctest -->
    ```sh
    pipe-gen --model=tiny-gpt -o m.mlir
    ```

runs the block with bash (`set -eo pipefail`): it passes when bash exits 0
within the timeout. A block marked

    <!-- doctest-output -->
    ```text
    step time: ... s
    ```

right after a runnable block is that block's expected output (stdout and
stderr together): each non-empty line must match an output line, in order,
other output lines may come between; `...` inside a line matches any text.

The blocks of one file run in order in one scratch directory, so a block
may use the files an earlier one wrote. The scratch directory links every
top-level entry of SRC (so `test/...`, `examples/...` paths work as they do
from the repository root) and `build` to BUILD; BUILD/bin leads PATH.
Unmarked blocks are left alone (the GPU, `scripts/run`, `scripts/test`).
A FILE without a runnable block is an error: its markers were lost.
"""

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

RUN_MARKER = "<!-- doctest -->"
OUTPUT_MARKER = "<!-- doctest-output -->"
FENCE = re.compile(r"^(```+|~~~+)\s*([\w+-]*)")
SHELLS = {"sh", "bash", "shell"}


class Block:
    def __init__(self, path, line, lang, marker, text):
        self.path, self.line, self.lang = path, line, lang
        self.marker, self.text = marker, text
        self.expected = None  # the Block of its expected output

    def where(self):
        return f"{self.path}:{self.line}"


def parse(path, text):
    """The fenced blocks of a Markdown file, with the marker before each."""
    blocks = []
    lines = text.splitlines()
    i = 0
    previous = ""  # the last non-blank line outside blocks
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            if lines[i].strip():
                previous = lines[i].strip()
            i += 1
            continue
        fence, lang = match.group(1), match.group(2)
        start = i + 1
        i += 1
        body = []
        while i < len(lines) and not lines[i].startswith(fence):
            body.append(lines[i])
            i += 1
        marker = previous if previous in (RUN_MARKER, OUTPUT_MARKER) else None
        blocks.append(Block(path, start, lang, marker, "\n".join(body) + "\n"))
        previous = ""
        i += 1
    return blocks


def runnable_blocks(path, blocks):
    """The marked blocks with their expected outputs; errors for misuse."""
    errors, runnable = [], []
    for block in blocks:
        if block.marker == RUN_MARKER:
            if block.lang not in SHELLS:
                errors.append(f"{block.where()}: a runnable block must be "
                              f"sh or bash, not '{block.lang}'")
                continue
            runnable.append(block)
        elif block.marker == OUTPUT_MARKER:
            if not runnable or runnable[-1].expected or \
                    blocks[blocks.index(block) - 1] is not runnable[-1]:
                errors.append(f"{block.where()}: expected output that does "
                              "not follow a runnable block")
                continue
            runnable[-1].expected = block
    return runnable, errors


def line_pattern(expected_line):
    parts = [re.escape(part) for part in expected_line.strip().split("...")]
    return re.compile(r"\s*" + ".*".join(parts) + r"\s*")


def check_output(expected, output):
    """None if the output matches, else what is missing."""
    lines = output.splitlines()
    position = 0
    for wanted in expected.text.splitlines():
        if not wanted.strip():
            continue
        pattern = line_pattern(wanted)
        while position < len(lines) and not pattern.fullmatch(lines[position]):
            position += 1
        if position == len(lines):
            return f"no output line matches '{wanted.strip()}' " \
                   f"({expected.where()})"
        position += 1
    return None


def make_scratch(source_dir, build_dir):
    scratch = tempfile.mkdtemp(prefix="pipe-doctest-")
    for entry in os.listdir(source_dir):
        if entry in (".git", "build"):
            continue
        os.symlink(os.path.join(source_dir, entry),
                   os.path.join(scratch, entry))
    os.symlink(build_dir, os.path.join(scratch, "build"))
    return scratch


def run_file(path, runnable, args):
    scratch = make_scratch(args.source_dir, args.build_dir)
    env = dict(os.environ)
    env["PATH"] = os.path.join(args.build_dir, "bin") + os.pathsep + \
        env.get("PATH", "")
    failures = 0
    try:
        for block in runnable:
            start = time.monotonic()
            try:
                result = subprocess.run(
                    ["bash", "-c", "set -eo pipefail\n" + block.text],
                    cwd=scratch, env=env, stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT, timeout=args.timeout)
                output = result.stdout.decode("utf-8", "replace")
                problem = None if result.returncode == 0 else \
                    f"exit status {result.returncode}"
            except subprocess.TimeoutExpired as timeout:
                output = (timeout.stdout or b"").decode("utf-8", "replace")
                problem = f"still running after {args.timeout} s"
            if problem is None and block.expected:
                problem = check_output(block.expected, output)
            seconds = time.monotonic() - start
            if problem is None:
                print(f"PASS {block.where()} ({seconds:.1f} s)", flush=True)
                continue
            failures += 1
            print(f"FAIL {block.where()} ({seconds:.1f} s): {problem}")
            print("--- block:\n" + block.text.rstrip())
            tail = "\n".join(output.splitlines()[-40:])
            print("--- output (last 40 lines):\n" + tail + "\n---", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir",
                        help="the build whose bin/ the blocks run (not "
                        "needed with --list)")
    parser.add_argument("--source-dir", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    parser.add_argument("--timeout", type=float, default=120,
                        help="seconds per block (default 120)")
    parser.add_argument("--list", action="store_true",
                        help="print the runnable blocks, run nothing")
    parser.add_argument("files", nargs="*")
    args = parser.parse_args()
    if not args.list and not args.build_dir:
        parser.error("--build-dir is required to run the blocks")
    args.source_dir = os.path.abspath(args.source_dir)
    if args.build_dir:
        args.build_dir = os.path.abspath(args.build_dir)
    files = args.files or ["README.md"] + sorted(
        os.path.relpath(p, args.source_dir) for p in
        glob.glob(os.path.join(args.source_dir, "docs", "tutorial-*.md")))

    errors, plan, skipped = [], [], 0
    for path in files:
        with open(os.path.join(args.source_dir, path), encoding="utf-8") as f:
            blocks = parse(path, f.read())
        runnable, file_errors = runnable_blocks(path, blocks)
        errors += file_errors
        if not runnable:
            errors.append(f"{path}: no runnable block (mark one with "
                          f"'{RUN_MARKER}' on the line before its fence)")
        skipped += sum(1 for b in blocks
                       if b.lang in SHELLS and b.marker is None)
        plan.append((path, runnable))
    for error in errors:
        print(f"error: {error}")
    if errors:
        return 1
    count = sum(len(runnable) for _, runnable in plan)
    if args.list:
        for _, runnable in plan:
            for block in runnable:
                print(block.where() + (" (with expected output)"
                                       if block.expected else ""))
        return 0

    start = time.monotonic()
    failures = sum(run_file(path, runnable, args) for path, runnable in plan)
    print(f"doctest: {count - failures} of {count} runnable blocks passed "
          f"in {len(plan)} files ({skipped} unmarked shell blocks not run), "
          f"{time.monotonic() - start:.1f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
