#!/usr/bin/env bash
# Registered run (../README.md): Triton's paged kernels on a shared ring (config block_n 32,
# num_stages 2: several programs an SM, as Gluon's rule has them) against its rule's wide ring
# (block_n 64, 3 stages: one program an SM at head dims >= 160), on heldout:481.16 and 12 unseen
# paged problems of pages <= 16 tokens (seeds 3500-3513). One GPU, no wheel, about 9 minutes.
# From the repository root (main):
#   mkdir -p gpu-session && cp results/nvidia-h200/2026-11-29-triton-share/next/* gpu-session/
#   bash scripts/light_tree.sh on
#   DECODE_BENCH_COMMIT=$(git rev-parse HEAD) OUT=$OUT bash scripts/device_run.sh start gpu-session/next21.sh 540
#   OUT=$OUT bash scripts/device_run.sh wait 540     (if it has not printed 'next21 done')
set -u
cd "$(dirname "$0")/.."
RUNS="rule|240|--workload-file gpu-session/tsp.json --backends triton,gluon;
      share|200|--workload-file gpu-session/tsp.json --backends triton --config {\"block_n\":32,\"num_stages\":2}" \
  W=$W/runs bash scripts/gpu_pipeline.sh > "$W/runs.log" 2>&1
grep -E " rc |PASS" "$W/runs.log"
python3 -m harness compare "$W/runs/rule" "$W/runs/share" > "$W/compare.txt" 2>&1
sed -n '/^implementation/,/^summary/p' "$W/compare.txt" | grep -v gluon | cut -c1-150
python3 scripts/best_variant.py "$W/runs/rule" "$W/runs/share" triton > "$W/best-variant.txt" 2>&1
tail -n 20 "$W/best-variant.txt"
echo "next21 done"
