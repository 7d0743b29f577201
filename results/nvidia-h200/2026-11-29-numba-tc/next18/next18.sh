#!/usr/bin/env bash
# Registered run (../README.md, "next18"): Numba's tensor-core kernel with the paged row lookup
# once a token and the rule turning it on wherever it takes the problem (branch hyp/numba-tc):
# its GPU tests, the paged A/B again (tcq.json, rule against config tensor_cores=0), and an
# unseen seed (heldout:3200, all 24 shapes) with FA3, FA2 and cuDNN, the tensor-core problems of
# it A/B'd too. One GPU, FA3's wheel packed into .gpu-wheels/1. From the repository root:
#   git checkout hyp/numba-tc
#   mkdir -p gpu-session && cp results/nvidia-h200/2026-11-29-numba-tc/next18/* gpu-session/
#   bash scripts/light_tree.sh on      (device call, carry .gpu-wheels/1:)
#   OUT=$OUT bash scripts/device_run.sh install .gpu-wheels/1 &&
#   DECODE_BENCH_COMMIT=$(git rev-parse HEAD) OUT=$OUT bash scripts/device_run.sh start gpu-session/next18.sh 540
#   OUT=$OUT bash scripts/device_run.sh wait 540     (if it has not printed 'next18 done')
set -u
cd "$(dirname "$0")/.."
timeout 120 python3 -m pytest tests/test_numba_tc.py -q -p no:cacheprovider > "$W/tc-tests.log" 2>&1
tail -n 1 "$W/tc-tests.log"
RUNS="p-tc|120|--workload-file gpu-session/tcq.json --backends numba;
      p-cc|120|--workload-file gpu-session/tcq.json --backends numba --config {\"tensor_cores\":0};
      h-rule|300|--workloads heldout:3200 --backends numba,flash_attn3,torch-fa2,torch-cudnn;
      h-cc|120|--workload-file gpu-session/h3200tc.json --backends numba --config {\"tensor_cores\":0}" \
  W=$W/runs bash scripts/gpu_pipeline.sh > "$W/runs.log" 2>&1
grep -E " rc |PASS" "$W/runs.log"
python3 -m harness compare "$W/runs/p-cc" "$W/runs/p-tc" > "$W/compare-p.txt" 2>&1
python3 -m harness compare "$W/runs/h-cc" "$W/runs/h-rule" > "$W/compare-h.txt" 2>&1
for f in p h; do sed -n '/^implementation/,/^summary/p' "$W/compare-$f.txt" | cut -c1-150; done
python3 scripts/vendor_ratios.py "$W/runs/h-rule" > "$W/ratios-h.txt" 2>&1
head -n 40 "$W/ratios-h.txt"
# the same with the CUDA-core rows in place of the tensor-core ones (a later folder's row replaces)
python3 scripts/vendor_ratios.py "$W/runs/h-rule" "$W/runs/h-cc" > "$W/ratios-h-cc.txt" 2>&1
head -n 20 "$W/ratios-h-cc.txt"
echo "next18 done"
