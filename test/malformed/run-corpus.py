#!/usr/bin/env python3
"""Feeds malformed and hostile input to pipe-opt and checks that it fails
cleanly: exit status 1 (never a signal, never a hang) and an
`<file>:<line>:<col>: error:` diagnostic. Children run with an 8 MiB stack
limit, as under `ulimit -s 8192`, whatever the limit of the caller.

  run-corpus.py PIPE_OPT INPUTS_DIR WORK_DIR [--seed FILE]...

Checked:
  * every file in INPUTS_DIR (small, checked in) must be rejected; among
    them damaged-bytecode.mlirbc, a bytecode file with four bytes changed
    that corrupts the heap of MLIR's bytecode reader (pipe-opt refuses
    bytecode unless --pipe-allow-bytecode is given);
  * hostile inputs generated here (deep nesting of every kind, alias chains
    that nest or expand exponentially) must be rejected with the limit's
    message;
  * valid but pathological inputs (empty, comments only, nesting deeper than
    the default 8 MiB stack allows, huge splats, invalid UTF-8 in a string)
    must be accepted;
  * 40 truncations and 40 deterministic token mutations of each seed file
    must be accepted or rejected cleanly (printed and, again, round-tripped).
"""

import argparse
import concurrent.futures
import os
import random
import re
import resource
import subprocess
import sys

STACK_BYTES = 8 << 20
TIMEOUT_S = 60


def limit_stack():
    _, hard = resource.getrlimit(resource.RLIMIT_STACK)
    soft = STACK_BYTES if hard == resource.RLIM_INFINITY else min(STACK_BYTES, hard)
    resource.setrlimit(resource.RLIMIT_STACK, (soft, hard))


# Deep nesting: name -> function of n giving the text.
P = "pipe.param @w : tensor<4xf32> {a = %s}\n"


def alias_chain(n, fmt_first, fmt_next, use):
    lines = [fmt_first] + [fmt_next % (i, i - 1) for i in range(1, n)]
    return "\n".join(lines) + "\n" + use % (n - 1) + "\n"


DEEP = {
    "arrays": lambda n: P % ("[" * n + "]" * n),
    "dictionaries": lambda n: P % ("{b = " * n + "1" + "}" * n),
    "parentheses": lambda n: "func.func private @f(" + "(" * n + ")" * n + ")\n",
    "tuples": lambda n: P % ("tuple<" * n + "i32" + ">" * n),
    "modules": lambda n: "builtin.module {" * n + "}" * n + "\n",
    "regions": lambda n: "func.func @f() {\n" + "scf.execute_region {\n" * n
    + "scf.yield\n}\n" * n + "return\n}\n",
    "callsites": lambda n: "pipe.param @w : tensor<4xf32> loc(" + "callsite(" * n
    + '"a"' + ' at "b")' * n + ")\n",
    "unary-minus": lambda n: P % ("affine_map<(d0) -> (" + "- " * n + "d0)>"),
    "affine-chain": lambda n: P % ("affine_map<(d0, d1) -> (d0"
                                   + " floordiv 2 + d1" * n + ")>"),
    "attribute-aliases": lambda n: alias_chain(
        n, "#a0 = [1]", "#a%d = [#a%d]", P % "#a%d"),
    "type-aliases": lambda n: alias_chain(
        n, "!t0 = tuple<i32>", "!t%d = tuple<!t%d>",
        "func.func private @f(!t%d)"),
}

# Alias chains that use the previous alias twice: linear text, exponential
# printed form.
EXPONENTIAL = {
    "attribute-dag": "\n".join(
        ["#a0 = [1]"]
        + ["#a%d = [#a%d, #a%d]" % (i, i - 1, i - 1) for i in range(1, 80)]
    ) + "\n" + P % "#a79",
}
EXPONENTIAL["type-dag"] = "\n".join(
    ["!t0 = tuple<i32>"]
    + ["!t%d = tuple<!t%d, !t%d>" % (i, i - 1, i - 1) for i in range(1, 80)]
) + "\nfunc.func private @f(!t79)\n"

VALID = {
    "empty": ("", []),
    "only-comments": ("// nothing here\n// -----\n   \n// still nothing\n", []),
    "utf8-in-string": ('pipe.param @w : tensor<4xf32> {note = "\xff\xfe\x80"}\n',
                       ["--verify-roundtrip"]),
    "huge-splat": ("pipe.param @w : tensor<1000000000x1000000xf32> = dense<0.0>\n",
                   ["--verify-roundtrip"]),
    # Deeper than the 8 MiB default stack can parse (about 6.7k levels):
    # passes only because pipe-opt works on a thread with a large stack.
    "deep-within-raised-limit": (DEEP["arrays"](20000), ["--pipe-max-nesting=30000"]),
    "nested-regions-at-limit": (DEEP["regions"](1000), []),
    "locations-dag": ("\n".join(
        ['#l0 = loc("a":1:2)']
        + ["#l%d = loc(callsite(#l%d at #l%d))" % (i, i - 1, i - 1)
           for i in range(1, 60)]) + "\npipe.param @w : tensor<4xf32> loc(#l59)\n",
        ["--mlir-print-debuginfo"]),
}

