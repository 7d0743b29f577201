#!/usr/bin/env bash
# Issue 33's judging run on one GPU (started by scripts/device_run.sh start THIS; $W: its folder):
#   1. the conformance suite (its draws include fp8 caches, e4m3 and e5m2, per tensor and per
#      head, and a pinned fp8 case) on every DSL backend and on FlashInfer
#   2. grid + ragged in bf16 and in fp8 (the 'fp8' workload: e4m3, a scale per tensor, what
#      FlashInfer takes), --quick, every backend but FA3 and FA4 (they read no fp8 cache: their
#      declared reasons); each run under its own time limit (SIGINT: tables written, the run
#      marked incomplete)
#   3. the quick cells again with an fp16 query (fp8 -> fp16 is one instruction on sm_90)
#   4. ncu of Gluon's and CuPy's fp8 and bf16 split kernels on one bandwidth-bound cell
#   5. the whole grid + ragged + fp8 for Triton, Gluon, CuPy and FlashInfer, in what time is left
set -u
cd "$(dirname "$0")/../../.."
VENDORS=flashinfer,torch-cudnn,torch-fa2
run() {  # name, seconds, harness options
  local name=$1 limit=$2; shift 2
  local start=$SECONDS
  timeout -s INT "$limit" python3 -m harness run "$@" --timing cold --no-tuning-cache --out "$W/$name" > "$W/$name.log" 2>&1
  echo "$name rc $? in $((SECONDS - start)) s"; tail -2 "$W/$name.log"
}
for b in triton gluon cupy numba tilelang helion flashinfer; do
  start=$SECONDS
  DECODE_BENCH_PROFILE=gpu DECODE_BENCH_EXAMPLES=3 timeout 75 python3 -m pytest conformance -q \
    -p no:cacheprovider -k "$b" -W ignore::DeprecationWarning > "$W/conformance-$b.log" 2>&1
  echo "conformance $b rc $? in $((SECONDS - start)) s"; tail -1 "$W/conformance-$b.log"
done
run quick 240 --workloads grid,ragged,fp8 --quick --backends $VENDORS,gluon,triton,cupy
run fp16 150 --workloads grid,fp8 --quick --dtype float16 --backends flashinfer,gluon,triton,cupy
run numba 120 --workloads grid,ragged,fp8 --quick --backends numba
run tile 240 --workloads grid,ragged,fp8 --quick --backends tilelang,helion
P='{"name": "llama3-8b", "num_q_heads": 32, "num_kv_heads": 8, "head_dim": 128, "layout": "paged", "page_size": 16, "seq_lens": ['"$(python3 -c 'print(", ".join(["2048"] * 64))')"']}'
for b in gluon cupy; do for kv in none float8_e4m3fn; do
  timeout 50 ncu --kernel-name regex:"split_kernel|split_k" --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis \
    --section WarpStateStats --section SchedulerStats --section InstructionStats \
    python3 -m harness run --backends $b --variants split-k --problem "$P" --kv-dtype $kv --no-timing \
    --out "$W/ncu-$b-$kv-run" > "$W/ncu-$b-$kv.txt" 2>&1; echo "ncu $b $kv rc $?"
done; done
run full 900 --workloads grid,ragged,fp8 --backends flashinfer,gluon,triton,cupy
echo "pipeline done"
