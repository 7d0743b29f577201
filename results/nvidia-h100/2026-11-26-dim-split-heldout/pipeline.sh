# Triton's dim-split rule against one padded tile on held-out seeds no rule saw (17 q1, 58 q8)
set -u
unset DECODE_BENCH_ENV_TILELANG
RUNS='r17|110|--workloads heldout:17 --backends triton,flash_attn3;
s0-17|70|--workloads heldout:17 --backends triton --config {"dim_split":0};
r58q8|70|--workloads heldout:58 --q-len 8 --backends triton;
s0-58q8|70|--workloads heldout:58 --q-len 8 --backends triton --config {"dim_split":0}' W=$W bash scripts/gpu_pipeline.sh
for p in "r17 s0-17" "r58q8 s0-58q8"; do set -- $p; python3 -m harness compare $W/$2 $W/$1 > $W/compare-$1-$2.txt 2>&1; tail -3 $W/compare-$1-$2.txt | cut -c1-300; done
