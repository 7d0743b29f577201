#!/usr/bin/env bash
# The shape-generality run (issue 32) on one GPU, in one device call:  bash run.sh all OUT
#   conformance of the split-K kernels (the planner and its skeleton changed; 5 examples per
#   property); the held-out shapes of seed 1 with every launch config by its backend's rule (no
#   tuning cache); --tune on the held-out shapes of seed 0 (quick: 6 shapes), which writes the
#   cache; the shapes of seed 1 again with that cache. Each run is stopped by SIGINT at its
#   time limit (marked incomplete, tables written). DSLS=... picks the DSL backends.
set -uo pipefail
phase=$1; OUT=$2; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 DECODE_BENCH_TUNING_CACHE="$OUT/tuning.json"
DSLS=${DSLS:-triton,gluon,cupy}
VENDORS=torch-cudnn,torch-fa2
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; git log -1 --format=%H 2>/dev/null; } > "$OUT/machine.txt"
run() {  # name, seconds, harness options: SIGINT at the limit (the run writes its tables, incomplete)
  local name=$1 limit=$2; shift 2
  timeout -s INT "$limit" python3 -m harness run "$@" --timing cold --out "$OUT/$name" > "$OUT/$name.log" 2>&1
  echo "$name rc $?"; tail -2 "$OUT/$name.log"
}
DECODE_BENCH_PROFILE=gpu DECODE_BENCH_EXAMPLES=5 timeout 120 python3 -m pytest conformance -q \
  -p no:cacheprovider -k "split and (triton or gluon or cupy or numba)" -W ignore::DeprecationWarning \
  > "$OUT/conformance.log" 2>&1; echo "conformance rc $?"; tail -1 "$OUT/conformance.log"
case $phase in
  all)
    run heldout1-rule 190 --workloads heldout:1 --backends $DSLS,$VENDORS --no-tuning-cache
    run heldout0-tune 150 --workloads heldout --quick --backends $DSLS --tune
    run heldout1-cache 190 --workloads heldout:1 --backends $DSLS,$VENDORS;;
esac
