set -uo pipefail
export PYTHONUNBUFFERED=1 DECODE_BENCH_COMMIT=$C
mkdir -p $OUT
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; python3 -c "import torch,triton,cupy,numba_cuda,numpy;print('torch',torch.__version__,'triton',triton.__version__,'cupy',cupy.__version__,'numba-cuda',numba_cuda.__version__,'numpy',numpy.__version__)"; python3 -c "import tqdm; print('tqdm', tqdm.__version__)"; df -h /tmp | tail -1; } > $OUT/env.txt 2>&1
s=$(date +%s); DECODE_BENCH_PROFILE=gpu DECODE_BENCH_PLUGINS=tests.plugin_out_only timeout 240 python3 -m pytest conformance -q -p no:cacheprovider -k "timed_calls or plugin-out-only" -W ignore::DeprecationWarning > $OUT/conformance.log 2>&1; echo "conformance rc $? in $(( $(date +%s) - s )) s" | tee -a $OUT/conformance.log
s=$(date +%s); timeout 270 python3 -m harness run --workloads grid --backends triton,cupy,torch-cudnn,torch-fa2 --timing cold,graph --save-cases /tmp/cases --out $OUT/grid > $OUT/grid.log 2>&1; echo "grid rc $? in $(( $(date +%s) - s )) s"
s=$(date +%s); timeout 120 python3 -m harness replay /tmp/cases > $OUT/replay.log 2>&1; echo "replay rc $? in $(( $(date +%s) - s )) s" | tee -a $OUT/replay.log
python3 - <<'PY' > $OUT/disk.txt 2>&1
import json, os, time, numpy as np
rows = [json.loads(l) for l in open(os.environ["OUT"] + "/grid/rows.jsonl")]
saved = [r for r in rows if "saved_bytes" in r]
total, save_s = sum(r["saved_bytes"] for r in saved), sum(r["save_s"] for r in saved)
buf = np.random.default_rng(0).integers(0, 255, 256 << 20, dtype=np.uint8)
start = time.perf_counter(); left = total; n = 0
while left > 0:
    with open(f"/tmp/probe{n}.bin", "wb") as f:
        f.write(memoryview(buf)[:min(left, buf.nbytes)])
    left -= buf.nbytes; n += 1
probe_s = time.perf_counter() - start
print(f"saved {total/1e9:.2f} GB in {save_s:.1f} s ({total/1e9/save_s:.2f} GB/s, D2H copies included); "
      f"plain writes of the same bytes {probe_s:.1f} s ({total/1e9/probe_s:.2f} GB/s); ratio {save_s/probe_s:.2f}x")
PY
tail -4 $OUT/conformance.log; grep -E "passed|failed|xfail" $OUT/conformance.log | tail -3
grep -E "FAIL|ERROR" $OUT/grid.log | head -5; tail -3 $OUT/grid.log; tail -2 $OUT/replay.log; cat $OUT/disk.txt; cat $OUT/env.txt
