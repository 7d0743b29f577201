"""The A/B of this folder by kind of head dim and the rule's choice. Run from the repository root:
    python results/nvidia-h100/2026-11-26-dim-split-heldout/classify.py"""
import collections
import pathlib
import re

import triton

HERE = pathlib.Path(__file__).parent
# (compare file, the runs' --q-len): old is {"dim_split":0}, new the rule
FILES = [("compare-r17-s0-17.txt", 1), ("compare-r58q8-s0-58q8.txt", 8)]
LINE = re.compile(r"(triton/\S+)\s+(.*?)\s{2,}(\d+\.\d+) \[.*?\]\s+(\d+\.\d+) \[.*?\]\s+([+-]\d+\.\d+)%\s+(\w+)")


def saves(d: int) -> bool:
    pad = triton.next_power_of_2(d)
    return pad != d and d > 16 and pad // 2 + max(16, triton.next_power_of_2(d - pad // 2)) < pad


counts = collections.Counter()
detail = []
for name, q in FILES:
    for line in open(HERE / name):
        m = LINE.match(line)
        if not m:
            continue
        impl, problem, old, new, change, verdict = m.groups()
        hq, hkv, d = map(int, re.search(r" (\d+)/(\d+)/(\d+)", problem).groups())
        rows = hq // hkv * q
        pad = triton.next_power_of_2(d)
        split = saves(d) and (pad > 128 or rows >= 16)
        kind = "no saving" if not saves(d) else "pad 256" if pad > 128 else "pad <=128"
        said = "same" if verdict == "same" else ("rule faster" if float(new) < float(old) else "rule slower")
        counts[(kind, "rows>=16" if rows >= 16 else "rows 1-15", "split" if split else "one tile", said)] += 1
        if saves(d):
            detail.append((name[8:-4], impl, problem[:55], old, new, change, verdict, rows))
for k in sorted(counts):
    print(f"{k[0]:10} {k[1]:10} {k[2]:9} {k[3]:12} {counts[k]:3}")
for x in detail:
    print(*x)
