#!/usr/bin/env python3
"""Summarizes a timeline that `FMHAJIT_TIMELINE=FILE fmhajit run ...` wrote
(docs/bench.md): for each consumer warpgroup of block 0, the mean cycles
between consecutive events over the middle of its walk (the first fifth and
last tenth, the ramp up and down, left out), then a window of the
warpgroups' events merged in time order.

Usage: timeline.py FILE.csv [--window N]"""
import argparse
import collections
import csv

EVENTS = {1: "turn wait", 2: "issue", 3: "issued", 4: "S ready", 5: "O ready"}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("csv")
    p.add_argument("--window", type=int, default=24,
                   help="merged events to print from the middle of the walk")
    args = p.parse_args()
    with open(args.csv) as f:
        rows = [(int(r["warpgroup"]), int(r["event"]), int(r["clock"]))
                for r in csv.DictReader(f)]
    if not rows:
        raise SystemExit("no stamps in " + args.csv)
    start = min(c for _, _, c in rows)
    groups = collections.defaultdict(list)
    for group, event, clock in rows:
        groups[group].append((event, clock - start))
    for group, events in sorted(groups.items()):
        middle = events[len(events) // 5: len(events) - len(events) // 10]
        gaps = collections.defaultdict(list)
        for (e1, c1), (e2, c2) in zip(middle, middle[1:]):
            gaps[(e1, e2)].append(c2 - c1)
        cycle = sum(sum(v) for v in gaps.values()) / max(1, len(gaps.get((1, 2), [1])))
        print("warpgroup %d: %d events, about %.0f cycles a key tile" %
              (group, len(events), cycle))
        for (e1, e2), v in sorted(gaps.items()):
            print("  %-9s -> %-9s %6.0f cycles (x%d)" %
                  (EVENTS.get(e1, e1), EVENTS.get(e2, e2), sum(v) / len(v), len(v)))
    merged = sorted((c, g, e) for g, v in groups.items() for e, c in v)
    mid = len(merged) // 2
    print("events from the middle of the walk:")
    for clock, group, event in merged[mid: mid + args.window]:
        print("  %10d  warpgroup %d  %s" % (clock, group, EVENTS.get(event, event)))


if __name__ == "__main__":
    main()
