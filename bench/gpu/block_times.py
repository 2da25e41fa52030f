#!/usr/bin/env python3
"""Summarizes the block times that `FMHAJIT_TIMELINE=FILE fmhajit run` wrote
for a split-KV call to FILE.blocks.csv (docs/bench.md): for each kernel of
the call, when its blocks started and ended, in µs from the first block's
start, and how long each block ran. A decode call's time beside its bytes
is its ramp (the first blocks' start to their first bytes), its tail (the
spread of the blocks' ends) and the combine after the last of them.

Usage: block_times.py FILE.blocks.csv"""
import argparse
import collections
import csv
import statistics


def spread(values):
    values = sorted(values)
    return "%7.2f %7.2f %7.2f" % (values[0], statistics.median(values), values[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("csv")
    args = p.parse_args()
    steps = collections.defaultdict(list)
    names = {}
    with open(args.csv) as f:
        for row in csv.DictReader(f):
            step = int(row["step"])
            names[step] = row["kernel"]
            steps[step].append((int(row["start_ns"]), int(row["end_ns"])))
    if not steps:
        raise SystemExit("no blocks in " + args.csv)
    t0 = min(start for blocks in steps.values() for start, _ in blocks)
    print("µs from the first block's start: first, median, last")
    for step, blocks in sorted(steps.items()):
        starts = [(s - t0) / 1e3 for s, _ in blocks]
        ends = [(e - t0) / 1e3 for _, e in blocks if e]
        runs = [(e - s) / 1e3 for s, e in blocks if e]
        print("step %d: %s, %d blocks" % (step, names[step], len(blocks)))
        print("  start    %s" % spread(starts))
        if ends:
            print("  end      %s" % spread(ends))
            print("  running  %s" % spread(runs))


if __name__ == "__main__":
    main()
