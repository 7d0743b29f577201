#!/usr/bin/env bash
# Run 5 (this session had 5 minutes of device time: one call, no vendor wheels): CuPy's merge
# change (7442231) on one H100. $OUT: where the logs and tables go.
#   1. both CuPy merges against the reference, launch after launch, drafts included
#   2. split-k rows of 'spec-decode' for CuPy (every cell) and Triton (the MQA cells: a same-run
#      anchor), cold L2, each row checked against the float64 oracle before and after timing
#   3. CuPy's properties 1 and 9 (oracle, q_len = n equals n single-token calls) to a time limit
set -u
cd "$(dirname "$0")/../../.."
export PYTHONUNBUFFERED=1
D=results/nvidia-h100/2026-11-25-spec-decode
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch, triton, cupy; print('torch', torch.__version__, 'triton', triton.__version__, 'cupy', cupy.__version__)"
  echo "commit ${DECODE_BENCH_COMMIT:-unset}"; } > "$OUT/env.txt" 2>&1
s=$SECONDS; timeout 90 python3 -m pytest tests/test_split_merges.py -q -p no:cacheprovider -k cupy > "$OUT/split-merges.log" 2>&1
echo "split merges rc $? in $((SECONDS - s)) s: $(tail -1 "$OUT/split-merges.log")"
s=$SECONDS; timeout -s INT 75 python3 -m harness run --workloads spec-decode --backends cupy --variants split-k \
  --timing cold --no-tuning-cache --out "$OUT/cupy" > "$OUT/cupy.log" 2>&1
echo "cupy rc $? in $((SECONDS - s)) s: $(tail -1 "$OUT/cupy.log")"
s=$SECONDS; timeout -s INT 45 python3 -m harness run --workload-file $D/mqa-drafts.json --backends triton --variants split-k \
  --timing cold --no-tuning-cache --out "$OUT/triton" > "$OUT/triton.log" 2>&1
echo "triton rc $? in $((SECONDS - s)) s: $(tail -1 "$OUT/triton.log")"
s=$SECONDS; DECODE_BENCH_PROFILE=gpu DECODE_BENCH_EXAMPLES=4 timeout 60 python3 -m pytest conformance -v -p no:cacheprovider \
  -k "cupy and (query_tokens or matches_reference)" -W ignore::DeprecationWarning > "$OUT/conformance-cupy.log" 2>&1
echo "conformance cupy rc $? in $((SECONDS - s)) s: $(grep -c PASSED "$OUT/conformance-cupy.log") passed, $(grep -c FAILED "$OUT/conformance-cupy.log") failed"
python3 - "$OUT" <<'PY'
import json, sys
rows = [json.loads(l) for b in ("cupy", "triton") for l in open(f"{sys.argv[1]}/{b}/rows.jsonl")]
for r in rows:
    s = r["spec"]
    if s["name"] == "llama3-70b-tp8":
        print(r["backend"], "q%d" % s["q_len"], "b%d" % len(s["seq_lens"]), s["layout"], r["status"], r.get("median_us"), (r.get("config") or {}).get("merge"))
PY
