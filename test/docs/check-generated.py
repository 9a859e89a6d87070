#!/usr/bin/env python3
"""Fails when a checked-in generated document differs from the one the
build just generated, showing the difference and the command that
refreshes it.

Usage: check-generated.py GENERATED CHECKED_IN
"""

import difflib
import sys


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    generated, checked_in = argv[1], argv[2]
    texts = []
    for path in (generated, checked_in):
        try:
            with open(path, encoding="utf-8") as f:
                texts.append(f.read().splitlines(keepends=True))
        except OSError as error:
            print(f"check-generated: {path}: {error.strerror}")
            return 1
    if texts[0] == texts[1]:
        print(f"check-generated: {checked_in} is up to date")
        return 0
    diff = list(difflib.unified_diff(texts[1], texts[0], checked_in,
                                     generated))
    sys.stdout.writelines(diff[:80])
    if len(diff) > 80:
        print(f"... ({len(diff) - 80} more diff lines)")
    print(f"check-generated: {checked_in} is stale (the ODS definitions "
          "changed): run scripts/gen-docs and commit the result")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
