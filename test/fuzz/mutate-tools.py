#!/usr/bin/env python3
"""Mutation fuzzer for the parser front-end, through the tools.

    mutate-tools.py --tools-dir BUILD/bin [--seed N] [--count N | --time S]
                    [--out DIR] [--timeout S] [--jobs 1|2]

Takes the .mlir inputs under test/ (Transforms, Dialect, malformed/Inputs,
e2e, hostile; split at `// -----`, expected-diagnostic comments removed)
as seeds and applies deterministic
mutations (random.Random(seed)): byte flips, truncations, token
duplications and deletions, splices of two seeds, integers replaced by
boundary values, bracket and alias games. Each mutant goes to `pipe-opt`
(plain, and with --pipe-check-input) and, for seeds that hold a
pipe.schedule, sometimes to `pipe-compile`, each under a timeout.

Findings: a signal or abort (`crash`), a timeout (`hang`), and exit 0 from
`pipe-opt --pipe-check-input` after printing an error (`error-exit-0`).
Crashes of MLIR's parser that the tools contained (their forked parse died
and they reported it, InputGuard.h) are no findings, but are counted and
listed by the parser's last diagnostic (`contained`): bugs of MLIR 22
worth reporting upstream.
Each is classified by a signature (the kind, the signal, and the first
frames of the project or MLIR in the tool's stack dump) and the first input
of every signature is saved in DIR (default ./mutate-tools-findings) as
<signature-hash>.mlir with a .txt holding the command and its output. The
run goes on after a finding. Prints runs, runs/s and the signatures; exits 1
if there was any finding.
"""

import argparse
import hashlib
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SEED_DIRS = ["test/Transforms", "test/Dialect", "test/malformed/Inputs",
             "test/e2e", "test/hostile"]
BOUNDARY = [b"0", b"-1", b"1", b"2", b"255", b"256", b"65536", b"2147483647",
            b"2147483648", b"-2147483648", b"4294967296",
            b"9223372036854775807", b"9223372036854775808",
            b"-9223372036854775808", b"18446744073709551616",
            b"1" + b"0" * 40, b"1.0e309", b"-0", b"0x7fffffff", b"nan"]
TOKEN = re.compile(rb'"(?:[^"\\\n]|\\.)*"|[%@#^!][\w.$-]*|\w+|\s+|.', re.S)
FRAME = re.compile(r"^\s*#\d+ 0x[0-9a-f]+ (?:in )?(.+?)(?: \(|$)")
INFRA = re.compile(r"llvm::sys::|SignalHandler|PrintStackTrace|__restore_rt|"
                   r"raise|abort|__assert|__libc|_start|^0x|"
                   r"__pthread_kill|\?\?|pthread_kill|gsignal")


def load_seeds():
    seeds = []
    for directory in SEED_DIRS:
        for base, _, names in sorted(os.walk(os.path.join(ROOT, directory))):
            for name in sorted(names):
                if not name.endswith(".mlir"):
                    continue
                with open(os.path.join(base, name), "rb") as f:
                    text = f.read()
                # The tests' expected-diagnostic comments are not input.
                text = re.sub(rb"//\s*expected-[^\n]*", b"", text)
                for chunk in re.split(rb"\n// -----\n", text):
                    if chunk.strip():
                        seeds.append((os.path.relpath(
                            os.path.join(base, name), ROOT), chunk))
    return seeds


def mutate(rng, seeds, text):
    """One to three mutations of `text`."""
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(9)
        if not text:
            return text
        if kind == 0:  # flip bits of a byte
            i = rng.randrange(len(text))
            text = text[:i] + bytes([text[i] ^ (1 << rng.randrange(8))]) + \
                text[i + 1:]
        elif kind == 1:  # truncate
            text = text[:rng.randrange(len(text))]
        elif kind in (2, 3):  # duplicate / delete a token
            tokens = TOKEN.findall(text)
            i = rng.randrange(len(tokens))
            tokens[i] = tokens[i] * 2 if kind == 2 else b""
            text = b"".join(tokens)
        elif kind == 4:  # splice with another seed
            other = rng.choice(seeds)[1]
            text = text[:rng.randrange(len(text))] + \
                other[rng.randrange(len(other)):]
        elif kind == 5:  # an integer becomes a boundary value
            numbers = list(re.finditer(rb"-?\b\d+\b", text))
            if numbers:
                m = rng.choice(numbers)
                text = text[:m.start()] + rng.choice(BOUNDARY) + \
                    text[m.end():]
        elif kind == 6:  # bracket games
            brackets = [m.start() for m in re.finditer(rb"[()\[\]{}<>]", text)]
            i = rng.choice(brackets) if brackets else 0
            game = rng.randrange(3)
            if game == 0:
                text = text[:i] + text[i + 1:]
            elif game == 1:
                text = text[:i] + rng.choice([b"(", b"[", b"{", b"<"]) * \
                    rng.choice([1, 2, 50, 2000]) + text[i:]
            else:
                text = text[:i] + text[i:i + 1] * 2 + text[i + 1:]
        elif kind == 7:  # alias games
            aliases = re.findall(rb"^([#!][\w.$-]+) = ", text, re.M)
            game = rng.randrange(3)
            if aliases and game == 0:  # defined twice
                name = rng.choice(aliases)
                text = name + b" = " + name + b"\n" + text
            elif aliases and game == 1:  # a use of an undefined alias
                name = rng.choice(aliases)
                text = text.replace(name + b" = ", name + b"_x = ", 1)
            else:  # an alias that refers to itself or a chain
                text = b"#a = #b\n#b = #a\n" + text
        else:  # insert a random slice of the text elsewhere
            i, j = sorted(rng.randrange(len(text) + 1) for _ in range(2))
            k = rng.randrange(len(text) + 1)
            text = text[:k] + text[i:j] + text[k:]
    return text


