#!/usr/bin/env bash
# Gluon's WGMMA rule (more rows a KV head than 16, 16-bit, K/V >= 4 MiB) against mma_v2 on
# held-out drafts no rule saw (seed 86 at 8 tokens, seed 36 at 4), FA3 beside; the GPU tests and
# conformance for gluon after the shared-memory refusal
set -u
unset DECODE_BENCH_ENV_TILELANG
RUNS='r86q8|170|--workloads heldout:86 --q-len 8 --backends gluon,flash_attn3;
v2-86q8|150|--workloads heldout:86 --q-len 8 --backends gluon --config {"wgmma":0};
r36q4|170|--workloads heldout:36 --q-len 4 --backends gluon,flash_attn3;
v2-36q4|150|--workloads heldout:36 --q-len 4 --backends gluon --config {"wgmma":0}' W=$W bash scripts/gpu_pipeline.sh
for p in "r86q8 v2-86q8" "r36q4 v2-36q4"; do set -- $p
  python3 scripts/best_variant.py $W/$2 $W/$1 gluon > $W/best-$2-$1.txt 2>&1; tail -1 $W/best-$2-$1.txt
  python3 scripts/vendor_ratios.py $W/$1 > $W/fa3-$1.txt 2>&1; python3 scripts/vendor_ratios.py $W/$1 $W/$2 > $W/fa3-$2.txt 2>&1
  sed -n 3p $W/fa3-$1.txt; sed -n 3p $W/fa3-$2.txt
done
start=$SECONDS
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_split_merges.py -k "warpgroup or gluon" > $W/test-split-merges.log 2>&1
echo "test_split_merges rc $? in $((SECONDS - start)) s: $(tail -1 $W/test-split-merges.log)"
CONFORMANCE="gluon:330" W=$W bash scripts/gpu_pipeline.sh
