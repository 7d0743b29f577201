#!/usr/bin/env bash
# second machine: q_len 8 on seed 63, cap against none, then the conformance subset
set -u
unset DECODE_BENCH_ENV_TILELANG
export DECODE_BENCH_COMMIT=924edb4966a2fd0e9ef12a7416ea99415e0505a9
OFF='--config {"min_blocks":0}'
RUNS="off63q8|220|--workloads heldout:63 --q-len 8 --backends gluon,triton $OFF;
on63q8|200|--workloads heldout:63 --q-len 8 --backends gluon,triton" W=$W bash scripts/gpu_pipeline.sh
for b in gluon triton; do
  python3 scripts/best_variant.py $W/off63q8 $W/on63q8 $b > $W/best-$b-63q8.txt 2>&1; echo "$b 63q8: $(tail -1 $W/best-$b-63q8.txt)"
done
CONF_S=200 PROPS="matches_reference or every_config or query_tokens" CONFORMANCE="gluon triton" W=$W bash scripts/gpu_pipeline.sh