def signature(kind, output):
    """The kind plus the first frames (project/MLIR) of the stack dump, or
    the first error line when there is none."""
    frames = []
    for line in output.splitlines():
        m = FRAME.match(line)
        if m and not INFRA.search(m.group(1)):
            name = re.sub(r"\(.*", "", m.group(1)).strip()
            if name and name not in frames:
                frames.append(name)
        if len(frames) == 3:
            break
    if not frames:
        for line in output.splitlines():
            if "error" in line or "Assertion" in line:
                frames.append(re.sub(r"^[^:]*:\d+:\d+: ", "", line)[:120])
                break
    return kind + ": " + " <- ".join(frames or ["(no stack dump)"])


def run_one(command, timeout):
    for attempt in range(30):
        try:
            process = subprocess.Popen(command, stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL,
                                       start_new_session=True)
            break
        except OSError:
            # The tool is being relinked under a long run: wait for it.
            if attempt == 29:
                raise
            time.sleep(1)
    try:
        output, _ = process.communicate(timeout=timeout)
        return process.returncode, output.decode(errors="replace")
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        return None, output.decode(errors="replace")


def classify(command, code, output):
    if code is None:
        return signature("hang", output)
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = "signal %d" % -code
        return signature("crash " + name, output)
    if code >= 128 and ("Stack dump" in output or "PLEASE submit" in output):
        return signature("crash exit %d" % code, output)
    if code == 0 and "--pipe-check-input" in command and "error:" in output:
        return signature("error-exit-0", output)
    return None


def contained(output):
    """The parser's last words when the tool contained a parser crash."""
    m = re.search(r"MLIR's parser (crashed \([^)]*\)).*?"
                  r"(?:\(the parser said: (?:[^:]*:\d+:\d+: )?(.*)\))?$",
                  output, re.M)
    if not m:
        return None
    return "contained %s: %s" % (m.group(1), (m.group(2) or "")[:120])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tools-dir", required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--count", type=int, default=0,
                        help="mutants to try (0: until --time)")
    parser.add_argument("--time", type=float, default=0,
                        help="seconds to run (0: until --count)")
    parser.add_argument("--out", default="mutate-tools-findings")
    parser.add_argument("--timeout", type=float, default=20)
    parser.add_argument("--jobs", type=int, default=1, choices=[1, 2])
    args = parser.parse_args()
    if not args.count and not args.time:
        args.count = 200
    opt = os.path.join(args.tools_dir, "pipe-opt")
    compile_ = os.path.join(args.tools_dir, "pipe-compile")
    seeds = load_seeds()
    rng = random.Random(args.seed)
    os.makedirs(args.out, exist_ok=True)
    findings = {}  # signature -> count
    contained_crashes = {}  # signature -> count
    runs = 0
    start = time.time()

    with tempfile.TemporaryDirectory() as tmp:
        def job(index):
            name, seed = seeds[index[0]]
            mutant = index[1]
            path = os.path.join(tmp, "m%d.mlir" % index[2])
            with open(path, "wb") as f:
                f.write(mutant)
            commands = [[opt, path, "-o", os.devnull],
                        [opt, "--pipe-check-input", path, "-o", os.devnull]]
            if b"pipe.schedule" in seed and index[3]:
                commands.append([compile_, path, "-o",
                                 os.path.join(tmp, "m%d.so" % index[2])])
            results = []
            for command in commands:
                code, output = run_one(command, args.timeout)
                results.append((command, code, output))
            return name, mutant, results

        def batches():
            n = 0
            while (not args.count or n < args.count) and \
                    (not args.time or time.time() - start < args.time):
                i = rng.randrange(len(seeds))
                yield (i, mutate(rng, seeds, seeds[i][1]), n % 2,
                       rng.random() < 0.1)
                n += 1

        def results():
            # At most 2 * jobs mutants in flight (Executor.map would draw
            # every mutant up front).
            with ThreadPoolExecutor(max_workers=args.jobs) as pool:
                pending = []
                for item in batches():
                    pending.append(pool.submit(job, item))
                    if len(pending) >= 2 * args.jobs:
                        yield pending.pop(0).result()
                for future in pending:
                    yield future.result()

        for name, mutant, outcome in results():
            for command, code, output in outcome:
                runs += 1
                found = classify(command, code, output)
                if not found:
                    kept = contained(output)
                    if kept:
                        contained_crashes[kept] = \
                            contained_crashes.get(kept, 0) + 1
                    continue
                findings[found] = findings.get(found, 0) + 1
                if findings[found] > 1:
                    continue
                digest = hashlib.sha1(found.encode()).hexdigest()[:12]
                base = os.path.join(args.out, digest)
                with open(base + ".mlir", "wb") as f:
                    f.write(mutant)
                tool = os.path.basename(command[0])
                with open(base + ".txt", "w") as f:
                    f.write("%s\nseed: %s\ncommand: %s %s\n\n%s" % (
                        found, name, tool, " ".join(command[1:-2]),
                        output[-20000:]))
                print("finding: %s (%s, from %s)" % (found, base, name),
                      flush=True)

    seconds = time.time() - start
    print("mutate-tools: %d tool runs in %.1f s (%.1f runs/s), %d findings, "
          "%d distinct signatures" % (runs, seconds, runs / max(seconds, 1e-9),
                                      sum(findings.values()), len(findings)))
    for found, count in sorted(findings.items()):
        print("  %4d  %s" % (count, found))
    print("mutate-tools: %d contained parser crashes, %d distinct" % (
        sum(contained_crashes.values()), len(contained_crashes)))
    for found, count in sorted(contained_crashes.items()):
        print("  %4d  %s" % (count, found))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
