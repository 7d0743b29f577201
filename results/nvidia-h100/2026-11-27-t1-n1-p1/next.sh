#!/usr/bin/env bash
# The registered next runs (../README.md, section 3), on a 4-GPU machine with the vendor wheels
# and Ray installed (scripts/device_run.sh copy/install phases; wheels.sh fa3 fa4 flashinfer helion,
# ray, tilelang). From the repository root, here:
#   bash scripts/gpu_ab.sh old 16aa0bd          # T1's old code (lanes 0-1)
#   git show hyp/numba-balanced-rows:impls/numba/_launch.py > /tmp/n1.py   # N1, lane 2 (below)
#   mkdir -p gpu-session && cp results/nvidia-h200/2026-11-27-triton-combine-rows/next/next.sh gpu-session/
#   cp /tmp/n1.py gpu-session/n1_launch.py
#   DECODE_BENCH_COMMIT=$(git rev-parse HEAD) OUT=$OUT bash scripts/device_run.sh start gpu-session/next.sh 550   # then `wait` calls
set -u
cd "$(dirname "$0")/.."
lane() {  # GPU, name, seconds a side, options: T1, both orders
  ( export CUDA_VISIBLE_DEVICES=$1 ORDERS=2
    RUNS="$2|$3|$4" W=$W/$2 bash scripts/gpu_ab.sh run ) > "$W/lane-$2.log" 2>&1 &
}
lane 0 t1-models 80 "--workloads models --quick --backends triton --variants split-k"
lane 1 t1-held 80 "--workloads heldout:112 --backends triton --variants split-k"
( export CUDA_VISIBLE_DEVICES=2  # N1: main's Numba, the branch's (from a copy), main's again
  opts="--workloads heldout:112,heldout:105,heldout:106 --backends numba --variants split-k"
  n1=$(mktemp -d) && cp -r impls specs harness scripts conformance pyproject.toml "$n1"/ &&
    cp gpu-session/n1_launch.py "$n1"/impls/numba/_launch.py
  run() { (cd "$2" && DECODE_BENCH_COMMIT=$3 timeout -s INT 90 python3 -m harness run $opts --timing cold \
             --no-tuning-cache --out "$W/n1-$1" > "$W/n1-$1.log" 2>&1); }
  run main1 . "${DECODE_BENCH_COMMIT:-}"; run n1 "$n1" 14bc783; run main2 . "${DECODE_BENCH_COMMIT:-}"
  python3 -m harness compare "$W/n1-main1" "$W/n1-n1" --again "$W/n1-main2" "$W/n1-n1" > "$W/compare-n1.txt" 2>&1 ) &
( export CUDA_VISIBLE_DEVICES=3  # P1: 112.4 with two programs an SM, by config first
  p=$(python3 -c "import json; from specs import workloads as w
print(json.dumps(w.heldout_problems(112)[4].to_dict(), separators=(',', ':')))")
  run() { timeout -s INT 60 python3 -m harness run --problem "$p" --timing cold --no-tuning-cache \
            --out "$W/p1-$1" "${@:2}" > "$W/p1-$1.log" 2>&1; }
  run rules --backends triton,gluon,torch-cudnn
  run bn64 --backends triton,gluon --variants split-k --config '{"block_n":64}'
  run bn64-2sm --backends triton,gluon --variants split-k --config '{"block_n":64,"min_blocks":2}' ) &
wait
tail -n 3 "$W"/t1-*/compare-*.txt "$W"/compare-n1.txt
RUNS="held114|${HELD_S:-400}|--workloads heldout:114 --gpus 4" W=$W bash scripts/gpu_pipeline.sh
[ -f "$W/held114/rows.jsonl" ] && python3 scripts/vendor_ratios.py --below 0.9 "$W/held114" 2>&1 | head -30
echo "next done"
