"""Compiles NVIDIA kernels to PTX with fmhajit, assembles each with ptxas -v,
and counts kernels that spill or that ptxas warns have their tensor cores
serialized or their register move ignored (C7515, C7511, C7508).

Two grids:
  - the default tile of each NVIDIA target, head dim, dtype and pipeline
    (causal, lse=1);
  - on sm_90a, every forward family x mask x lse for the tensor-core
    pipelines (and wgmma's TMA ring, stages=2) at d = 64, 128 and 256
    (bf16), plus softcap, ALiBi and both under three masks, and the sink
    (sink=1) alone and with both, in fwd and fwd_splitkv;
  - on sm_90a, fp8 (e4m3; e5m2 at d = 128) on wgmma's TMA ring with its V
    transposers: every forward family x mask x lse at d = 64, 128 and 256,
    and softcap with ALiBi;
  - the same with V^T from the pass before the kernel (v_pretranspose=1),
    fwd only, and its three-warpgroup and 224-key tiles;
  - on sm_90a, pack_gqa on wgmma's TMA ring (Q copied by the consumers):
    fwd and fwd_splitkv x d = 64, 128, 256 x bm = 64 (w4) and 128 (w8) x
    masks none, causal and causal_br x lse, softcap and softcap with ALiBi;
    the m64n128w4 decode tile with 3 slots; fp8 (e4m3) at d = 128; paged
    decode on the m64n64w4 ring at d = 64 and 128;
  - on sm_90a, the backward's bwd_dq_dk_dv as validation resolves it (wgmma
    where its rules take the spec, else mma) at d = 32, 64, 96 and 128:
    every mask, softcap with ALiBi, varlen, and all of them at once.
Prints one line per failing kernel and a summary line."""
import os, re, subprocess, sys, tempfile
from concurrent.futures import ThreadPoolExecutor

fmhajit, ptxas, tmp = sys.argv[1:4]
os.makedirs(tmp, exist_ok=True)

def default_tiles():
    for target in ["sm_80", "sm_86", "sm_89", "sm_90a", "sm_100a"]:
        for d in [32, 64, 80, 96, 128, 160, 192, 256]:
            pairs = [("bf16", "mma"), ("fp16", "mma"), ("bf16", "simt")]
            if target == "sm_90a" and d % 64 == 0:
                pairs += [("bf16", "wgmma"), ("fp16", "wgmma")]
            for dtype, pipeline in pairs:
                yield ("family=fwd,dtype=%s,d=%d,mask=causal,lse=1,pipeline=%s,"
                       "target=%s" % (dtype, d, pipeline, target))

def feature_grid():
    for pipeline in ["mma", "wgmma", "wgmma,stages=2"]:
        for d in [64, 128, 256]:
            for family in ["fwd", "fwd_splitkv", "fwd_paged"]:
                for mask in ["none", "causal", "causal_br", "window"]:
                    for lse in [0, 1]:
                        yield ("family=%s,dtype=bf16,d=%d,mask=%s,lse=%d,pipeline=%s,"
                               "target=sm_90a" % (family, d, mask, lse, pipeline))
            for mask in ["none", "causal", "window"]:
                for mods in ["softcap=1", "bias=alibi", "softcap=1,bias=alibi",
                             "sink=1", "softcap=1,bias=alibi,sink=1"]:
                    yield ("family=fwd,dtype=bf16,d=%d,mask=%s,%s,lse=1,"
                           "pipeline=%s,target=sm_90a" % (d, mask, mods, pipeline))
            for mask in ["none", "causal"]:
                yield ("family=fwd_splitkv,dtype=bf16,d=%d,mask=%s,sink=1,lse=1,"
                       "pipeline=%s,target=sm_90a" % (d, mask, pipeline))

def fp8_grid():
    for d in [64, 128, 256]:
        for family in ["fwd", "fwd_splitkv"]:
            for mask in ["none", "causal", "causal_br", "window"]:
                for lse in [0, 1]:
                    yield ("family=%s,dtype=fp8_e4m3,d=%d,mask=%s,lse=%d,"
                           "target=sm_90a" % (family, d, mask, lse))
        yield ("family=fwd,dtype=fp8_e4m3,d=%d,mask=causal,softcap=1,"
               "bias=alibi,lse=1,target=sm_90a" % d)
        yield ("family=fwd,dtype=fp8_e4m3,d=%d,mask=causal,sink=1,lse=1,"
               "target=sm_90a" % d)
    yield "family=fwd,dtype=fp8_e5m2,d=128,mask=causal,lse=1,target=sm_90a"

