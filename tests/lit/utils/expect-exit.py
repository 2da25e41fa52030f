#!/usr/bin/env python3
"""expect-exit.py N COMMAND...: run COMMAND and succeed only if it exits
with status N (a signal counts as failure). lit's `not` accepts any nonzero
status; the CLI's contract tells 1 (invalid spec) from 2 (usage error)."""

import subprocess
import sys


def main():
    if len(sys.argv) < 3:
        sys.stderr.write("usage: expect-exit.py N COMMAND...\n")
        return 2
    expected = int(sys.argv[1])
    # Output passes through untouched, for FileCheck after the pipe.
    status = subprocess.call(sys.argv[2:])
    if status != expected:
        sys.stderr.write(
            "expect-exit: %s exited with %d, expected %d\n"
            % (sys.argv[2], status, expected)
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
