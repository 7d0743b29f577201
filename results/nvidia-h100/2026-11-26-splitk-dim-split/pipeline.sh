# issue 32/34: Triton split-K, the dim-split rule against one padded tile, seeds 17 and 61 (q_len 1)
set -u
unset DECODE_BENCH_ENV_TILELANG
RUNS='r17|120|--workloads heldout:17 --backends triton --variants split-k;
s0-17|120|--workloads heldout:17 --backends triton --variants split-k --config {"dim_split":0};
r61|120|--workloads heldout:61 --backends triton --variants split-k;
s0-61|120|--workloads heldout:61 --backends triton --variants split-k --config {"dim_split":0}' W=$W bash scripts/gpu_pipeline.sh
for s in 17 61; do python3 -m harness compare $W/s0-$s $W/r$s > $W/compare-s0-$s-r$s.txt 2>&1; grep -E "^summary|^verdicts" $W/compare-s0-$s-r$s.txt; done
