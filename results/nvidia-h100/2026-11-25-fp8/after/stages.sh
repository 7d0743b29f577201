set -u
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
start=$SECONDS
PYTHONPATH=/tmp/site-tilelang:. DECODE_BENCH_PROFILE=gpu DECODE_BENCH_EXAMPLES=4 timeout 300 python3 -m pytest conformance -q \
  -p no:cacheprovider -k tilelang -W ignore::DeprecationWarning > $OUT/conformance-tilelang.log 2>&1
echo "conformance tilelang rc $? in $((SECONDS - start)) s"; tail -1 $OUT/conformance-tilelang.log
L='"num_q_heads": 32, "num_kv_heads": 8, "head_dim": 128, "name": "llama3-8b", "layout": "paged"'
S=$(python3 -c 'print(", ".join(["4096"] * 128))')
for kv in none float8_e4m3fn; do
  for cfg in '{}' '{"num_stages": 2}' '{"num_stages": 3}' '{"num_stages": 4}' '{"num_warps": 8}'; do
    timeout 60 python3 -m harness run --backends triton --variants split-k --problem "{$L, \"seq_lens\": [$S]}" --kv-dtype $kv \
      --config "$cfg" --timing cold --no-tuning-cache --overwrite --out $OUT/t-$kv > $OUT/t.log 2>&1
    echo "$kv $cfg: $(grep -E '^llama3-8b' $OUT/t.log | head -1 | cut -c1-160)"
  done
done
