#!/usr/bin/env bash
# Gluon on the warpgroup MMA: the GPU test, then the knob against the default on held-out drafts
# (seed 40, 8 tokens a sequence), FA3 beside, then conformance's every-config property for gluon
set -u
unset DECODE_BENCH_ENV_TILELANG
start=$SECONDS
timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_split_merges.py -k "warpgroup or gluon" > $W/test-split-merges.log 2>&1
rc=$?
echo "test_split_merges rc $rc in $((SECONDS - start)) s: $(tail -1 $W/test-split-merges.log)"
if [ $rc -ne 0 ]; then grep -E "FAILED|Error|assert" $W/test-split-merges.log | head -30; exit 1; fi
RUNS='def40|170|--workloads heldout:40 --q-len 8 --backends gluon,flash_attn3;
wg40|150|--workloads heldout:40 --q-len 8 --backends gluon --config {"wgmma":1}' W=$W bash scripts/gpu_pipeline.sh
python3 scripts/best_variant.py $W/def40 $W/wg40 gluon > $W/best-def40-wg40.txt 2>&1; tail -30 $W/best-def40-wg40.txt | cut -c1-200
CONFORMANCE="gluon:200" PROPS="every_config" W=$W bash scripts/gpu_pipeline.sh
