#!/usr/bin/env bash
# Gluon's head dim in two tiles: the GPU test, conformance, and the rule against one padded tile
# on held-out seeds no rule saw (73 at one query token, 77 at q_len 4)
set -u
unset DECODE_BENCH_ENV_TILELANG
start=$SECONDS
timeout 240 python3 -m pytest -q -p no:cacheprovider tests/test_split_merges.py -k "gluon or triton_head_dim" > $W/test-split-merges.log 2>&1
echo "test_split_merges rc $? in $((SECONDS - start)) s: $(tail -1 $W/test-split-merges.log)"
CONFORMANCE="gluon:300" W=$W bash scripts/gpu_pipeline.sh
RUNS='r73|170|--workloads heldout:73 --backends gluon,triton,flash_attn3;
s0-73|110|--workloads heldout:73 --backends gluon --config {"dim_split":0};
r77q4|130|--workloads heldout:77 --q-len 4 --backends gluon,flash_attn3;
s0-77q4|110|--workloads heldout:77 --q-len 4 --backends gluon --config {"dim_split":0}' W=$W bash scripts/gpu_pipeline.sh
for p in "r73 s0-73" "r77q4 s0-77q4"; do set -- $p; python3 -m harness compare $W/$2 $W/$1 > $W/compare-$1-$2.txt 2>&1; tail -3 $W/compare-$1-$2.txt | cut -c1-300; done
# second call (seed 77 at q_len 4 stopped before a launch: a sequence of 2 tokens)
#!/usr/bin/env bash
# Gluon's dim-split rule against one padded tile, held-out seed 77 at q_len 2 (its shortest sequence: 2 tokens)
set -u
unset DECODE_BENCH_ENV_TILELANG
RUNS='r77q2|150|--workloads heldout:77 --q-len 2 --backends gluon,flash_attn3;
s0-77q2|100|--workloads heldout:77 --q-len 2 --backends gluon --config {"dim_split":0}' W=$W bash scripts/gpu_pipeline.sh
python3 -m harness compare $W/s0-77q2 $W/r77q2 > $W/compare-r77q2-s0-77q2.txt 2>&1; tail -3 $W/compare-r77q2-s0-77q2.txt | cut -c1-300
