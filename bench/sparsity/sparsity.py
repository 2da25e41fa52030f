#!/usr/bin/env python3
"""Block sparsity (docs/variants.md#block-sparsity): two ratios, one run.

  document mask  examples/variants/document_mask.cpp (8 documents of 2048
                 tokens in 16384) with the block map, against the same binary
                 and kernel with --no-block-sparsity (every key tile computed,
                 mask_mod on every element). Goal: >= 4x.
  causal         bench/sparsity/causal_mask.cpp (k <= q through mask_mod)
                 with the block map, against the built-in mask=causal kernel.
                 Goal: within 5%.

Each pair is timed back to back with `fmhajit run` (its median), alternating
A and B for --rounds rounds, and the ratio is that of the medians over the
rounds. Prints a table; --json writes the rows. Works for --device host and
--device cuda (the lead's H100, bench/gpu/sparsity.sh).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCUMENTS = os.path.join(ROOT, "examples", "variants", "document_mask.cpp")
CAUSAL = os.path.join(ROOT, "bench", "sparsity", "causal_mask.cpp")


def run_ms(fmhajit, spec, flags):
    """The median time `fmhajit run` reports, in ms."""
    cmd = [fmhajit, "run", spec] + flags
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("failed: " + " ".join(cmd) + "\n" + out.stdout + out.stderr)
    m = re.search(r"^time\s+([0-9.]+) ms", out.stdout, re.M)
    if not m:
        sys.exit("no time line: " + " ".join(cmd) + "\n" + out.stdout)
    return float(m.group(1))


def pair(args, name, goal, a, b):
    """Times a (spec, flags) and b alternately; returns the row."""
    ta, tb = [], []
    for _ in range(args.rounds):
        ta.append(run_ms(args.fmhajit, *a))
        tb.append(run_ms(args.fmhajit, *b))
    ma, mb = statistics.median(ta), statistics.median(tb)
    return {"case": name, "ms": ma, "baseline_ms": mb, "speedup": mb / ma,
            "goal": goal, "runs": ta, "baseline_runs": tb}


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fmhajit", default=os.path.join(ROOT, "build", "bin", "fmhajit"))
    p.add_argument("--device", default="host")
    p.add_argument("--dtype", default=None, help="default fp32 (host), bf16 (cuda)")
    p.add_argument("--d", type=int, default=None, help="default 64 (host), 128 (cuda)")
    p.add_argument("--heads", type=int, default=None, help="default 1 (host), 16 (cuda)")
    p.add_argument("--seqlen", type=int, default=16384, help="document mask tokens")
    p.add_argument("--causal-seqlen", type=int, default=None,
                   help="default 4096 (host), 16384 (cuda)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--iters", type=int, default=0, help="fmhajit run --iters; 0: its default")
    p.add_argument("--json")
    args = p.parse_args()
    gpu = args.device != "host"
    dtype = args.dtype or ("bf16" if gpu else "fp32")
    d = args.d or (128 if gpu else 64)
    heads = args.heads or (16 if gpu else 1)
    causal_len = args.causal_seqlen or (16384 if gpu else 4096)
    spec = f"dtype={dtype},d={d}"
    common = ["--device", args.device, "--heads", str(heads)]
    if args.iters:
        common += ["--iters", str(args.iters)]
    if gpu:
        spec += ",target=sm_90a"
    doc = common + ["--seqlen-q", str(args.seqlen), "--variant", DOCUMENTS]
    causal = common + ["--seqlen-q", str(causal_len)]
    rows = [
        pair(args, f"document mask, 8 docs in {args.seqlen}", ">= 4x",
             (spec, doc), (spec, doc + ["--no-block-sparsity"])),
        pair(args, f"causal via mask_mod, S={causal_len}", ">= 0.95x",
             (spec, causal + ["--variant", CAUSAL]),
             (spec + ",mask=causal", causal)),
    ]
    print(f"device {args.device}, {spec}, heads {heads}, median of {args.rounds} "
          "alternating rounds")
    print(f"{'case':<34} {'ms':>10} {'baseline ms':>12} {'ratio':>7}  goal  baseline")
    baselines = ["same kernel, --no-block-sparsity", "built-in mask=causal"]
    for row, base in zip(rows, baselines):
        print(f"{row['case']:<34} {row['ms']:>10.2f} {row['baseline_ms']:>12.2f} "
              f"{row['speedup']:>6.2f}x  {row['goal']}  {base}")
        row["baseline"] = base
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": args.device, "spec": spec, "heads": heads,
                       "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
