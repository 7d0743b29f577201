"""Every row the register cap changed, capped (``min_blocks`` by the rule) against uncapped
(``--config '{"min_blocks": 0}'``), with the drift of the rows the rule left uncapped (the same
kernel in both runs: the pair's noise), per backend and run pair; and for each capped row the
grid of whole sequences (batch x KV heads x row blocks) against what the SMs hold uncapped
(132 x (min_blocks - 1)): the condition the landed rule adds (cap only where the grid is more).
    python3 rows.py               (in this folder: the two pairs)"""
import json
import lzma
import os
import statistics

PAIRS = [("off81q8", "on81q8"), ("off83", "on83")]
SMS = 132  # the H100 SXM's


def rows(folder):
    path = f"{folder}/results.json"
    data = json.load(lzma.open(path + ".xz") if os.path.exists(path + ".xz") else open(path))
    return {(r["impl"], r["problem"]): r for r in data["rows"] if r["status"] == "PASS" and r.get("median_us")}


for off_dir, on_dir in PAIRS:
    off, on = rows(off_dir), rows(on_dir)
    for backend in ("gluon", "triton"):
        same, capped = [], []
        for key, r in on.items():
            if r["backend"] != backend or key not in off:
                continue
            change = r["median_us"] / off[key]["median_us"] - 1
            (capped if r["config"].get("min_blocks") else same).append((change, r))
        drift = [c for c, _ in same]
        lo, hi = min(drift), max(drift)
        print(f"{on_dir} {backend}: {len(same)} rows uncapped in both: {lo:+.1%} to {hi:+.1%} "
              f"(median {statistics.median(drift):+.1%}); {len(capped)} capped:")
        for change, r in sorted(capped, key=lambda t: t[0]):
            s, mb = r["spec"], r["config"]["min_blocks"]
            row_blocks = -(-(s["q_len"] * s["num_q_heads"] // s["num_kv_heads"]) // r["config"]["block_h"])
            grid, slots = len(s["seq_lens"]) * s["num_kv_heads"] * row_blocks, SMS * (mb - 1)
            flag = "faster" if change < lo else "slower" if change > hi else "within drift"
            print(f"  {change:+6.1%} {off[(r['impl'], r['problem'])]['median_us']:8.1f} -> {r['median_us']:8.1f} us"
                  f"  min_blocks {mb}  grid {grid:5d} {'>' if grid > slots else '<='} {slots:4d} held uncapped"
                  f"  {r['impl']:14s} {r['problem']}  [{flag}]")
