"""The dim_split A/Bs of this folder by kind of head dim: padded to 256 (129-255) or to 128 or
less, and the query rows of a KV head. Run from the repository root:
    python results/nvidia-h200/2026-11-26-dim-split/classify.py"""
import collections
import pathlib
import re

import triton

HERE = pathlib.Path(__file__).parent
# (compare file, the side that ran the head dim in two tiles)
FILES = [("a-d72f841/compare-rule-h29-ds-h29.txt", "new"), ("a-d72f841/compare-rule-h47-ds-h47.txt", "new"),
         ("a-d72f841/compare-rule-drafts-ds-drafts.txt", "new"), ("a-d72f841/compare-rule-phi3-ds-phi3.txt", "new"),
         ("b-8ee7c2d/compare-r51-s0-51.txt", "old"), ("b-8ee7c2d/compare-r54-s0-54.txt", "old"),
         ("b-8ee7c2d/compare-r-rows1-s1-rows1.txt", "new")]
Q_LEN = {"h29": 8, "h47": 6}  # the runs' --q-len (their labels carry none)
LINE = re.compile(r"(triton/\S+)\s+(.*?)\s{2,}(\d+\.\d+) \[.*?\]\s+(\d+\.\d+) \[.*?\]\s+[+-]\d+\.\d+%\s+(\w+)")


def saves(d: int) -> bool:
    pad = triton.next_power_of_2(d)
    return pad != d and d > 16 and pad // 2 + max(16, triton.next_power_of_2(d - pad // 2)) < pad


counts = collections.Counter()
for name, side in FILES:
    for line in open(HERE / name):
        m = LINE.match(line)
        if not m:
            continue
        impl, problem, old, new, verdict = m.groups()
        if "phi3" in problem:
            hq, hkv, d, q = 32, 32, 96, 1
        else:
            f = re.search(r" (\d+)/(\d+)/(\d+)( q(\d+))?", problem)
            hq, hkv, d = map(int, f.groups()[:3])
            q = int(f.group(5) or next((v for k, v in Q_LEN.items() if k in name), 1))
        if not saves(d):
            continue
        split, one = (float(new), float(old)) if side == "new" else (float(old), float(new))
        said = "same" if verdict == "same" else ("split faster" if split < one else "split slower")
        kind = "padded to 256" if triton.next_power_of_2(d) > 128 else "padded to <= 128"
        rows = hq // hkv * q
        counts[(kind, "rows >= 16" if rows >= 16 else "rows 1-15", said)] += 1
for key in sorted(counts):
    print(f"{key[0]:18} {key[1]:11} {key[2]:13} {counts[key]:3}")
