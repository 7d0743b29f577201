set -uo pipefail
export PYTHONUNBUFFERED=1 DECODE_BENCH_COMMIT=$C
mkdir -p $OUT
s=$(date +%s); timeout 200 python3 -m harness run --workloads grid --backends cupy,torch-cudnn --no-timing --save-cases /tmp/cases --out $OUT/save > $OUT/save.log 2>&1; echo "save run rc $? in $(( $(date +%s) - s )) s"
s=$(date +%s); timeout 120 python3 -m harness replay /tmp/cases > $OUT/replay.log 2>&1; echo "replay rc $? in $(( $(date +%s) - s )) s" | tee -a $OUT/replay.log
du -sb /tmp/cases | tee -a $OUT/replay.log
python3 - <<'PY' > $OUT/disk.txt 2>&1
import json, os, time, numpy as np, torch
rows = [json.loads(l) for l in open(os.environ["OUT"] + "/save/rows.jsonl")]
saved = [r for r in rows if "saved_bytes" in r]
total, save_s = sum(r["saved_bytes"] for r in saved), sum(r["save_s"] for r in saved)
buf = np.random.default_rng(0).integers(0, 255, 256 << 20, dtype=np.uint8)
start = time.perf_counter(); left = total; n = 0
while left > 0:
    with open(f"/tmp/probe{n}.bin", "wb") as f:
        f.write(memoryview(buf)[:min(left, buf.nbytes)])
    left -= buf.nbytes; n += 1
probe_s = time.perf_counter() - start
x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda"); x.cpu(); torch.cuda.synchronize()
t = time.perf_counter(); [x.cpu() for _ in range(4)]; d2h = 4 * x.nbytes / (time.perf_counter() - t) / 1e9
print(f"saved {total/1e9:.2f} GB in {save_s:.1f} s ({total/1e9/save_s:.2f} GB/s, D2H copies included); "
      f"plain writes of the same bytes {probe_s:.1f} s ({total/1e9/probe_s:.2f} GB/s); ratio {save_s/probe_s:.2f}x; "
      f"pageable D2H {d2h:.1f} GB/s")
PY
grep -E "FAIL|ERROR" $OUT/save.log | head -5; tail -3 $OUT/save.log; tail -3 $OUT/replay.log; cat $OUT/disk.txt
