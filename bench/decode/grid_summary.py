#!/usr/bin/env python3
"""How a GPU decode grid's plan reads against issue 13's goals.

Reads the JSON of fmhajit-bench-decode --device cuda --peers ... (bash
bench/gpu/run.sh decode writes it as bench-decode-gpu.json; .json.xz too)
and prints, for the plan of each row:

  copy    rows of at least 64 MiB of K/V whose bytes moved over time reach
          80% of the device copy measured in the same run
  torch   rows at 1.0x PyTorch SDPA's best backend or faster
  slow    rows where PyTorch is under half the copy: 1.5x PyTorch or faster
  plan    rows whose plan is within 5% of the best configuration timed
  agree   rows whose every contender matched the reference

each as "N of M", with the rows that miss. Rows without a PyTorch time (no
--peers) count for copy and plan only.
"""
import argparse
import json
import lzma
import sys

from plan_misses import label  # the rows' names, as plan_misses prints them

LEAST_MIB = 64
GOALS = (
    ("copy", "plan at >= 80% of the copy (rows of >= 64 MiB)"),
    ("torch", ">= 1.0x PyTorch"),
    ("slow", ">= 1.5x PyTorch where PyTorch is under half the copy"),
    ("plan", "plan within 5% of the best configuration"),
    ("agree", "every contender matched the reference"),
)


def judge(rows):
    """{goal: (rows it applies to, [(row, figure) of the misses])}."""
    has_torch = [r for r in rows if r.get("torch_ms")]
    checks = {
        "copy": ([r for r in rows if r["kv_mib"] >= LEAST_MIB],
                 lambda r: r["plan_share_of_copy"] >= 0.8,
                 lambda r: "%.1f%%" % (100 * r["plan_share_of_copy"])),
        "torch": (has_torch, lambda r: r["speed_vs_torch"] >= 1.0,
                  lambda r: "%.3fx" % r["speed_vs_torch"]),
        "slow": ([r for r in has_torch if r["torch_share_of_copy"] < 0.5],
                 lambda r: r["speed_vs_torch"] >= 1.5,
                 lambda r: "%.3fx" % r["speed_vs_torch"]),
        "plan": (rows, lambda r: r["plan_vs_best"] <= 1.05,
                 lambda r: "%.3f" % r["plan_vs_best"]),
        "agree": (rows, lambda r: r["outputs_agree"], lambda r: "mismatch"),
    }
    return {goal: (scope, [(r, show(r)) for r in scope if not ok(r)])
            for goal, (scope, ok, show) in checks.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("grid", help="fmhajit-bench-decode's JSON")
    args = parser.parse_args()
    opener = lzma.open if args.grid.endswith(".xz") else open
    with opener(args.grid, "rt") as f:
        grid = json.load(f)
    rows = grid["rows"]
    if not rows:
        sys.exit("%s: no rows" % args.grid)
    print("%s: %d rows, copy %.0f GB/s" % (grid.get("device", "?"), len(rows),
                                          grid.get("copy_gbps", 0)))
    judged = judge(rows)
    for goal, text in GOALS:
        scope, misses = judged[goal]
        line = "%s: %d of %d" % (text, len(scope) - len(misses), len(scope))
        if misses:
            line += " (short: %s)" % ", ".join(
                "%s %s" % (label(r), figure) for r, figure in misses)
        print(line)


if __name__ == "__main__":
    main()
