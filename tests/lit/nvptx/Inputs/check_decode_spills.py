"""Assembles the decode kernels a split schedule runs on sm_90a with
ptxas -v and counts those that spill (split-schedule.test): the plan's
wgmma m64n128w4 tile packed, paged and varlen; the mma m64n64w4 tile; masks,
soft-cap and ALiBi at d = 64 and 256; the combine."""
import os, re, subprocess, sys

fmhajit, ptxas, tmp = sys.argv[1:4]
os.makedirs(tmp, exist_ok=True)
wgmma = "pipeline=wgmma,bm=64,bn=128,warps=4,stages=1"
specs = [
    "family=fwd_paged,dtype=bf16,d=128,lse=1,pack_gqa=1," + wgmma,
    "family=fwd_splitkv,dtype=bf16,d=128,lse=1,varlen=1,pack_gqa=1," + wgmma,
    "family=fwd_paged,dtype=bf16,d=128,mask=causal_br,lse=1,pack_gqa=1,"
    "pipeline=mma,bm=64,bn=64,warps=4",
    "family=fwd_paged,dtype=bf16,d=64,mask=causal_br,softcap=1,bias=alibi,"
    "lse=1,pack_gqa=1",
    "family=fwd_splitkv,dtype=fp16,d=64,mask=window,varlen=1,lse=1",
    "family=fwd_paged,dtype=bf16,d=256,mask=window,lse=1",
    "family=splitkv_combine,dtype=bf16,d=128,lse=1",
    "family=splitkv_combine,dtype=bf16,d=128,lse=1,varlen=1",
]
bad = 0
for i, spec in enumerate(specs):
    ptx = os.path.join(tmp, "k%d.ptx" % i)
    subprocess.run([fmhajit, "compile", spec + ",target=sm_90a", "--emit", "asm",
                    "-o", ptx], check=True)
    out = subprocess.run([ptxas, "-arch=sm_90a", "-v", ptx, "-o", os.devnull],
                         capture_output=True, text=True, check=True).stderr
    if not re.search(r"\b0 bytes spill stores, 0 bytes spill loads", out):
        bad += 1
        print("spills:", spec)
print("checked %d kernels, %d with spills" % (len(specs), bad))
