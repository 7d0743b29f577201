#!/usr/bin/env bash
# Two runs of the same harness command on one GPU, and their comparison: the run-to-run spread
# that says whether a ranking can be trusted. On the device machine:
#     DECODE_BENCH_COMMIT=<sha> OUT=<folder> bash scripts/gpu_repeat.sh [harness run options]
# The first run starts with empty JIT caches (--fresh-caches: its first calls are compilations),
# the second reuses nothing but the machine. Kept in $OUT (at most 8 files come back from the
# device machine): run1/ and run2/ results.json + harness.log, compare.txt. Render the tables
# and plots afterwards, anywhere: python -m harness report $OUT/run1 (and run2).
# When the two runs do not fit one device call, RUNS=1 and then RUNS=2 in two calls back to back
# (the machine stays warm between them) and compare on any machine:
#     python -m harness compare run1 run2
# RUN_LIMIT_S (default 560) ends a run that overruns; the rows it finished are kept (rows.jsonl
# and provenance.json instead of results.json; report and compare read both).
set -uo pipefail
OUT=${OUT:-runs/gpu-repeat}
PY=${PYTHON:-python3}
RUNS=${RUNS:-1 2}
export PYTHONUNBUFFERED=1
work=$(mktemp -d)
for n in $RUNS; do
  extra=(); [ "$n" = 1 ] && extra=(--fresh-caches)
  start=$SECONDS
  timeout "${RUN_LIMIT_S:-560}" "$PY" -m harness run --out "$work/run$n" "${extra[@]}" "$@" \
    > "$work/run$n.log" 2>&1
  echo "run $n: exit code $? after $((SECONDS - start)) s ($(tail -1 "$work/run$n.log"))"
  mkdir -p "$OUT/run$n"
  if [ -f "$work/run$n/results.json" ]; then
    cp "$work/run$n/results.json" "$OUT/run$n/"
  else  # ended before rendering: the rows written so far
    cp "$work/run$n/rows.jsonl" "$work/run$n/provenance.json" "$OUT/run$n/" 2>/dev/null
  fi
  cp "$work/run$n.log" "$OUT/run$n/harness.log"
done
if [ -d "$work/run1" ] && [ -d "$work/run2" ]; then
  "$PY" -m harness compare "$work/run1" "$work/run2" > "$OUT/compare.txt" 2>&1
  echo "compare: exit code $? (1: a row slower beyond the noise)"
  grep -E "^(summary|ranking|  flipped)" "$OUT/compare.txt"
fi
rm -rf "$work"
