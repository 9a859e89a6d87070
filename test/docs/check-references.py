#!/usr/bin/env python3
"""Fails when a file of the repository cites a document that does not ship
with it, or names an absolute path of some machine.

Usage: check-references.py [SOURCE_DIR]
       check-references.py --self-test

Checks every file git tracks or would add (tracked, plus untracked files
that .gitignore does not exclude), so that a new file is caught before it
is committed; without git, walks the tree, skipping build folders. Binary
files are skipped. Prints one `file:line: what` per finding and exits 1 if
there is any, else prints how many files it checked and exits 0.

What counts:
- the developer notes that never shipped: the upper-case names listed in
  OUTSIDE_DOCUMENTS with `.md`, and their folder;
- an absolute path whose first component is not a standard system location
  (SYSTEM_ROOTS), unless ALLOWED_PATHS lists it for that file.
"""

import os
import re
import subprocess
import sys

OUTSIDE_DOCUMENTS = re.compile(
    r"\b(?:BACKGROUND|TOOLCHAIN|ARCHITECTURE|STYLE)\.md\b|\bshared/docs\b")

# First path components of real system locations the project uses
# (/usr/lib/llvm-22, /usr/local/cuda, /usr/share/common-licenses, /dev/null,
# /proc/self/exe, /tmp scratch files, ...) or names as deliberately absent.
SYSTEM_ROOTS = {"usr", "dev", "proc", "sys", "etc", "tmp", "bin", "lib",
                "lib64", "var", "run", "nonexistent"}

# Absolute paths outside SYSTEM_ROOTS that a file may name, and why.
ALLOWED_PATHS = {
    # The default of $PIPE_TORCH_VENV: where the GPU machine's PyTorch
    # environment (with cuBLAS and NCCL) lives; docs/cuda-runtime.md.
    ("scripts/gpu-check", "/opt/torch/.venv"),
    ("test/docs/check-references.py", "/opt/torch/.venv"),  # this list
}

# An absolute path: a slash that starts a word or a string (not the second
# half of `a/b`, `<repo>/x`, `$VAR/x`, `"$d"/lib`, `dir + "/x"`, `1/v`),
# then at least two components.
ABSOLUTE_PATH = re.compile(
    r"(?:^|(?<=[\s(\[{=,:;|`'])|(?<=^\")|(?<=[\s(\[{=,:;|]\"))"
    r"(?<!\+ \")"
    r"/([A-Za-z][\w.+-]*)(?:/[\w.+*{},-]+)+")

SKIP_DIRS = {".git", "build", "__pycache__", ".cache"}


def list_files(root):
    try:
        out = subprocess.run(
            ["git", "-C", root, "ls-files", "-z", "--cached", "--others",
             "--exclude-standard"],
            check=True, capture_output=True).stdout
        return sorted({p for p in out.decode().split("\0") if p})
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames
                       if d not in SKIP_DIRS and not d.startswith("build")]
        for name in filenames:
            files.append(os.path.relpath(os.path.join(dirpath, name), root))
    return sorted(files)


def check_text(path, text):
    findings = []
    for number, line in enumerate(text.splitlines(), 1):
        for match in OUTSIDE_DOCUMENTS.finditer(line):
            findings.append(f"{path}:{number}: cites '{match.group(0)}', a "
                            "document outside the repository (cite docs/)")
        for match in ABSOLUTE_PATH.finditer(line):
            if match.group(1) in SYSTEM_ROOTS:
                continue
            if any(p == path and match.group(0).startswith(a)
                   for p, a in ALLOWED_PATHS):
                continue
            findings.append(f"{path}:{number}: names the absolute path "
                            f"'{match.group(0)}' of some machine")
    return findings


# Lines the check must flag, and lines it must accept (run by --self-test,
# so that a loosened pattern cannot silently pass everything). The flagged
# names are assembled so that this file itself stays clean.
SELF_TEST_FLAGGED = [
    "see " + "TOOLCHAIN" + ".md for the list",
    "(" + "BACKGROUND" + ".md section 4)",
    '"notes": "from /' + 'work/shared/' + 'docs/x"',
    "cd /" + "home/alice/pipe-mlir",
    "--work /" + "opt/data/run",
]
SELF_TEST_ACCEPTED = [
    "see docs/background.md section 2 and docs/hardware.md",
    "/usr/lib/llvm-22/bin/lit and /usr/local/cuda/bin/ptxas, /dev/null",
    "bubble (p - 1)/(m + p - 1), a/b/c, <repo>/build/bin, $HOME/.cache/x",
    'ls "$d"/lib/libcublas.so; dir + "/missing/out"; /tmp/pipe-x/y',
]


def self_test():
    failures = [line for line in SELF_TEST_FLAGGED
                if not check_text("probe", line)]
    failures += [line for line in SELF_TEST_ACCEPTED
                 if check_text("probe", line)]
    for line in failures:
        print(f"check-references: self-test misjudges: {line}")
    return 1 if failures else 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    root = argv[1] if len(argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..")
    findings = []
    checked = 0
    for path in list_files(root):
        full = os.path.join(root, path)
        if not os.path.isfile(full):
            continue  # deleted but still tracked
        with open(full, "rb") as f:
            data = f.read()
        if b"\0" in data:
            continue  # binary
        checked += 1
        findings += check_text(path, data.decode("utf-8", "replace"))
    for finding in findings:
        print(finding)
    if findings:
        print(f"check-references: {len(findings)} finding(s) in {checked} "
              "files", file=sys.stderr)
        return 1
    print(f"check-references: {checked} files, no outside document or "
          "machine path")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
