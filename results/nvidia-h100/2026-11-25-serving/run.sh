#!/usr/bin/env bash
# Issue 31's GPU runs, one phase per device call (each call waits for the background job at most
# 540 s, then returns what there is; the next call picks up):
#   tl1 / tl2 / w1 / w4 DIR: wheels (TileLang into its own folder first, then the rest; packed by
#           the shared wheels script, repacked into folders of at most 33 MiB, so each travels beside
#           this 28 MB tree: the calls of the first machine are in README.md)
#   start:  in the background (setsid): lengths (every backend, --no-timing), the controls, then
#           sched + serving (every backend, cold L2); `wait` waits for it and packs $OUT.
#   start2: (the second machine, at the final commit) the conformance suite on every backend (gpu
#           profile, 6 examples a property), --save-cases and replay of a 1M-token problem, then
#           sched + serving again (every backend, cold L2) into final/; `wait` as above.
#     DECODE_BENCH_COMMIT=<sha> OUT=<folder> bash results/nvidia-h100/2026-11-25-serving/run.sh PHASE
set -uo pipefail
W=/root/serving  # survives between the calls (same machine)
mkdir -p "$W"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
export PYTHONPATH=.:/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages
export DECODE_BENCH_ENV_TILELANG=/tmp/site-tilelang
wait_main() {  # until the background job ends or $1 seconds pass
  local end=$((SECONDS + $1))
  while [ -e "$W/running" ] && [ $SECONDS -lt $end ]; do sleep 5; done
  tail -c 1500 "$W/pipeline.log"; echo; [ -e "$W/running" ] && echo "still running"; cat "$W/exit" 2>/dev/null
}
env_txt() {
  { nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    python3 -c "import torch, triton; print('torch', torch.__version__, 'cudnn', torch.backends.cudnn.version(), 'triton', triton.__version__)"
    python3 -c "import helion, importlib.metadata as m; print('helion', m.version('helion'))"
    PYTHONPATH=/tmp/site-tilelang:. python3 -c "import tilelang, tvm_ffi; print('tilelang', tilelang.__version__, 'tvm_ffi', tvm_ffi.__version__)"
    pip list 2>/dev/null | grep -iE "^(cupy|numba|flash|nvidia-cutlass-dsl|apache-tvm)" || true
    PYTHONPATH=/tmp/site python3 -c "import importlib.metadata as m; print('flashinfer', m.version('flashinfer-python'), 'flash-attn-4', m.version('flash-attn-4'))"
    echo "commit ${DECODE_BENCH_COMMIT:-unset}"; } > "$W/env.txt" 2>&1
  cat "$W/env.txt"
}
pack() {
  tar -C "$W" -cJf "$OUT/serving.tar.xz" --ignore-failed-read env.txt pipeline.log exit lengths lengths.log \
    controls controls.log main main.log conformance.log conformance-tilelang.log replay.log final final.log
}
case "${1:-}" in
tl1|w1) mkdir -p /root/wh && cp "$2"/* /root/wh/ && ls /root/wh | wc -l ;;
tl2) TARGET=/tmp/site-tilelang source "$2/install.sh" && rm -rf /root/wh && echo "tilelang installed" ;;
w4) source "$2/install.sh" && echo installed && env_txt ;;
start)
  rm -rf "$W/lengths" "$W/controls" "$W/main" "$W/exit"; touch "$W/running"
  setsid bash "$0" pipeline < /dev/null > "$W/pipeline.log" 2>&1 &
  wait_main 520 ;;
pipeline)
  python3 -m harness run --workloads lengths --no-timing --out "$W/lengths" > "$W/lengths.log" 2>&1
  echo "lengths exit $?" >> "$W/exit"
  python3 scripts/long_context.py controls --out "$W/controls" > "$W/controls.log" 2>&1
  echo "controls exit $?" >> "$W/exit"
  python3 -m harness run --workloads sched,serving --timing cold --out "$W/main" > "$W/main.log" 2>&1
  echo "main exit $?" >> "$W/exit"
  rm -f "$W/running" ;;
start2)
  env_txt; rm -rf "$W/final" "$W/exit" "$W/cases"; touch "$W/running"
  setsid bash "$0" pipeline2 < /dev/null > "$W/pipeline.log" 2>&1 &
  wait_main 520 ;;
pipeline2)
  DECODE_BENCH_PROFILE=gpu DECODE_BENCH_EXAMPLES=6 timeout 900 python3 -m pytest conformance -q -n 8 \
    -p no:cacheprovider -W ignore::DeprecationWarning -k "not tilelang" > "$W/conformance.log" 2>&1
  echo "conformance exit $?" >> "$W/exit"
  DECODE_BENCH_PROFILE=gpu DECODE_BENCH_EXAMPLES=6 PYTHONPATH=/tmp/site-tilelang:$PYTHONPATH timeout 600 \
    python3 -m pytest conformance -q -n 8 -p no:cacheprovider -W ignore::DeprecationWarning -k tilelang \
    > "$W/conformance-tilelang.log" 2>&1
  echo "conformance tilelang exit $?" >> "$W/exit"
  { python3 -m harness run --backends triton,flash_attn3 --variants split-k --no-timing --save-cases "$W/cases" \
      --problem '{"num_q_heads": 32, "num_kv_heads": 8, "head_dim": 128, "seq_lens": [1048576], "layout": "paged"}' \
      --out "$W/cases-run" && python3 -m harness replay "$W/cases"; } > "$W/replay.log" 2>&1
  echo "save and replay exit $?" >> "$W/exit"
  python3 -m harness run --workloads sched,serving --timing cold --out "$W/final" > "$W/final.log" 2>&1
  echo "final exit $?" >> "$W/exit"
  rm -f "$W/running" ;;
wait) wait_main "${2:-540}"; pack ;;
*) echo "phase: tl1 DIR | tl2 DIR | w1 DIR | w4 DIR | start | start2 | wait [SECONDS]" >&2; exit 2 ;;
esac
