#!/usr/bin/env bash
# one-pass row order (branch one-pass-row-order, gpu-session/new) against main (this tree), Triton
# and Gluon at q_len 8 on held-out seeds 86, 46, 50; FA3 beside; Triton's wide-warps rule off (nw)
set -u
unset DECODE_BENCH_ENV_TILELANG
NEW=f0414bc47d4493f0dfdd95acb9761b309727dab3
OLD=970878271d1b3794a6ba54baacf6247041263080
( cd gpu-session/new && DECODE_BENCH_COMMIT=$NEW RUNS='n86|260|--workloads heldout:86 --q-len 8 --backends gluon,triton,flash_attn3;
n46|260|--workloads heldout:46 --q-len 8 --backends gluon,triton,flash_attn3;
n50|260|--workloads heldout:50 --q-len 8 --backends gluon,triton,flash_attn3' W=$W bash scripts/gpu_pipeline.sh )
DECODE_BENCH_COMMIT=$OLD RUNS='o86|200|--workloads heldout:86 --q-len 8 --backends gluon,triton;
o46|200|--workloads heldout:46 --q-len 8 --backends gluon,triton;
o50|200|--workloads heldout:50 --q-len 8 --backends gluon,triton' W=$W bash scripts/gpu_pipeline.sh
( cd gpu-session/nw && DECODE_BENCH_COMMIT="$NEW+wide-rule-off" RUNS='w86|150|--workloads heldout:86 --q-len 8 --backends triton;
w50|150|--workloads heldout:50 --q-len 8 --backends triton' W=$W bash scripts/gpu_pipeline.sh )
for s in 86 46 50; do
  for b in gluon triton; do
    python3 scripts/best_variant.py $W/o$s $W/n$s $b > $W/best-$b-o$s-n$s.txt 2>&1; echo "$b $s: $(tail -1 $W/best-$b-o$s-n$s.txt)"
  done
  python3 scripts/vendor_ratios.py $W/n$s > $W/fa3-n$s.txt 2>&1; python3 scripts/vendor_ratios.py $W/n$s $W/o$s > $W/fa3-o$s.txt 2>&1
  sed -n 2,4p $W/fa3-n$s.txt; sed -n 3,4p $W/fa3-o$s.txt
done
for s in 86 50; do
  python3 scripts/best_variant.py $W/n$s $W/w$s triton > $W/best-triton-n$s-w$s.txt 2>&1; echo "wide off $s: $(tail -1 $W/best-triton-n$s-w$s.txt)"
done
( cd gpu-session/new && CONF_S=170 PROPS="q_len or query or row" CONFORMANCE="gluon triton" W=$W bash scripts/gpu_pipeline.sh )
