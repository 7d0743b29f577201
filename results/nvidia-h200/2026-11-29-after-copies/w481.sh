#!/usr/bin/env bash
# heldout:481's worst DSL rows (23, 20, 8: CuPy; 16: Triton; 15: Gluon) after CuPy's copy lanes
# landed: the DSL kernels beside FA3, FA2 and cuDNN (no FA4/FlashInfer wheels in this call).
# From the repository root at main c384c2c, with FA3's wheel packed into .gpu-wheels/1 (one folder):
#   mkdir -p gpu-session && cp results/nvidia-h200/2026-11-29-after-copies/w481.* gpu-session/
#   bash scripts/light_tree.sh on      (device call, carry .gpu-wheels/1:)
#   OUT=$OUT bash scripts/device_run.sh install .gpu-wheels/1 &&
#   DECODE_BENCH_COMMIT=$(git rev-parse HEAD) OUT=$OUT bash scripts/device_run.sh start gpu-session/w481.sh 440
set -u
cd "$(dirname "$0")/.."
RUNS="w481|420|--workload-file gpu-session/w481.json --backends cupy,triton,gluon,flash_attn3,torch-fa2,torch-cudnn" \
  W=$W bash scripts/gpu_pipeline.sh > "$W/w481-pipeline.log" 2>&1
tail -5 "$W/w481-pipeline.log"
python3 scripts/vendor_ratios.py "$W/w481" 2>&1 | head -40
echo "w481 done"
