#!/usr/bin/env bash
# register cap (min_blocks rule) against none (min_blocks 0), Triton and Gluon, held-out seeds 63
# and 67 at q_len 1, then 63 at q_len 8; then the conformance subset on the rule's kernels
set -u
unset DECODE_BENCH_ENV_TILELANG
export DECODE_BENCH_COMMIT=924edb4966a2fd0e9ef12a7416ea99415e0505a9
OFF='--config {"min_blocks":0}'
RUNS="off63|260|--workloads heldout:63 --backends gluon,triton $OFF;
on63|200|--workloads heldout:63 --backends gluon,triton;
off67|200|--workloads heldout:67 --backends gluon,triton $OFF;
on67|200|--workloads heldout:67 --backends gluon,triton;
off63q8|200|--workloads heldout:63 --q-len 8 --backends gluon,triton $OFF;
on63q8|200|--workloads heldout:63 --q-len 8 --backends gluon,triton" W=$W bash scripts/gpu_pipeline.sh
for s in 63 67 63q8; do for b in gluon triton; do
  python3 scripts/best_variant.py $W/off$s $W/on$s $b > $W/best-$b-$s.txt 2>&1; echo "$b $s: $(tail -1 $W/best-$b-$s.txt)"
done; done
CONF_S=200 PROPS="matches_reference or every_config or query_tokens" CONFORMANCE="gluon triton" W=$W bash scripts/gpu_pipeline.sh
