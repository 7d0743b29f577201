#!/usr/bin/env bash
# Triton's paged cells of 64 and 128 sequences (stages.json), one machine: the defaults (2 stages
# from 1024 programs), 2 stages everywhere, and the code before the change (.old/ = `git archive
# e983c78`); cold L2. On the device machine (no vendor wheels):
#     DECODE_BENCH_COMMIT=<sha> OUT=<folder> bash results/nvidia-h100/2026-11-24-plan/run-stages.sh
set -uo pipefail
HERE=$PWD/results/nvidia-h100/2026-11-24-plan
OUT=${OUT:-runs/plan-stages}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
run() {  # out name, root, commit, extra harness options
  (cd "$2" && DECODE_BENCH_COMMIT=$3 PYTHONPATH=. timeout 120 python3 -m harness run --backends triton \
     --variants paged,split-k --workload-file "$HERE/stages.json" --timing cold --out "$OUT/$1" "${@:4}" \
     > "$OUT/$1.log" 2>&1); echo "$1 exit $?"
}
run defaults . "${DECODE_BENCH_COMMIT:-unset}"
run stages2 . "${DECODE_BENCH_COMMIT:-unset}" --config '{"num_stages": 2}'
run before .old e983c78
python3 -m harness compare "$OUT/before" "$OUT/defaults" > "$OUT/compare-before-defaults.txt" 2>&1
python3 -m harness compare "$OUT/before" "$OUT/stages2" > "$OUT/compare-before-stages2.txt" 2>&1
python3 -m harness compare "$OUT/defaults" "$OUT/stages2" > "$OUT/compare-defaults-stages2.txt" 2>&1
for f in "$OUT"/compare-*.txt; do echo "== $(basename "$f")"; grep -E "triton/" "$f"; done
tar czf "$OUT/stages.tgz" -C "$OUT" defaults stages2 before && rm -rf "$OUT/defaults" "$OUT/stages2" "$OUT/before"
