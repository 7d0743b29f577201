#!/usr/bin/env bash
# Two runs of the same harness command on one GPU, and their comparison: the run-to-run spread
# that says whether a ranking can be trusted. On the device machine:
#     DECODE_BENCH_COMMIT=<sha> OUT=<folder> bash scripts/gpu_repeat.sh [harness run options]
# The first run starts with empty JIT caches (--fresh-caches: its first calls are compilations),
# the second reuses nothing but the machine. Kept in $OUT (at most 8 files come back from the
# device machine): run1/ and run2/ results.json + harness.log, compare.txt. Render the tables
# and plots afterwards, anywhere: python -m harness report $OUT/run1 (and run2).
set -uo pipefail
OUT=${OUT:-runs/gpu-repeat}
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
work=$(mktemp -d)
for n in 1 2; do
  extra=(); [ "$n" = 1 ] && extra=(--fresh-caches)
  "$PY" -m harness run --out "$work/run$n" "${extra[@]}" "$@" > "$work/run$n.log" 2>&1
  echo "run $n: exit code $? ($(tail -1 "$work/run$n.log"))"
  mkdir -p "$OUT/run$n"
  cp "$work/run$n/results.json" "$OUT/run$n/" 2>/dev/null
  cp "$work/run$n.log" "$OUT/run$n/harness.log"
done
"$PY" -m harness compare "$work/run1" "$work/run2" > "$OUT/compare.txt" 2>&1
echo "compare: exit code $? (1: a row slower beyond the noise)"
grep -E "^(summary|ranking|  flipped)" "$OUT/compare.txt"
rm -rf "$work"
