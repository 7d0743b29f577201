"""Per problem: FA3's fastest row over Triton's fastest, in the new run (NEW, with FA3) and the old
one (OLD, Triton only); then the median, worst and best of each.
    python3 ratios.py unseen/newu unseen/oldu"""
import json
import lzma
import os
import statistics
import sys


def rows(folder):
    path = f"{folder}/results.json"
    data = json.load(lzma.open(path + ".xz") if os.path.exists(path + ".xz") else open(path))
    return [r for r in data["rows"] if r["status"] == "PASS" and r.get("median_us")]


def fastest(found, backend):
    out = {}
    for r in found:
        if r["backend"] == backend:
            out[r["problem"]] = min(out.get(r["problem"], float("inf")), r["median_us"])
    return out


new, old = rows(sys.argv[1]), rows(sys.argv[2])
fa3, tn, to = fastest(new, "flash_attn3"), fastest(new, "triton"), fastest(old, "triton")
rn, ro = [], []
for p in sorted(fa3, key=lambda p: fa3[p] / tn[p]):
    rn.append(fa3[p] / tn[p])
    ro.append(fa3[p] / to[p])
    print(f"{fa3[p] / to[p]:5.2f}x -> {fa3[p] / tn[p]:5.2f}x  FA3 {fa3[p]:7.1f} us  {p}")
print(f"median {statistics.median(ro):.2f}x -> {statistics.median(rn):.2f}x; worst {min(ro):.2f}x -> "
      f"{min(rn):.2f}x; best {max(ro):.2f}x -> {max(rn):.2f}x ({len(rn)} problems)")
