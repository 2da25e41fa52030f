#!/bin/sh
# expect-exit.sh N COMMAND...: runs COMMAND, passing its output through, and
# succeeds only if it exits with status N. lit's `not` accepts any nonzero
# status, but the CLI's contract tells 1 (invalid spec) from 2 (usage error);
# a crash (status 128+signal) never matches.
if [ $# -lt 2 ]; then
  echo "usage: expect-exit.sh N COMMAND..." >&2
  exit 2
fi
expected=$1
shift
"$@"
status=$?
if [ "$status" -ne "$expected" ]; then
  echo "expect-exit: $1 exited with $status, expected $expected" >&2
  exit 1
fi
