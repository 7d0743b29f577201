#!/usr/bin/env bash
# Issue 15's merge work, second device call: CuPy's split-K at batch 1 (b1.json), merge fused, on
# other rings (4 warps: 64-token tiles, two CTAs an SM) and grid order, and forced 8 and 16 pieces
# at 1k-2k tokens (b1-short.json); then the ring shape of the one-pass kernels on every grid cell
# of 16 sequences or more (scripts/sweep.py --grid, quick timing), for a choice per problem.
#     DECODE_BENCH_COMMIT=<sha> OUT=<folder> bash results/nvidia-h100/2026-11-24-cupy-merge/run-2.sh
set -uo pipefail
R=results/nvidia-h100/2026-11-24-cupy-merge
O=${OUT:-runs/cupy-merge-2}
W=/tmp/cupy-merge-2
mkdir -p "$O" "$W"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH}
t0=$SECONDS
stamp() { echo "[$((SECONDS - t0)) s] $*"; }
b1() {  # name, workload file, extra harness arguments
  local name=$1 file=$2; shift 2
  timeout 60 python3 -m harness run --backends cupy --variants split-k --workload-file "$file" \
    --timing cold --out "$W/$name" "$@" > "$W/$name.log" 2>&1
  stamp "$name exit $?"
}
b1 fused-w4s3 $R/b1.json --config '{"MERGE": "fused", "NUM_WARPS": 4, "STAGES": 3}'
b1 fused-w4s2 $R/b1.json --config '{"MERGE": "fused", "NUM_WARPS": 4, "STAGES": 2}'
b1 fused-items-first $R/b1.json --config '{"MERGE": "fused", "ITEMS_FIRST": 1}'
b1 fused-split8 $R/b1-short.json --config '{"MERGE": "fused"}' --num-splits 8
b1 fused-split16 $R/b1-short.json --config '{"MERGE": "fused"}' --num-splits 16
b1 fused-w4s3-split16 $R/b1-short.json --config '{"MERGE": "fused", "NUM_WARPS": 4, "STAGES": 3}' --num-splits 16
timeout 420 python3 scripts/sweep.py cupy --quick --all --grid --configs \
  '[{"NUM_WARPS": 8, "STAGES": 3}, {"NUM_WARPS": 8, "STAGES": 2}, {"NUM_WARPS": 4, "STAGES": 3}, {"NUM_WARPS": 4, "STAGES": 4}, {"NUM_WARPS": 2, "STAGES": 2}, {"NUM_WARPS": 2, "STAGES": 3}]' \
  > "$W/sweep-grid.log" 2>&1
stamp "sweep exit $?"
tar czf "$O/call2.tgz" -C "$W" .
python3 - "$W" <<'PY'
import csv, glob, os, sys
for f in sorted(glob.glob(f"{sys.argv[1]}/*/results.csv")):
    run = os.path.basename(os.path.dirname(f))
    print(run, " ".join(f"{r['problem'].split()[1]}{'p' if 'paged' in r['problem'] else 'd'}={r['median_us']}"
                        for r in csv.DictReader(open(f)) if r["status"] == "PASS"))
PY
grep "best" "$W/sweep-grid.log" | sed -E "s/ \{'TENSOR_CORES'.*//; s/'config': //"
