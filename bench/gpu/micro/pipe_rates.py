#!/usr/bin/env python3
"""Issue rates of the instructions the softmax leans on, on the GPU at hand:
ex2 on f32, f16x2 and bf16x2, the f32 -> bf16x2 and f32 -> e4m3x2 packs, an
ex2 and a pack together, and FFMA for scale. Each kernel runs 16 independent chains of one instruction per
thread (no memory traffic in the loop), so its time is the pipe's rate.
Prints warp instructions per SM per clock at the reported maximum clock.

Why it exists: a packed ex2 (f16x2, bf16x2) would halve the MUFU work of the
softmax if the MUFU ran it at the f32 rate; this measures whether it does
(docs/design.md, "What did not pay"). Needs only the driver (libcuda): the
PTX is compiled by the driver's JIT.

Usage: python3 bench/gpu/micro/pipe_rates.py"""
import ctypes
import time

CHAINS, ITERS = 16, 512

# name: (the instruction on register r{i}, how r{i} starts from the f32 f)
KERNELS = {
    "ffma": ("fma.rn.f32 r{i}, r{i}, r{i}, r{i};", "mov.b32 r{i}, f;"),
    "ex2_f32": ("ex2.approx.ftz.f32 r{i}, r{i};", "mov.b32 r{i}, f;"),
    "ex2_f16x2": ("ex2.approx.f16x2 r{i}, r{i};", "cvt.rn.f16x2.f32 r{i}, f, f;"),
    "ex2_bf16x2": ("ex2.approx.ftz.bf16x2 r{i}, r{i};", "cvt.rn.bf16x2.f32 r{i}, f, f;"),
    "cvt_bf16x2": ("cvt.rn.bf16x2.f32 r{i}, r{i}, r{i};", "mov.b32 r{i}, f;"),
    "cvt_e4m3x2": ("{{ .reg .b16 h; cvt.rn.satfinite.e4m3x2.f32 h, r{i}, r{i}; "
                   "cvt.u32.u16 r{i}, h; }}", "mov.b32 r{i}, f;"),
    # An ex2 and a pack each (fp8's P): as fast as ex2_f32 if they do not
    # share a pipe; rates count the pairs.
    "ex2_e4m3x2": ("{{ .reg .b16 h; ex2.approx.ftz.f32 r{i}, r{i}; "
                   "cvt.rn.satfinite.e4m3x2.f32 h, r{i}, r{i}; cvt.u32.u16 r{i}, h; }}",
                   "mov.b32 r{i}, f;"),
}


def kernel_ptx(name, op, start):
    regs = "\n".join("    .reg .b32 r%d;" % i for i in range(CHAINS))
    init = "\n".join(
        "    cvt.rn.f32.u32 f, t; add.f32 f, f, 0f3F%02d0000; mul.f32 f, f, 0fB8000000; %s"
        % ((i * 8) % 100, start.format(i=i)) for i in range(CHAINS))
    body = "\n".join("    " + op.format(i=i) for i in range(CHAINS))
    fold = "\n".join("    xor.b32 s, s, r%d;" % i for i in range(CHAINS))
    return """
.visible .entry %s(.param .u64 out) {
    .reg .b32 t, s, n; .reg .f32 f; .reg .pred p; .reg .u64 o, a;
%s
    mov.u32 t, %%tid.x;
%s
    mov.u32 n, 0;
LOOP:
%s
    add.u32 n, n, 1;
    setp.lt.u32 p, n, %d;
    @p bra LOOP;
    mov.u32 s, 0;
%s
    ld.param.u64 o, [out];
    mul.wide.u32 a, t, 4; add.u64 o, o, a;
    st.global.u32 [o], s;
    ret;
}
""" % (name, regs, init, body, ITERS, fold)


def check(result, what):
    if result != 0:
        raise SystemExit("%s failed: CUresult %d" % (what, result))


def main():
    ptx = ".version 8.7\n.target sm_90a\n.address_size 64\n" + "".join(
        kernel_ptx(name, op, start) for name, (op, start) in KERNELS.items())
    cu = ctypes.CDLL("libcuda.so.1")
    check(cu.cuInit(0), "cuInit")
    dev, ctx, mod = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_void_p()
    check(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    check(cu.cuModuleLoadData(ctypes.byref(mod), ptx.encode() + b"\0"), "cuModuleLoadData")
    out = ctypes.c_uint64()
    check(cu.cuMemAlloc_v2(ctypes.byref(out), 1 << 20), "cuMemAlloc")
    clock_khz, sms = ctypes.c_int(), ctypes.c_int()
    check(cu.cuDeviceGetAttribute(ctypes.byref(clock_khz), 13, dev), "clock rate")
    check(cu.cuDeviceGetAttribute(ctypes.byref(sms), 16, dev), "SM count")
    blocks, threads = sms.value * 16, 256
    arg = ctypes.c_uint64(out.value)
    args = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.byref(arg), ctypes.c_void_p))
    print("%d SMs, %d MHz; warp instructions per SM per clock (lanes per SM per clock)"
          % (sms.value, clock_khz.value // 1000))
    for name in KERNELS:
        fn = ctypes.c_void_p()
        check(cu.cuModuleGetFunction(ctypes.byref(fn), mod, name.encode()), name)
        best = float("inf")
        for _ in range(5):
            check(cu.cuCtxSynchronize(), "sync")
            start = time.perf_counter()
            check(cu.cuLaunchKernel(fn, blocks, 1, 1, threads, 1, 1, 0, None, args, None), name)
            check(cu.cuCtxSynchronize(), "sync")
            best = min(best, time.perf_counter() - start)
        warp_instructions = blocks * threads // 32 * CHAINS * ITERS
        rate = warp_instructions / (best * clock_khz.value * 1e3 * sms.value)
        print("  %-11s %8.3f ms  %5.2f (%5.1f)" % (name, best * 1e3, rate, rate * 32))


if __name__ == "__main__":
    main()
