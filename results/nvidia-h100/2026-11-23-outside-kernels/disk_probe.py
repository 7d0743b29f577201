"""Saving cost against the disk: the seconds a run spent saving cases (its rows' save_s) and the
seconds plain writes of the same bytes take in /tmp; with --d2h, the pageable device-to-host
copy rate too. Usage: python3 disk_probe.py RUN_DIR [--d2h]"""
import json
import sys
import time

import numpy as np

rows = [json.loads(line) for line in open(sys.argv[1] + "/rows.jsonl")]
saved = [r for r in rows if "saved_bytes" in r]
total, save_s = sum(r["saved_bytes"] for r in saved), sum(r["save_s"] for r in saved)
buf = np.random.default_rng(0).integers(0, 255, 256 << 20, dtype=np.uint8)
start, left, n = time.perf_counter(), total, 0
while left > 0:
    with open(f"/tmp/probe{n}.bin", "wb") as f:
        f.write(memoryview(buf)[:min(left, buf.nbytes)])
    left -= buf.nbytes
    n += 1
probe_s = time.perf_counter() - start
line = (f"saved {total/1e9:.2f} GB in {save_s:.1f} s ({total/1e9/save_s:.2f} GB/s, D2H copies included); "
        f"plain writes of the same bytes {probe_s:.1f} s ({total/1e9/probe_s:.2f} GB/s); ratio {save_s/probe_s:.2f}x")
if "--d2h" in sys.argv:
    import torch
    x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    x.cpu()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(4):
        x.cpu()
    line += f"; pageable D2H {4 * x.nbytes / (time.perf_counter() - t) / 1e9:.1f} GB/s"
print(line)
