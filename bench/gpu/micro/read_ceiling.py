#!/usr/bin/env python3
"""What PyTorch's own read and copy of N MiB reach, against the 1 GiB copy
that issue 13's shares of the copy bandwidth are of.

Why it exists: a decode row of 64 MiB of K/V reads its bytes once, like a
reduction, and its fixed costs (launch, first loads, tail) weigh on a
transfer that short. torch.sum over the same bytes (a tuned read) says how
close to the 1 GiB copy's rate any kernel gets at that size (docs/results.md,
session 28).

torch.sum is one tuned read, not the fastest possible one, so the script
also sweeps a plain streaming read written in Triton (each program sums a
contiguous chunk with wide loads and writes one float) over chunk sizes,
load widths and warps, and prints the fastest configuration per size: the
best a single kernel launch that only reads the bytes measured here.

Times are CUDA events around back-to-back calls (median of 5 batches); the
sources rotate over 4 copies so the 50 MB L2 does not hold them (a copy's
destination still stays in it at 16-32 MiB, which flatters those copies).
Usage: python3 bench/gpu/micro/read_ceiling.py [--mib 16,32,64,128,256,512]
[--no-triton]"""
import argparse
import itertools
import torch

try:
    import triton
    import triton.language as tl

    @triton.jit
    def stream_read(src, out, CHUNK: tl.constexpr, BLOCK: tl.constexpr):
        # One program reads CHUNK contiguous elements, BLOCK at a time, and
        # writes their sum, so nothing but the reads costs bandwidth.
        base = tl.program_id(0).to(tl.int64) * CHUNK
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for off in range(0, CHUNK, BLOCK):
            acc += tl.load(src + base + off + tl.arange(0, BLOCK)).to(tl.float32)
        tl.store(out + tl.program_id(0), tl.sum(acc, axis=0))
except ImportError:
    triton = None


def median_ms(fn, reps):
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(5):
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / reps)
    return sorted(times)[len(times) // 2]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mib", default="16,32,64,128,256,512")
    p.add_argument("--no-triton", action="store_true",
                   help="skip the Triton streaming-read sweep")
    args = p.parse_args()
    big = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    big2 = torch.empty_like(big)
    ms = median_ms(lambda: big2.copy_(big), 10)
    copy_gbps = 2 * (1 << 30) / ms / 1e6
    print("%s; 1 GiB copy: %.3f ms, %.0f GB/s (read + written)" % (
        torch.cuda.get_device_name(), ms, copy_gbps))
    for mib in (int(m) for m in args.mib.split(",")):
        n = mib << 20
        srcs = [torch.randn(n // 2, dtype=torch.bfloat16, device="cuda")
                for _ in range(4)]
        dst = torch.empty_like(srcs[0])
        out = torch.empty((), dtype=torch.float32, device="cuda")
        turn = [0]

        def read():
            turn[0] += 1
            torch.sum(srcs[turn[0] % 4], dim=(0,), dtype=torch.float32, out=out)

        def copy():
            turn[0] += 1
            dst.copy_(srcs[turn[0] % 4])

        r, c = median_ms(read, 50), median_ms(copy, 50)
        print("%4d MiB: read (sum) %.1f us = %.0f%% of the copy's rate; "
              "copy %.1f us = %.0f%%" % (mib, r * 1e3, 100 * n / r / 1e6 / copy_gbps,
                                         c * 1e3, 100 * 2 * n / c / 1e6 / copy_gbps))
        if triton is None or args.no_triton:
            continue
        best = None
        elems = n // 2
        for chunk_kib, block, warps in itertools.product(
                (32, 64, 128, 256, 512), (1024, 2048, 4096), (4, 8)):
            chunk = chunk_kib * 512  # bf16 elements in chunk_kib KiB
            if elems % chunk or chunk % block:
                continue
            partial = torch.empty(elems // chunk, dtype=torch.float32, device="cuda")

            def stream():
                turn[0] += 1
                stream_read[(elems // chunk,)](srcs[turn[0] % 4], partial,
                                               CHUNK=chunk, BLOCK=block,
                                               num_warps=warps)

            t = median_ms(stream, 50)
            src = srcs[turn[0] % 4]
            stream_read[(elems // chunk,)](src, partial, CHUNK=chunk, BLOCK=block,
                                           num_warps=warps)
            want = torch.sum(src, dtype=torch.float32)
            if not torch.allclose(partial.sum(), want, rtol=1e-3, atol=1.0):
                raise SystemExit("the Triton read summed %g, torch.sum %g" % (
                    partial.sum().item(), want.item()))
            if best is None or t < best[0]:
                best = (t, chunk_kib, block, warps)
        t, chunk_kib, block, warps = best
        print("%4d MiB: read (Triton, fastest of the sweep) %.1f us = %.0f%% of the "
              "copy's rate (%d KiB a program, %d-element loads, %d warps)" % (
                  mib, t * 1e3, 100 * n / t / 1e6 / copy_gbps, chunk_kib, block, warps))


if __name__ == "__main__":
    main()
