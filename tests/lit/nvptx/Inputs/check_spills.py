"""Compiles the default tile of each NVIDIA target, head dim, dtype and
pipeline to PTX with fmhajit, assembles it with ptxas -v and counts kernels
that spill. Prints one line per spilling kernel and a summary line."""
import os, re, subprocess, sys

fmhajit, ptxas, tmp = sys.argv[1:4]
os.makedirs(tmp, exist_ok=True)
targets = ["sm_80", "sm_86", "sm_89", "sm_90a", "sm_100a"]
head_dims = [32, 64, 80, 96, 128, 160, 192, 256]
checked = spilled = 0
for target in targets:
    for d in head_dims:
        for dtype, pipeline in [("bf16", "mma"), ("fp16", "mma"), ("bf16", "simt")]:
            spec = "family=fwd,dtype=%s,d=%d,mask=causal,lse=1,pipeline=%s,target=%s" % (
                dtype, d, pipeline, target)
            ptx = os.path.join(tmp, "k.ptx")
            subprocess.run([fmhajit, "compile", spec, "--emit", "asm", "-o", ptx], check=True)
            out = subprocess.run([ptxas, "-arch=" + target, "-v", ptx, "-o", os.devnull],
                                 capture_output=True, text=True, check=True).stderr
            checked += 1
            if not re.search(r"\b0 bytes spill stores, 0 bytes spill loads", out):
                spilled += 1
                print("spills:", spec)
print("checked %d kernels, %d with spills" % (checked, spilled))
