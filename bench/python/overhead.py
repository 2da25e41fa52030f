#!/usr/bin/env python3
"""fmhajit.attention's cost beyond the C++ api::run on a cached plan.

Issue 15's goal: a Python call on a cached plan costs at most 5 us more
than api::run, for host and CUDA arrays. Both are measured in the same run
on the same tiny problem (Sq = 1, Sk = 16, one head, d = 64, fp32, one
thread; bench/api's), whose kernel takes well under a microsecond:
fmhajit-bench-api gives api::run's ns per call, then this script times, in
rounds that interleave them, for NumPy arrays and (where torch imports)
PyTorch CPU tensors,

  attention      fmhajit.attention(q, k, v, threads=1): allocates out
  attention+out  the same with out= given (no allocation)
  core           fmhajit._fmhajit.attention on prepared tuples: the
                 compiled half alone (reading four arrays, the plan
                 lookup, run)

CPU tensors are read as CUDA tensors are (python/src/TorchTensor.h), less
the stream and the device index, so they stand in for the CUDA path on a
machine without a GPU (bench/gpu/bench_python.py times that one).

Prints a table and writes JSON:
  {"schema": "fmhajit-bench-python/2", "api_ns": x, "paths": [{"arrays":
   "numpy"|"torch", "name", "ns_per_call", "over_api_ns"}], "goal":
   {"limit_us": 5, "value_us": y (the worst attention), "status":
   "pass"|"miss"}}
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

GOAL_US = 5.0


def api_run_ns(bench_api, quick):
    """api::run's median ns per call, from fmhajit-bench-api."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "api.json")
        args = [bench_api, "--json", path] + (["--quick"] if quick else [])
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
        with open(path) as f:
            report = json.load(f)
    return next(p["ns_per_call"] for p in report["paths"] if p["name"] == "api")


def tiny_arrays(kind):
    """q, k, v and an out of the tiny problem: NumPy arrays, or torch CPU
    tensors holding the same values."""
    q = np.random.default_rng(0).standard_normal((1, 1, 1, 64)).astype(np.float32)
    k = np.random.default_rng(1).standard_normal((1, 16, 1, 64)).astype(np.float32)
    v = np.random.default_rng(2).standard_normal((1, 16, 1, 64)).astype(np.float32)
    if kind == "torch":
        import torch
        q, k, v = (torch.from_numpy(x) for x in (q, k, v))
        return q, k, v, torch.empty_like(q)
    return q, k, v, np.empty_like(q)


def paths(fmhajit, kinds):
    """The three ways of calling for each kind of array, by (kind, name),
    each a function of no arguments."""
    keywords = ("none", -1, -1, 0.0, 0.0, False, 1, "", "", "", None, None)
    core = fmhajit._fmhajit.attention
    fns = {}
    for kind in kinds:
        q, k, v, out = tiny_arrays(kind)
        arrays = (out,) + (None,) * 9
        fns[kind, "attention"] = lambda q=q, k=k, v=v: fmhajit.attention(q, k, v, threads=1)
        fns[kind, "attention+out"] = lambda q=q, k=k, v=v, out=out: fmhajit.attention(
            q, k, v, threads=1, out=out)
        fns[kind, "core"] = lambda q=q, k=k, v=v, arrays=arrays: core(
            q, k, v, arrays, keywords, None, None)
    return fns


def time_paths(calls, batch, rounds, fmhajit, kinds):
    """Median ns per call of each path over batches of `batch` calls, the
    paths interleaved batch by batch so that drift hits each alike."""
    fns = paths(fmhajit, kinds)
    for fn in fns.values():
        fn()  # plans once: every timed call runs a cached plan
    samples = {key: [] for key in fns}
    for _ in range(rounds):
        for _ in range(calls // batch):
            for key, fn in fns.items():
                start = time.perf_counter_ns()
                for _ in range(batch):
                    fn()
                samples[key].append((time.perf_counter_ns() - start) / batch)
    return {key: statistics.median(s) for key, s in samples.items()}


def array_kinds(wanted):
    """The kinds of array to time: --arrays's, torch only where it imports."""
    if wanted != "all":
        kinds = wanted.split(",")
        unknown = sorted(set(kinds) - {"numpy", "torch"})
        if unknown:
            raise SystemExit(f"--arrays {wanted}: {', '.join(unknown)} is not a kind "
                             f"timed here; give numpy, torch or numpy,torch")
        return kinds
    try:
        import torch  # noqa: F401
    except ImportError:
        print("torch does not import: timing NumPy arrays only")
        return ["numpy"]
    return ["numpy", "torch"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bench-api", default="build/bin/fmhajit-bench-api")
    parser.add_argument("--json", default="bench-python.json")
    parser.add_argument("--quick", action="store_true", help="fewer calls (smoke test)")
    parser.add_argument("--arrays", default="all",
                        help="numpy, torch or numpy,torch (all: torch too where it imports)")
    args = parser.parse_args()
    kinds = array_kinds(args.arrays)
    if "torch" in kinds:
        import torch  # noqa: F401 (before fmhajit, as a program using both would)
    import fmhajit
    api_ns = api_run_ns(args.bench_api, args.quick)
    calls, rounds = (2000, 1) if args.quick else (20000, 5)
    timings = time_paths(calls, 100, rounds, fmhajit, kinds)
    print("problem  Sq=1, Sk=16, 1 head, d=64, fp32, 1 thread (bench/api's)")
    print(f"{'arrays':<7} {'path':<15} {'ns/call':>10} {'over api::run':>14}")
    print(f"{'':<7} {'api::run (C++)':<15} {api_ns:>10.1f} {0:>14.1f}")
    rows = []
    for (kind, name), ns in timings.items():
        print(f"{kind:<7} {name:<15} {ns:>10.1f} {ns - api_ns:>14.1f}")
        rows.append({"arrays": kind, "name": name, "ns_per_call": ns,
                     "over_api_ns": ns - api_ns})
    worst = max(timings[kind, "attention"] - api_ns for kind in kinds) / 1e3
    status = "pass" if worst <= GOAL_US else "miss"
    print(f"goal    fmhajit.attention <= {GOAL_US} us over api::run "
          f"({', '.join(kinds)}): {worst:.2f} us, {status.upper()}")
    report = {"schema": "fmhajit-bench-python/2", "api_ns": api_ns, "paths": rows,
              "goal": {"name": "fmhajit.attention over api::run", "limit_us": GOAL_US,
                       "value_us": worst, "status": status}}
    with open(args.json, "w") as f:
        json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
