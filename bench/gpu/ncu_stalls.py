#!/usr/bin/env python3
"""Summarizes Nsight Compute's source page (`ncu --import R --page source --csv
--print-source sass`) of one kernel: the share of each stall reason over all
warp samples, then the SASS instructions with the most samples and their top
three reasons. Usage: ncu_stalls.py SOURCE.csv [N]. Used by `bench/gpu/run.sh
stalls` (docs/bench.md)."""
import csv,sys,re,collections
rows=list(csv.reader(open(sys.argv[1])))
hdr=rows[1]; data=rows[2:]
reasons=[(i,h) for i,h in enumerate(hdr) if h.startswith('stall_') and 'Not Issued' not in h]
tot=collections.Counter(); total=0
for r in data:
    for i,h in reasons:
        v=int(r[i] or 0); tot[h]+=v; total+=v
print("total samples",total)
for h,v in tot.most_common(12): print("  %-24s %6.1f%%"%(h,100*v/total))
# top instructions by all samples
top=sorted(data,key=lambda r:-int(r[2] or 0))[:int(sys.argv[2]) if len(sys.argv)>2 else 30]
for r in top:
    rs=sorted(((int(r[i] or 0),h) for i,h in reasons),reverse=True)[:3]
    idx=data.index(r)
    print("%5d %5.1f%% #%4d %-60s %s"%(int(r[2]),100*int(r[2])/total,idx,r[1].strip()[:60]," ".join("%s=%d"%(h[6:],v) for v,h in rs if v)))
