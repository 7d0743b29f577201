#!/usr/bin/env bash
# Issue 15's committed run on one H100, in device calls back to back (a call lasts at most 10 min):
#   checks: CuPy's conformance suite (gpu profile), the fused-merge tests, compute-sanitizer
#           memcheck and racecheck over every CuPy kernel (scripts/sanitize.py: both loops, the
#           2-warp rings, both merges); needs no vendor wheel;
#   start:  in the background (setsid: it outlives the call), then waits as long as the call allows:
#           CuPy beside every vendor kernel on grid and ragged, cold L2, empty JIT caches (main/);
#           CuPy with this session's two choices undone, 8 x 3 rings and the combine kernel
#           (rules-off/); CuPy before this session (.old/, `git archive 6567c84`, before/);
#   finish: waits for it; `harness compare` of the three; one archive in $OUT.
# With every vendor wheel installed for start (wheels.sh fa4 flashinfer fa3):
#     DECODE_BENCH_COMMIT=<sha> OUT=<folder> bash results/nvidia-h100/2026-11-24-cupy-merge/run-final.sh checks|start|finish
set -uo pipefail
W=/root/final  # survives between the calls (same machine)
mkdir -p "$W"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH}
wait_main() {  # until the background runs end or $1 seconds pass
  local end=$((SECONDS + $1))
  while [ -e "$W/running" ] && [ $SECONDS -lt $end ]; do sleep 5; done
  tail -c 400 "$W/main.log"; echo; [ -e "$W/running" ] && echo "still running" || cat "$W/main.exit"
}
case "${1:-}" in
checks)
  timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_split_merges.py > "$W/split-merges-tests.log" 2>&1
  echo "split-merge tests exit $?"
  DECODE_BENCH_PROFILE=gpu timeout 240 python3 -m pytest conformance -q -n 8 -p no:cacheprovider \
    -W ignore::DeprecationWarning -k cupy > "$W/conformance.log" 2>&1
  echo "conformance exit $?"
  timeout 150 compute-sanitizer --tool memcheck python3 scripts/sanitize.py cupy > "$W/memcheck.log" 2>&1
  echo "memcheck exit $?"
  timeout 250 compute-sanitizer --tool racecheck python3 scripts/sanitize.py cupy > "$W/racecheck.log" 2>&1
  echo "racecheck exit $?"
  grep -hE "passed|failed" "$W/split-merges-tests.log" "$W/conformance.log" | tail -2
  tail -n 2 "$W/memcheck.log"; tail -n 2 "$W/racecheck.log" ;;
start)
  { nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    python3 -c "import torch, triton, cupy; print('torch', torch.__version__, 'cudnn', torch.backends.cudnn.version(), 'triton', triton.__version__, 'cupy', cupy.__version__)"
    pip list 2>/dev/null | grep -iE "^(cupy|numba|flash|nvidia-cutlass-dsl|apache-tvm)" || true
    python3 -c "import flashinfer; print('flashinfer', flashinfer.__version__)"
    echo "commit ${DECODE_BENCH_COMMIT:-unset}"; } > "$W/env.txt" 2>&1
  touch "$W/running"
  setsid bash -c "python3 -m harness run --backends cupy,flash_attn3,flash_attn4,flashinfer,torch-cudnn,torch-fa2 \
    --workloads grid,ragged --timing cold --fresh-caches --out $W/main > $W/main.log 2>&1; echo \"main exit \$?\" > $W/main.exit; \
    python3 -m harness run --backends cupy --workloads grid,ragged --timing cold \
    --config '{\"NUM_WARPS\": 8, \"STAGES\": 3, \"MERGE\": \"kernel\"}' --out $W/rules-off > $W/rules-off.log 2>&1; \
    echo \"rules-off exit \$?\" >> $W/main.exit; \
    cd .old && DECODE_BENCH_COMMIT=6567c84 python3 -m harness run --backends cupy --workloads grid,ragged --timing cold \
    --out $W/before > $W/before.log 2>&1; echo \"before exit \$?\" >> $W/main.exit; rm -f $W/running" \
    < /dev/null > /dev/null 2>&1 &
  wait_main 560 ;;
finish)
  wait_main 540
  [ -e "$W/running" ] && exit 1
  python3 -m harness compare "$W/before" "$W/main" > "$W/compare-before.txt" 2>&1
  python3 -m harness compare "$W/rules-off" "$W/main" > "$W/compare-rules.txt" 2>&1
  grep -cE "PASS" "$W/main/results.csv"; grep -cE "FAIL|ERROR" "$W/main/results.csv"
  mkdir -p "${OUT:-runs/cupy-final}"
  tar czf "${OUT:-runs/cupy-final}/final.tgz" -C "$W" . && echo "archive: $(du -h "${OUT:-runs/cupy-final}/final.tgz" | cut -f1)" ;;
esac
