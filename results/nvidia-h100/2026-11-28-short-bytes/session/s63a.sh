#!/usr/bin/env bash
# Session 63, call A: the registered all-backend seed-114 run (next.sh's held114 lane), then four
# lanes at once: next.sh's ncu cells; ncu of the single-sequence models cells (b1 x 32k) and of
# 114.6; a CuPy ring probe on 114.6; a split-count probe on the b1 cells.
set -u
cd "$(dirname "$0")/.."
RUNS="held114|${HELD_S:-420}|--workloads heldout:114 --gpus 4" W=$W bash scripts/gpu_pipeline.sh > "$W/held-lane.log" 2>&1
[ -f "$W/held114/rows.jsonl" ] && python3 scripts/vendor_ratios.py --below 0.9 "$W/held114" > "$W/held114-ratios.txt" 2>&1
( export CUDA_VISIBLE_DEVICES=0
  NCU="triton/dense:heldout:131:10 triton/dense:heldout:131:10:{\"block_n\":64} gluon/dense:heldout:149:14" \
    W=$W/ncu bash scripts/gpu_pipeline.sh ) > "$W/lane0.log" 2>&1 &
( export CUDA_VISIBLE_DEVICES=1
  NCU="triton/split-k:llama3-70b-tp8:1:32768:dense gluon/split-k:llama3-70b-tp8:1:32768:dense cupy/split-k:llama3-70b-tp8:1:32768:dense torch-cudnn/dense:llama3-70b-tp8:1:32768:dense" \
    W=$W/ncu-b1 bash scripts/gpu_pipeline.sh ) > "$W/lane1.log" 2>&1 &
( export CUDA_VISIBLE_DEVICES=2
  F="--workload-file gpu-session/h114_6.json"
  RUNS="c-default|60|$F --backends cupy,triton,flash_attn4 --variants split-k,dense;
        c-w2s2|40|$F --backends cupy --variants split-k --config {\"num_warps\":2,\"num_stages\":2};
        c-w2s3|40|$F --backends cupy --variants split-k --config {\"num_warps\":2,\"num_stages\":3};
        c-w4s2|40|$F --backends cupy --variants split-k --config {\"num_warps\":4,\"num_stages\":2};
        c-w2s4|40|$F --backends cupy --variants split-k --config {\"num_warps\":2,\"num_stages\":4}" \
  NCU="cupy/split-k:heldout:114:6 triton/split-k:heldout:114:6" \
    W=$W/c114 bash scripts/gpu_pipeline.sh ) > "$W/lane2.log" 2>&1 &
( export CUDA_VISIBLE_DEVICES=3
  F="--workload-file gpu-session/b1.json --backends triton,gluon,cupy --variants split-k"
  RUNS="b1-default|70|--workload-file gpu-session/b1.json --backends triton,gluon,cupy,torch-cudnn --variants split-k,dense;
        b1-s32|45|$F --num-splits 32; b1-s66|45|$F --num-splits 66; b1-s132|45|$F --num-splits 132;
        b1-s264|45|$F --num-splits 264; b1-again|45|$F" \
    W=$W/b1 bash scripts/gpu_pipeline.sh ) > "$W/lane3.log" 2>&1 &
wait
head -14 "$W/held114-ratios.txt" 2>/dev/null
for d in b1 c114; do for f in "$W"/$d/*/results.md; do echo "== $f"; grep -E "split-k|dense" "$f" | head -12; done; done 2>/dev/null | cut -c1-160
echo "s63a done"