LOCATED_ERROR = r"^%s:\d+:\d+: error: "


def run(pipe_opt, path, args):
    try:
        proc = subprocess.run([pipe_opt, path] + list(args),
                              stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE,
                              preexec_fn=limit_stack,
                              timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return "timeout", ""
    return proc.returncode, proc.stderr.decode("utf-8", "replace")


def check(pipe_opt, path, args, expect, message=None):
    """expect: 'error', 'ok' or 'clean' (either). Returns a failure or None."""
    rc, err = run(pipe_opt, path, args)
    located = re.search(LOCATED_ERROR % re.escape(path), err, re.M)
    crashed = "Stack dump" in err or "PLEASE submit a bug report" in err
    what = "%s %s" % (path, " ".join(args))
    if rc == "timeout":
        return "%s: no result within %d s" % (what, TIMEOUT_S)
    if rc not in (0, 1) or crashed:
        return "%s: exit status %s (a crash?)\n%s" % (what, rc, err[-2000:])
    if expect == "ok" and rc != 0:
        return "%s: rejected valid input\n%s" % (what, err[-2000:])
    if expect == "error" and rc != 1:
        return "%s: accepted malformed input" % what
    if rc == 1 and not located:
        return "%s: error without a file:line:col location\n%s" % (what, err[-2000:])
    if message and message not in err:
        return "%s: expected %r in\n%s" % (what, message, err[-2000:])
    return None


def mutations(text, count, rnd):
    tokens = re.findall(r'\s+|"[^"\n]*"|[@%#!^]?[\w.$-]+|.', text, re.S)
    junk = ["-1", "0", "18446744073709551616", "@nope", "tensor<?xf32>", "{", "}",
            "(", ")", "[", "]", "<", ">", '"', "%0", "pipe.wait", "gradient",
            "// -----", "!pipe.token", "4611686018427387904", "\u00ff"]
    for _ in range(count):
        t = list(tokens)
        for _ in range(rnd.randrange(1, 4)):
            i = rnd.randrange(len(t))
            kind = rnd.randrange(3)
            if kind == 0:
                del t[i]
            elif kind == 1:
                t[i] = rnd.choice(junk)
            else:
                j = rnd.randrange(len(t))
                t[i], t[j] = t[j], t[i]
        yield "".join(t)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pipe_opt")
    parser.add_argument("inputs")
    parser.add_argument("work")
    parser.add_argument("--seed", action="append", default=[])
    opts = parser.parse_args()
    os.makedirs(opts.work, exist_ok=True)

    jobs = []  # (path, args, expect, message)
    for name in sorted(os.listdir(opts.inputs)):
        jobs.append((os.path.join(opts.inputs, name), [], "error", None))

    def write(name, text, binary=False):
        path = os.path.join(opts.work, name)
        with open(path, "wb") as f:
            f.write(text if binary else text.encode("utf-8", "surrogateescape"))
        return path

    for name, make in DEEP.items():
        jobs.append((write("deep-%s.mlir" % name, make(100000)), [], "error",
                     "levels deep here"))
    for name, text in EXPONENTIAL.items():
        jobs.append((write("%s.mlir" % name, text), [], "error",
                     "bytes when printed"))
    for name, (text, args) in VALID.items():
        data = text.encode("latin-1") if name == "utf8-in-string" else text
        jobs.append((write("valid-%s.mlir" % name, data,
                           binary=isinstance(data, bytes)), args, "ok", None))

    # Truncations and mutations of each seed go into one file, split into
    # chunks that pipe-opt processes independently (-split-input-file): one
    # process per seed keeps this fast.
    rnd = random.Random(1234)
    for seed in opts.seed:
        with open(seed, encoding="utf-8") as f:
            text = f.read()
        base = os.path.splitext(os.path.basename(seed))[0]
        chunks = [text[:len(text) * k // 41] for k in range(1, 41)]
        chunks += list(mutations(text, 40, rnd))
        jobs.append((write("%s-variants.mlir" % base,
                           "\n// -----\n".join(chunks)),
                     ["-split-input-file"], "clean", None))
        jobs.append((write("%s-variants-roundtrip.mlir" % base,
                           "\n// -----\n".join(chunks)),
                     ["-split-input-file", "--verify-roundtrip"], "clean", None))

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        failures = [f for f in pool.map(lambda job: check(opts.pipe_opt, *job), jobs)
                    if f]
    for failure in failures:
        print("FAIL: " + failure)
    print("%d inputs, %d failures" % (len(jobs), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
