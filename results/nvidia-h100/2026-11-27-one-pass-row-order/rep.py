"""The one-pass rows of seeds 86 and 46 in ab/ and repeat/ side by side: main (o) and the branch (n),
three runs each (A: ab/, 1 and 2: repeat/'s rounds). Run in this folder."""
import statistics

from cmp import row_blocks, rows_of

runs = {}
for tree in "on":
    for seed in ("86", "46"):
        runs[tree, seed, "A"] = rows_of(f"ab/{tree}{seed}")
        for rnd in "12":
            try:
                runs[tree, seed, rnd] = rows_of(f"repeat/{tree}{seed}r{rnd}")
            except FileNotFoundError:
                runs[tree, seed, rnd] = {}


def cell(x):
    return f"{x:7.1f}" if x else "      -"


def change(x):
    return f"{100 * x:+6.1f}%" if x is not None else "      -"


print(f"{'problem':44} {'impl':12} blk |      oA      o1      o2 |      nA      n1      n2 | n/o(2) n/o(A)")
summary = {}
for seed in ("86", "46"):
    for key, row in sorted(runs["o", seed, "2"].items()):
        if row["variant"] not in ("dense", "paged"):
            continue
        v = [runs[t, seed, x].get(key, {}).get("median_us") for t in "on" for x in "A12"]
        blocks = row_blocks(row)
        second = v[5] / v[2] - 1 if v[5] and v[2] else None
        first = v[3] / v[0] - 1 if v[3] and v[0] else None
        summary.setdefault((row["backend"], blocks > 1), []).append(second)
        print(f"{key[1][:44]:44} {key[0]:12} {blocks:3d} | {' '.join(map(cell, v[:3]))} | "
              f"{' '.join(map(cell, v[3:]))} | {change(second)} {change(first)}")
for (backend, several), changes in sorted(summary.items()):
    changes = sorted(100 * c for c in changes if c is not None)
    print(backend, "several" if several else "one", len(changes),
          f"median {statistics.median(changes):+.1f} min {changes[0]:+.1f} max {changes[-1]:+.1f}")
