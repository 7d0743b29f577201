#!/usr/bin/env bash
# Triton's first fp8-cache run on a GPU (issue 33): the conformance suite on Triton (its draws
# include fp8 caches), then Triton's bf16 and fp8 (e4m3, per-head scales) on three
# bandwidth-bound Llama-3-8B problems, cold L2.   bash run.sh OUT
set -uo pipefail
OUT=$1; mkdir -p "$OUT"; cd "$(dirname "$0")/../../.."
export PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } > "$OUT/env.txt"
DECODE_BENCH_PROFILE=gpu DECODE_BENCH_EXAMPLES=4 timeout 150 python3 -m pytest conformance/test_properties.py \
  -q -p no:cacheprovider -k triton -W ignore::DeprecationWarning > "$OUT/conformance.log" 2>&1
echo "conformance rc $?"; tail -1 "$OUT/conformance.log"
L='"num_q_heads": 32, "num_kv_heads": 8, "head_dim": 128, "name": "llama3-8b"'
i=0
for P in "{$L, \"seq_lens\": [16384, 16384, 16384, 16384, 16384, 16384, 16384, 16384, 16384, 16384, 16384, 16384, 16384, 16384, 16384, 16384]}" \
         "{$L, \"seq_lens\": [16384, 16384, 16384, 16384, 16384, 16384, 16384, 16384, 16384, 16384, 16384, 16384, 16384, 16384, 16384, 16384], \"layout\": \"paged\"}" \
         "{$L, \"seq_lens\": [131072], \"layout\": \"paged\"}"; do
  i=$((i + 1))
  for kv in none float8_e4m3fn; do
    timeout 100 python3 -m harness run --backends triton --problem "$P" --kv-dtype $kv --kv-scale head \
      --timing cold --out "$OUT/p$i-$kv" > "$OUT/p$i-$kv.log" 2>&1
    echo "p$i $kv rc $?"; grep -E "^llama3-8b" "$OUT/p$i-$kv.log" | head -4
  done
done
