#!/usr/bin/env bash
# Registered run (../README.md): CuPy's read probes (branch hyp/cupy-layout-read) checked, then
# timed beside Triton's and the DSL decode kernels on problems of 256 MB or more. One GPU, no
# vendor wheel, about 12 minutes. From the repository root:
#   git checkout hyp/cupy-layout-read
#   mkdir -p gpu-session && cp results/nvidia-h200/2026-11-29-layout-read/next/* gpu-session/
#   DECODE_BENCH_COMMIT=$(git rev-parse HEAD) OUT=$OUT bash scripts/device_run.sh start gpu-session/next16.sh 540
#   OUT=$OUT bash scripts/device_run.sh wait 540     (if it has not printed 'next16 done')
# 1. the probes read exactly their bytes: tests/test_cupy_read_probe.py (wrapping word sums
#    against torch's, poisoned rows beside the attended ones)
# 2. scripts/layout_read.py on lr.json (seeds 2880-2959) and lrp.json (paged, seeds 2960-3039):
#    the contiguous size-matched read, and each probe's layout read (Triton's, CuPy's)
# 3. the DSL decode kernels (Triton, Gluon, CuPy, every variant) on the same problems, cold L2:
#    each run's provenance holds the bandwidth probes, CuPy's contiguous read among them
# 4. per problem: the best DSL kernel's time against each layout read (printed last)
set -u
cd "$(dirname "$0")/.."
timeout 300 python3 -m pytest tests/test_cupy_read_probe.py -v -p no:cacheprovider > "$W/probe-tests.log" 2>&1
grep -E "PASSED|FAILED|ERROR|passed|failed" "$W/probe-tests.log" | tail -n 12
for set in lr lrp; do
  timeout 300 python3 scripts/layout_read.py --workload-file "gpu-session/$set.json" \
    --out "$W/layout-$set.json" > "$W/layout-$set.log" 2>&1
  cat "$W/layout-$set.log"
done
RUNS="lr|300|--workload-file gpu-session/lr.json --backends triton,gluon,cupy;
      lrp|300|--workload-file gpu-session/lrp.json --backends triton,gluon,cupy" \
  W=$W/runs bash scripts/gpu_pipeline.sh > "$W/runs.log" 2>&1
grep -E " rc |PASS" "$W/runs.log"
python3 - "$W" <<'PY'
import json, sys
from pathlib import Path
w = Path(sys.argv[1])
for name in ("lr", "lrp"):
    try:
        rows = json.loads((w / "runs" / name / "results.json").read_text())["rows"]
        layout = json.loads((w / f"layout-{name}.json").read_text())
    except (OSError, ValueError, KeyError) as e:
        print(f"{name}: no comparison ({e})")
        continue
    print(f"{name}: bandwidth limit {layout.get('limit_gbps')} GB/s (layout_read.py's measure)")
    best = {}
    for r in rows:
        if r.get("status") == "PASS" and r.get("median_us"):
            if r["problem"] not in best or r["median_us"] < best[r["problem"]][0]:
                best[r["problem"]] = (r["median_us"], r["impl"])
    print(f"{'problem':62s} {'contig':>7s} {'best DSL us':>20s}  layout reads (us; best DSL / read)")
    for row in layout["rows"]:
        kernel = best.get(row["problem"])
        reads = {k: v for k, v in row["layout_us"].items() if isinstance(v, (int, float))}
        each = "  ".join(f"{k} {v:.1f} ({kernel[0] / v:.2f})" if kernel else f"{k} {v:.1f}"
                         for k, v in reads.items())
        text = f"{kernel[0]:.1f} {kernel[1]}" if kernel else "-"
        print(f"{row['problem'][:62]:62s} {row['contiguous_us'] or 0:7.1f} {text:>20s}  {each}")
PY
echo "next16 done"
