#!/usr/bin/env bash
# The second machine of issue 32's judging run (scripts/device_run.sh start THIS): what the first
# (pipeline.sh) did not reach or got wrong, on the same workloads:
#   1. conformance of TileLang's split-K (its launcher raised on every cell in the first run; fixed)
#   2. the vendor kernels the first machine's time limits cut (FlashInfer, torch's cuDNN and FA2)
#   3. TileLang and Helion, each under its own limit
#   4. --tune for Gluon and CuPy on models (quick), then models again with that cache
#   5. CuPy's worst cells of the first run, tuned one by one (which knob closes the gap)
set -u
cd "$(dirname "$0")/../../.."
export DECODE_BENCH_TUNING_CACHE="$W/tuning.json"
run() {  # name, seconds, harness options
  local name=$1 limit=$2; shift 2
  local start=$SECONDS
  timeout -s INT "$limit" python3 -m harness run "$@" --timing cold --out "$W/$name" > "$W/$name.log" 2>&1
  echo "$name rc $? in $((SECONDS - start)) s"; tail -2 "$W/$name.log"
}
DECODE_BENCH_PROFILE=gpu DECODE_BENCH_EXAMPLES=4 PYTHONPATH=/tmp/site-tilelang:$PYTHONPATH timeout 90 \
  python3 -m pytest conformance/test_properties.py -q -p no:cacheprovider -k "tilelang and split" \
  -W ignore::DeprecationWarning > "$W/conformance-tilelang.log" 2>&1
echo "conformance tilelang rc $?"; tail -1 "$W/conformance-tilelang.log"
VENDORS2=flashinfer,torch-cudnn,torch-fa2
run heldout2-vendors 150 --workloads heldout:2 --backends $VENDORS2 --no-tuning-cache
run models-vendors 200 --workloads models --quick --backends $VENDORS2 --no-tuning-cache
run heldout2-tilelang 140 --workloads heldout:2 --backends tilelang --no-tuning-cache
run heldout2-helion 140 --workloads heldout:2 --backends helion --no-tuning-cache
run models-tilelang 140 --workloads models --quick --backends tilelang --no-tuning-cache
run models-helion 140 --workloads models --quick --backends helion --no-tuning-cache
run models-tune 120 --workloads models --quick --backends gluon,cupy --tune
run models-cache 90 --workloads models --quick --backends gluon,cupy
for P in '{"name": "heldout2.17", "num_q_heads": 18, "num_kv_heads": 2, "head_dim": 160, "seq_lens": [2372]}' \
         '{"name": "heldout2.13", "num_q_heads": 8, "num_kv_heads": 1, "head_dim": 176, "seq_lens": [1522, 1522]}' \
         '{"name": "llama3-70b-tp8", "num_q_heads": 8, "num_kv_heads": 1, "head_dim": 128, "seq_lens": [32768], "layout": "paged", "page_size": 16}'; do
  n=$(python3 -c "import json, sys; print(json.loads(sys.argv[1])['name'])" "$P")
  run "cupy-tune-$n" 60 --backends cupy,flash_attn3 --variants split-k --problem "$P" --tune --no-tuning-cache
done
echo "pipeline done"
