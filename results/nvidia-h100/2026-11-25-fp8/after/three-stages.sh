set -u
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
timeout 300 python3 -m harness run --backends triton --workloads grid,fp8 --variants paged,split-k --timing cold --no-tuning-cache --out $OUT/tri > $OUT/tri.log 2>&1
echo "tri rc $?"; tail -1 $OUT/tri.log
# a head-dim-64 paged batch of many programs (bf16): the new rule's 3 stages against the old 2
P='{"name": "llama3.2-1b", "num_q_heads": 32, "num_kv_heads": 8, "head_dim": 64, "layout": "paged", "page_size": 16, "seq_lens": ['"$(python3 -c 'print(", ".join(["4096"] * 128))')"']}'
for cfg in '{}' '{"num_stages": 2}'; do
  timeout 60 python3 -m harness run --backends triton --variants split-k --problem "$P" --config "$cfg" --timing cold --no-tuning-cache --overwrite --out $OUT/d64 > $OUT/d64.log 2>&1
  echo "d64 $cfg: $(grep -E '^llama3.2-1b' $OUT/d64.log | head -1 | cut -c1-130)"
done
