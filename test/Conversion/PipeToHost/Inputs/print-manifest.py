#!/usr/bin/env python3
"""Prints the manifest that --pipe-lower-to-host embeds in a module.

Reads MLIR text on stdin, finds every `@pipe_program_manifest("...")` global
(one per split of a -split-input-file run) and prints its lines, undoing
MLIR's `\\XX` string escapes, so that FileCheck can check one record per
line. Exits 1 when no manifest is found or one is not NUL-terminated.
"""
import re
import sys

found = 0
for match in re.finditer(r'@pipe_program_manifest\("((?:[^"\\]|\\.)*)"\)',
                         sys.stdin.read()):
    text = re.sub(r"\\(\\|[0-9A-Fa-f]{2})",
                  lambda m: "\\" if m.group(1) == "\\" else
                  chr(int(m.group(1), 16)), match.group(1))
    if not text.endswith("\0"):
        sys.exit("manifest is not NUL-terminated")
    sys.stdout.write(text[:-1])
    found += 1
if not found:
    sys.exit("no @pipe_program_manifest in the input")
