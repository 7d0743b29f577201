#!/usr/bin/env bash
# Gluon: 128-row WGMMA programs (8 warps) by rule where a KV head has > 64 rows, against the
# previous commit's two 64-row programs (gpu-session/old), FA3 beside; seeds 86 and 46 at q_len 8
set -u
unset DECODE_BENCH_ENV_TILELANG
RUNS='n86|170|--workloads heldout:86 --q-len 8 --backends gluon,flash_attn3;
n46|170|--workloads heldout:46 --q-len 8 --backends gluon,flash_attn3' W=$W bash scripts/gpu_pipeline.sh
( cd gpu-session/old && DECODE_BENCH_COMMIT=fc0e55597e2ca58c9487954bdc20c7db55110db2 RUNS='o86|150|--workloads heldout:86 --q-len 8 --backends gluon;
o46|150|--workloads heldout:46 --q-len 8 --backends gluon' W=$W bash scripts/gpu_pipeline.sh )
for s in 86 46; do
  python3 scripts/best_variant.py $W/o$s $W/n$s gluon > $W/best-o$s-n$s.txt 2>&1; tail -1 $W/best-o$s-n$s.txt
  python3 scripts/vendor_ratios.py $W/n$s > $W/fa3-n$s.txt 2>&1; python3 scripts/vendor_ratios.py $W/n$s $W/o$s > $W/fa3-o$s.txt 2>&1
  sed -n 3p $W/fa3-n$s.txt; sed -n 3p $W/fa3-o$s.txt
done
start=$SECONDS
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_split_merges.py -k "warpgroup or gluon" > $W/test-split-merges.log 2>&1
echo "test_split_merges rc $? in $((SECONDS - start)) s: $(tail -1 $W/test-split-merges.log)"
