#!/usr/bin/env bash
# Session 61 probe, 4 GPUs, no vendor wheels: ncu of the seed-112 worst cells, the tuner's best
# config on them (is it the launch rule or the kernel?), Gluon grid rule vs tma 0, new GPU tests.
set -u
cd "$(dirname "$0")/.."
P=$(python3 -c "import json; from specs import workloads as w
ps = w.heldout_problems(112)
print(' '.join(\"--problem '\" + json.dumps(ps[i].to_dict()).replace(' ', '') + \"'\" for i in (0, 4, 17, 21)))")
( export CUDA_VISIBLE_DEVICES=0
  NCU="triton/split-k:heldout:112:4 gluon/split-k:heldout:112:4 torch-cudnn/dense:heldout:112:4 cupy/split-k:heldout:112:4" \
    W=$W/ncu bash scripts/gpu_pipeline.sh ) > "$W/ncu-0.log" 2>&1 &
( export CUDA_VISIBLE_DEVICES=1
  NCU="cupy/split-k:heldout:112:21 cupy/dense:heldout:112:21 gluon/dense:heldout:112:21 cupy/split-k:heldout:112:0 triton/paged:heldout:112:0" \
    W=$W/ncu bash scripts/gpu_pipeline.sh ) > "$W/ncu-1.log" 2>&1 &
( export CUDA_VISIBLE_DEVICES=2
  RUNS="grid-rule|170|--workloads grid --quick --backends gluon --variants dense; grid-tma0|170|--workloads grid --quick --backends gluon --variants dense --config {\"tma\":0}" \
    W=$W bash scripts/gpu_pipeline.sh ) > "$W/grid-lane.log" 2>&1 &
( export CUDA_VISIBLE_DEVICES=3
  DECODE_BENCH_PROFILE=gpu timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_split_merges.py \
    -k "sharing_a_row or cut_along" > "$W/gpu-tests.log" 2>&1
  eval "timeout -s INT 330 python3 -m harness run $P --backends triton,gluon,cupy --tune --timing cold --out $W/tune112" > "$W/tune112.log" 2>&1 ) &
wait
tail -n 3 "$W/gpu-tests.log"
for f in "$W"/ncu/ncu-*.txt; do echo "== $f"; grep -E "^\s+(Duration|DRAM Throughput|Memory Throughput|Registers Per|Achieved Occupancy|Grid Size|Block Size)|^  [a-z_].*\(" "$f" | head -40; done 2>/dev/null | head -150
python3 -m harness compare "$W/grid-tma0" "$W/grid-rule" 2>&1 | tail -12
python3 - "$W/tune112" <<'PY'
import json, sys, pathlib
for line in pathlib.Path(sys.argv[1], "rows.jsonl").read_text().splitlines():
    r = json.loads(line)
    if r.get("status") == "PASS":
        print(r["problem"][:13], r["impl"], r.get("median_us"), json.dumps(r.get("config")))
PY
echo "probe done"
