#!/usr/bin/env bash
# Triton's declared search space on the four wide drafts furthest behind FA3 (wide-drafts/ratios.txt):
# does any config of it close the gap, or is it the kernel's design? split-K only (the fastest
# variant on these), --tune: the rows carry the rule's time and the best found (tuning_rule_us,
# tuning_best_us, tuning_trace).
cd "$(dirname "$0")/.."
RUNS="tune4|290|--workload-file gpu-session/worst4.json --backends triton --variants split-k --tune --timing cold" \
  W=$W bash scripts/gpu_pipeline.sh
echo "tune4 done"
