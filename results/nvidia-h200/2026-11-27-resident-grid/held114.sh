#!/usr/bin/env bash
# Session 62, 4 GPUs, vendor wheels + Ray + TileLang installed: every backend and vendor on the
# unseen seed 114 (--gpus 4), then Nsight Compute on its large-KV cells and on issue 34's worst
# draft (heldout81.17 at q_len 8) beside FA3.
set -u
cd "$(dirname "$0")/.."
RUNS="held114|${HELD_S:-420}|--workloads heldout:114 --gpus 4" W=$W bash scripts/gpu_pipeline.sh > "$W/held-lane.log" 2>&1
[ -f "$W/held114/rows.jsonl" ] && python3 scripts/vendor_ratios.py --below 0.9 "$W/held114" > "$W/held114-ratios.txt" 2>&1
mkdir -p "$W/ncu"
prof() {  # GPU, impl, seed, index, q_len
  local p; p=$(python3 -c "import json; from specs import workloads as w
print(json.dumps(w.heldout_problems($3)[$4].replace(q_len=$5).to_dict(), separators=(',', ':')))")
  CUDA_VISIBLE_DEVICES=$1 timeout 150 python3 -m harness profile "$2" --problem "$p" --calls 1 --ncu \
    > "$W/ncu/ncu-${2//\//-}-heldout$3.$4-q$5.txt" 2>&1
}
( prof 0 triton/split-k 114 13 1; prof 0 gluon/split-k 114 13 1 ) &
( prof 1 triton/split-k 114 2 1; prof 1 cupy/split-k 114 2 1 ) &
( prof 2 triton/split-k 81 17 8; prof 2 flash_attn3/split-k 81 17 8 ) &
( prof 3 gluon/split-k 114 2 1; prof 3 flash_attn3/split-k 114 13 1 ) &
wait
cat "$W/held114-ratios.txt" 2>/dev/null | head -60
for f in "$W"/ncu/ncu-*.txt; do echo "== ${f##*/}"; grep -E "^  [a-zA-Z_].*\(|^\s+(Duration|DRAM Throughput|Compute \(SM\) Throughput|Registers Per Thread|Achieved Occupancy|Grid Size|Block Size)" "$f" | head -24; done 2>/dev/null | head -150
echo "final done"
