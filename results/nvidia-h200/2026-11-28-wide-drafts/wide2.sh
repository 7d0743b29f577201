#!/usr/bin/env bash
# Gluon, CuPy and the vendor kernels on the same drafts (run right after prof.sh, same machine)
cd "$(dirname "$0")/.."
RUNS="wide2|220|--workload-file gpu-session/wide.json --backends gluon,cupy,flash_attn3,flashinfer" W=$W bash scripts/gpu_pipeline.sh
echo "wide2 done"
