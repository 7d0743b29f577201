"""The wide drafts where Triton is furthest behind FA3 in one run folder: prints, per problem
(worst first, at most N), Triton's and FA3's fastest passing variant with the problem as JSON,
one tab-separated line each (for `harness profile IMPL --problem JSON --ncu`).
usage: python3 pick_prof.py RUN_DIR [N]"""
import json
import lzma
import sys
from pathlib import Path

run, count = Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 2
path = run / "rows.jsonl"
text = path.read_text() if path.exists() else lzma.open(str(path) + ".xz", "rt").read()
best = {}
for line in text.splitlines():
    r = json.loads(line)
    if r["status"] != "PASS" or r["backend"] not in ("triton", "flash_attn3"):
        continue
    key = (r["problem"], r["backend"])
    if key not in best or r["cold_us"] < best[key]["cold_us"]:
        best[key] = r
ratios = sorted((best[(p, "flash_attn3")]["cold_us"] / best[(p, "triton")]["cold_us"], p)
                for p, b in best if b == "triton" and (p, "flash_attn3") in best)
for ratio, p in ratios:
    print(f"# {ratio:.2f}x {p}", file=sys.stderr)
for ratio, p in ratios[:count]:
    for b in ("triton", "flash_attn3"):
        r = best[(p, b)]
        print(f"{r['impl']}\t{json.dumps(r['spec'], separators=(',', ':'))}\t{p}")