def pretransposed_grid():
    for d in [64, 128, 256]:
        for mask in ["none", "causal", "causal_br", "window"]:
            for lse in [0, 1]:
                yield ("family=fwd,dtype=fp8_e4m3,d=%d,mask=%s,lse=%d,"
                       "v_pretranspose=1,target=sm_90a" % (d, mask, lse))
        yield ("family=fwd,dtype=fp8_e4m3,d=%d,mask=causal,softcap=1,"
               "bias=alibi,lse=1,v_pretranspose=1,target=sm_90a" % d)
    yield ("family=fwd,dtype=fp8_e4m3,d=128,bm=192,bn=96,warps=12,"
           "v_pretranspose=1,target=sm_90a")
    # The dispatched tile up to 2048 queries: V transposed in the kernel.
    for lse in [0, 1]:
        yield ("family=fwd,dtype=fp8_e4m3,d=128,bm=192,bn=96,warps=12,"
               "lse=%d,target=sm_90a" % lse)
    yield ("family=fwd,dtype=fp8_e4m3,d=128,bm=128,bn=224,warps=8,"
           "v_pretranspose=1,target=sm_90a")

def packed_ring_grid():
    for d in [64, 128, 256]:
        for tile in ["bm=64,warps=4", "bm=128,warps=8"]:
            for family in ["fwd", "fwd_splitkv"]:
                for mask in ["none", "causal", "causal_br"]:
                    for mods in ["lse=0", "lse=1", "softcap=1,lse=1",
                                 "softcap=1,bias=alibi,lse=1"]:
                        yield ("family=%s,dtype=bf16,d=%d,mask=%s,%s,pack_gqa=1,"
                               "pipeline=wgmma,%s,stages=2,target=sm_90a"
                               % (family, d, mask, mods, tile))
    for family in ["fwd", "fwd_splitkv"]:
        for mask in ["none", "causal_br"]:
            yield ("family=%s,dtype=bf16,d=128,mask=%s,lse=1,pack_gqa=1,"
                   "pipeline=wgmma,bm=64,bn=128,warps=4,stages=3,target=sm_90a"
                   % (family, mask))
            yield ("family=%s,dtype=fp8_e4m3,d=128,mask=%s,lse=1,pack_gqa=1,"
                   "stages=2,target=sm_90a" % (family, mask))
    # The narrowed decode tile's ring twin, which paged short-range decode
    # runs (runtime/api/SplitPlanner.cpp).
    for d in [64, 128]:
        for mask in ["none", "causal_br"]:
            for mods in ["lse=0", "lse=1", "softcap=1,bias=alibi,lse=1"]:
                yield ("family=fwd_paged,dtype=bf16,d=%d,mask=%s,%s,pack_gqa=1,"
                       "pipeline=wgmma,bm=64,bn=64,warps=4,stages=2,"
                       "target=sm_90a" % (d, mask, mods))
    # Keys as the products' rows (bm under 64): the three families, d = 64
    # to 256, masks, soft-capping with ALiBi, a sink.
    for family in ["fwd", "fwd_splitkv", "fwd_paged"]:
        for d, tile in [(64, "bm=16,bn=128"), (128, "bm=8,bn=128"),
                        (256, "bm=8,bn=64")]:
            for mods in ["mask=causal_br,lse=1", "softcap=1,bias=alibi,lse=1",
                         "sink=1,lse=1"]:
                yield ("family=%s,dtype=bf16,d=%d,%s,pack_gqa=1,"
                       "pipeline=wgmma,%s,warps=4,stages=2,target=sm_90a"
                       % (family, d, mods, tile))

def backward_grid():
    for d in [32, 64, 96, 128]:
        for mods in ["mask=none", "mask=causal", "mask=causal_br", "mask=window",
                     "bias=alibi,mask=window", "softcap=1,bias=alibi,mask=causal",
                     "varlen=1,mask=causal", "softcap=1,bias=alibi,mask=window,varlen=1"]:
            yield "family=bwd_dq_dk_dv,dtype=bf16,d=%d,%s,target=sm_90a" % (d, mods)

def check(spec):
    """'' if the kernel assembles cleanly, else why not."""
    with tempfile.NamedTemporaryFile(suffix=".ptx", dir=tmp) as ptx:
        subprocess.run([fmhajit, "compile", spec, "--emit", "asm", "-o", ptx.name],
                       check=True)
        out = subprocess.run([ptxas, "-arch=sm_90a" if "sm_90a" in spec else
                              "-arch=" + spec.rsplit("target=", 1)[1],
                              "-v", ptx.name, "-o", os.devnull],
                             capture_output=True, text=True, check=True).stderr
    problems = []
    spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", out)
    if not spills or any(a != "0" or b != "0" for a, b in spills):
        problems.append("spills")  # in any entry of the module
    problems += sorted(set(re.findall(r"\(C75(?:15|11|08)\)", out)))
    return " ".join(problems)

specs = (list(default_tiles()) + list(feature_grid()) + list(fp8_grid()) +
         list(pretransposed_grid()) + list(packed_ring_grid()) +
         list(backward_grid()))
with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
    results = list(pool.map(check, specs))
failed = 0
for spec, why in zip(specs, results):
    if why:
        failed += 1
        print("%s: %s" % (why, spec))
print("checked %d kernels, %d with spills or warnings" % (len(specs), failed))
