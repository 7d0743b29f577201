#!/usr/bin/env bash
# Issue 18's GPU runs (TileLang and Helion beside the other backends), one phase per device call:
#   checks: each DSL's conformance suite (gpu profile) and TileLang's build tests, on the GPU;
#   look:   a first timing of the two new DSLs beside Triton and CuPy on grid and ragged (cold L2);
#   start / finish: in the background (setsid, it outlives the call): the committed run, every
#           backend on grid and ragged, cold L2 (a fresh machine: empty JIT caches), then TileLang's
#           suite again and --tune on three problems; finish waits for it and packs $OUT.
# Wheels: Helion and the vendor kernels installed into /tmp/site, TileLang into a folder of its own
# (TARGET=/tmp/site-tilelang), which DECODE_BENCH_ENV_TILELANG names for the harness.
#     DECODE_BENCH_COMMIT=<sha> OUT=<folder> bash results/nvidia-h100/2026-11-24-tile-dsls/run.sh PHASE
set -uo pipefail
W=/root/final  # survives between the calls (same machine)
mkdir -p "$W"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
export PYTHONPATH=.:/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages
export DECODE_BENCH_ENV_TILELANG=/tmp/site-tilelang
TL="env PYTHONPATH=/tmp/site-tilelang:$PYTHONPATH"  # the suite runs where it starts: TileLang first
P='"num_q_heads": 32, "num_kv_heads": 8, "head_dim": 128, "dtype": "bfloat16"'  # Llama-3-8B
lens() { python3 -c "import sys; print(', '.join([sys.argv[2]] * int(sys.argv[1])))" "$1" "$2"; }
wait_main() {  # until the background job ends or $1 seconds pass
  local end=$((SECONDS + $1))
  while [ -e "$W/running" ] && [ $SECONDS -lt $end ]; do sleep 5; done
  tail -c 600 "$W/main.log"; echo; [ -e "$W/running" ] && echo "still running"; cat "$W/main.exit" 2>/dev/null
}
env_txt() {
  { nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    python3 -c "import torch, triton; print('torch', torch.__version__, 'cudnn', torch.backends.cudnn.version(), 'triton', triton.__version__)"
    python3 -c "import helion, importlib.metadata as m; print('helion', m.version('helion'))"
    $TL python3 -c "import tilelang, tvm_ffi; print('tilelang', tilelang.__version__, 'tvm_ffi', tvm_ffi.__version__)"
    pip list 2>/dev/null | grep -iE "^(cupy|numba|flash|nvidia-cutlass-dsl|apache-tvm)" || true
    echo "commit ${DECODE_BENCH_COMMIT:-unset}"; } > "$W/env.txt" 2>&1
  cat "$W/env.txt"
}
case "${1:-}" in
checks)
  env_txt
  $TL timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_tilelang.py > "$W/tilelang-tests.log" 2>&1
  echo "tilelang build tests exit $?"
  DECODE_BENCH_PROFILE=gpu $TL timeout 400 python3 -m pytest conformance -q -n 8 -p no:cacheprovider \
    -W ignore::DeprecationWarning -k tilelang > "$W/conformance-tilelang.log" 2>&1
  echo "tilelang conformance exit $?"
  DECODE_BENCH_PROFILE=gpu timeout 400 python3 -m pytest conformance -q -n 8 -p no:cacheprovider \
    -W ignore::DeprecationWarning -k helion > "$W/conformance-helion.log" 2>&1
  echo "helion conformance exit $?"
  tar -C "$W" -czf "$OUT/checks.tgz" env.txt tilelang-tests.log conformance-tilelang.log conformance-helion.log ;;
look)
  python3 -m harness run --backends tilelang,helion,triton,cupy --workloads grid,ragged --timing cold \
    --out "$W/look" --overwrite > "$W/look.log" 2>&1
  echo "look exit $?"
  tar -C "$W" -czf "$OUT/look.tgz" look look.log ;;
start)  # main run, then TileLang's suite, then --tune on three problems: one background job
  env_txt; rm -rf "$W/main" "$W/tune" "$W/main.exit"; touch "$W/running"
  setsid bash "$0" pipeline < /dev/null > "$W/pipeline.log" 2>&1 &
  wait_main 540 ;;
pipeline)
  python3 -m harness run --workloads grid,ragged --timing cold --out "$W/main" > "$W/main.log" 2>&1
  echo "main exit $?" > "$W/main.exit"
  DECODE_BENCH_PROFILE=gpu DECODE_BENCH_EXAMPLES=6 $TL timeout 400 python3 -m pytest conformance -q -n 8 \
    -p no:cacheprovider -W ignore::DeprecationWarning -k tilelang > "$W/conformance-tilelang.log" 2>&1
  echo "tilelang conformance exit $?" >> "$W/main.exit"
  python3 -m harness run --backends tilelang,helion --tune --timing cold \
    --problem "{$P, \"seq_lens\": [8192], \"layout\": \"dense\"}" \
    --problem "{$P, \"seq_lens\": [$(lens 16 4096)], \"layout\": \"paged\", \"page_size\": 16}" \
    --problem "{$P, \"seq_lens\": [$(lens 64 2048)], \"layout\": \"dense\"}" \
    --out "$W/tune" > "$W/tune.log" 2>&1
  echo "tune exit $?" >> "$W/main.exit"
  rm -f "$W/running" ;;
finish)  # waits (at most the call's time), then packs what there is
  wait_main 540
  tar -C "$W" -czf "$OUT/final.tgz" --ignore-failed-read main main.log main.exit env.txt \
    conformance-tilelang.log tune tune.log pipeline.log ;;
*) echo "phase: checks | look | start | finish" >&2; exit 2 ;;
esac
