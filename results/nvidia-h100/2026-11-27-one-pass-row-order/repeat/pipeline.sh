#!/usr/bin/env bash
# repeat of ab.sh's one-pass rows, main and branch alternating (o, n, o2, n2): which moves repeat
set -u
unset DECODE_BENCH_ENV_TILELANG
NEW=f0414bc47d4493f0dfdd95acb9761b309727dab3
OLD=970878271d1b3794a6ba54baacf6247041263080
for round in 1 2; do
  DECODE_BENCH_COMMIT=$OLD RUNS="o86r$round|110|--workloads heldout:86 --q-len 8 --backends gluon,triton --variants dense,paged;
o46r$round|110|--workloads heldout:46 --q-len 8 --backends gluon,triton --variants dense,paged" W=$W bash scripts/gpu_pipeline.sh
  ( cd gpu-session/new && DECODE_BENCH_COMMIT=$NEW RUNS="n86r$round|110|--workloads heldout:86 --q-len 8 --backends gluon,triton --variants dense,paged;
n46r$round|110|--workloads heldout:46 --q-len 8 --backends gluon,triton --variants dense,paged" W=$W bash scripts/gpu_pipeline.sh )
done
