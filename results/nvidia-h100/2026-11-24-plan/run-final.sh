#!/usr/bin/env bash
# Issue 14's committed run on one H100, in two device calls back to back (a call lasts at most
# 10 minutes; the main run outlasts one):
#   start: every backend on grid, ragged and sched, cold L2, empty JIT caches, in the background
#          (setsid: it outlives the call), then waits as long as the call allows;
#   finish: waits for it, then on the idle GPU: the conformance suite on the Triton kernels and
#          the planner, and the split-K launchers of CuPy, Numba and Gluon (gpu profile); the code
#          before this issue (.old/, `git archive e983c78`) on the grid for Triton and CuPy, and
#          `harness compare` of it with the main run; the ablations: Triton's split-K with the
#          merge fused (MERGE=fused), and its paged grid cells at 3 stages everywhere (the default
#          takes 2 from 1024 programs); scripts/plan_probe.py (the planner's host cost); one
#          archive in $OUT.
# On the device machine, all vendor wheels installed (wheels.sh fa4 flashinfer fa3):
#     DECODE_BENCH_COMMIT=<sha> OUT=<folder> bash results/nvidia-h100/2026-11-24-plan/run-final.sh start|finish
set -uo pipefail
W=/root/final  # survives between the two calls (same machine)
mkdir -p "$W"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH}
wait_main() {  # until the main run ends or $1 seconds pass
  local end=$((SECONDS + $1))
  while [ -e "$W/running" ] && [ $SECONDS -lt $end ]; do sleep 5; done
  tail -c 600 "$W/main.log"; echo; [ -e "$W/running" ] && echo "main run still running" || cat "$W/main.exit"
}
case "${1:-}" in
start)
  { nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
    pip list 2>/dev/null | grep -iE "^(cupy|numba|flash|nvidia-cutlass-dsl|apache-tvm)" || true
    PYTHONPATH=$PYTHONPATH python3 -c "import flashinfer; print('flashinfer', flashinfer.__version__)"
    echo "commit ${DECODE_BENCH_COMMIT:-unset}"; } > "$W/env.txt" 2>&1
  touch "$W/running"
  setsid bash -c "python3 -m harness run --workloads grid,ragged,sched --timing cold --fresh-caches \
    --out $W/main > $W/main.log 2>&1; echo \"main exit \$?\" > $W/main.exit; rm -f $W/running" \
    < /dev/null > /dev/null 2>&1 &
  wait_main 570 ;;
finish)
  wait_main 420
  [ -e "$W/running" ] && exit 1
  DECODE_BENCH_PROFILE=gpu DECODE_BENCH_EXAMPLES=5 timeout 240 python3 -m pytest conformance -q -n 8 \
    -p no:cacheprovider -W ignore::DeprecationWarning \
    -k "triton or plan or ((cupy or numba or gluon) and split)" > "$W/conformance.log" 2>&1
  echo "conformance exit $?"
  (cd .old && DECODE_BENCH_COMMIT=e983c78 timeout 240 python3 -m harness run --backends triton,cupy \
     --workloads grid --timing cold --out "$W/before" > "$W/before.log" 2>&1; echo "before exit $?")
  python3 -m harness compare "$W/before" "$W/main" > "$W/compare-before.txt" 2>&1
  echo "compare exit $?"
  timeout 120 python3 -m harness run --backends triton --variants split-k --workloads grid,ragged,sched \
    --timing cold --config '{"MERGE": "fused"}' --out "$W/merge-fused" > "$W/merge-fused.log" 2>&1
  echo "merge-fused exit $?"
  python3 -m harness compare "$W/main" "$W/merge-fused" > "$W/compare-merge.txt" 2>&1
  timeout 90 python3 -m harness run --backends triton --variants paged,split-k --workloads grid \
    --timing cold --config '{"num_stages": 3}' --out "$W/stages3" > "$W/stages3.log" 2>&1
  echo "stages3 exit $?"
  python3 -m harness compare "$W/main" "$W/stages3" > "$W/compare-stages.txt" 2>&1
  timeout 60 python3 scripts/plan_probe.py > "$W/plan-probe.txt" 2>&1; echo "plan probe exit $?"
  grep -E "passed|failed" "$W/conformance.log" | tail -3
  grep -E "slower|faster|regress" "$W/compare-before.txt" | head -30
  cat "$W/plan-probe.txt"
  mkdir -p "${OUT:-runs/plan-final}"
  tar czf "${OUT:-runs/plan-final}/final.tgz" -C "$W" . && echo "archive: $(du -h "${OUT:-runs/plan-final}/final.tgz" | cut -f1)" ;;
*) echo "usage: run-final.sh start|finish" >&2; exit 2 ;;
esac
