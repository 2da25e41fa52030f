#!/usr/bin/env python3
"""What a cached kernel's load costs the driver: cuModuleLoadDataEx of each
PTX file given, in a fresh process each time (as a user's second process
loads a kernel), with the driver's compute cache warm after a first load.
Prints milliseconds per load, the files in turns.

Why it exists: issue 12 asks for a cached kernel's load in 1 ms or less, and
`fmhajit run` reports the driver's step of it as one figure. This times the
driver call alone, on PTX that fmhajit emits (`fmhajit compile SPEC --emit
asm -o FILE`) or that a change would emit, so a change to the PTX's size can
be judged without building it in (docs/results.md, session 27). Needs only
the driver (libcuda).

Usage: python3 bench/gpu/micro/module_load.py [--rounds N] A.ptx [B.ptx ...]"""
import argparse
import ctypes
import os
import subprocess
import sys
import time


def load_once(path):
    """Loads \\p path in this process; returns milliseconds."""
    try:
        cu = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        sys.exit("no CUDA driver: %s" % e)

    def ok(r, what):
        if r != 0:
            sys.exit("%s failed: CUDA error %d" % (what, r))

    ok(cu.cuInit(0), "cuInit")
    dev = ctypes.c_int()
    ok(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    ctx = ctypes.c_void_p()
    ok(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    ok(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    image = open(path, "rb").read() + b"\0"
    module = ctypes.c_void_p()
    start = time.perf_counter()
    ok(cu.cuModuleLoadDataEx(ctypes.byref(module), image, 0, None, None),
       "cuModuleLoadDataEx(%s)" % path)
    return (time.perf_counter() - start) * 1e3


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        print("%.3f" % load_once(sys.argv[2]))
        return 0
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("ptx", nargs="+")
    args = p.parse_args()

    def fresh(path):  # a new process: nothing of the last load in memory
        out = subprocess.run([sys.executable, __file__, "--one", path],
                             capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(out.stderr.strip() or "loading %s failed" % path)
        return float(out.stdout)

    for path in args.ptx:  # the first load of each fills the driver's cache
        print("%-40s %8.1f ms (first load: %d bytes of PTX)" % (
            path, fresh(path), os.path.getsize(path)))
    times = {path: [] for path in args.ptx}
    for _ in range(args.rounds):
        for path in args.ptx:
            times[path].append(fresh(path))
    for path in args.ptx:
        t = sorted(times[path])
        print("%-40s cached: median %.3f ms, %.3f-%.3f over %d loads" % (
            path, t[len(t) // 2], t[0], t[-1], len(t)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
