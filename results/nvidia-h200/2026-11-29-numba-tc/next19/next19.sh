#!/usr/bin/env bash
# Registered run (../README.md, "next19"): Numba's tensor-core kernel with its loads in batches of
# up to 8 at every head dim (not the gcd with 8: 2 at head dim 112), the rule's tensor cores
# against config tensor_cores=0 on 10 unseen problems (h3201.json, seeds 3201-3202) and again on
# next18's two sets. One GPU, no wheel. From the repository root:
#   git checkout hyp/numba-tc
#   mkdir -p gpu-session && cp results/nvidia-h200/2026-11-29-numba-tc/next19/* gpu-session/
#   bash scripts/light_tree.sh on
#   DECODE_BENCH_COMMIT=$(git rev-parse HEAD) OUT=$OUT bash scripts/device_run.sh start gpu-session/next19.sh 540
#   OUT=$OUT bash scripts/device_run.sh wait 540     (if it has not printed 'next19 done')
set -u
cd "$(dirname "$0")/.."
timeout 120 python3 -m pytest tests/test_numba_tc.py -q -p no:cacheprovider > "$W/tc-tests.log" 2>&1
tail -n 1 "$W/tc-tests.log"
RUNS="f-tc|100|--workload-file gpu-session/h3201.json --backends numba;
      f-cc|100|--workload-file gpu-session/h3201.json --backends numba --config {\"tensor_cores\":0};
      h-tc|80|--workload-file gpu-session/h3200tc.json --backends numba;
      h-cc|80|--workload-file gpu-session/h3200tc.json --backends numba --config {\"tensor_cores\":0};
      p-tc|80|--workload-file gpu-session/tcq.json --backends numba;
      p-cc|80|--workload-file gpu-session/tcq.json --backends numba --config {\"tensor_cores\":0}" \
  W=$W/runs bash scripts/gpu_pipeline.sh > "$W/runs.log" 2>&1
grep -E " rc |PASS" "$W/runs.log"
for f in f h p; do
  python3 -m harness compare "$W/runs/$f-cc" "$W/runs/$f-tc" > "$W/compare-$f.txt" 2>&1
  sed -n '/^implementation/,/^summary/p' "$W/compare-$f.txt" | cut -c1-150
done
echo "next19 done"
