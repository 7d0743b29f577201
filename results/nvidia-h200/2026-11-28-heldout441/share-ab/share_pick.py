# problems of the given seeds whose CuPy config the sharing rule changes (one-pass or split-K)
import sys, json
import numpy as np
from impls.cupy import _build
from impls.cupy.split_k import shortest_item
from impls import plan as planner
from specs.workloads import heldout_problems
real = _build.alone_sharers
def configs(p):
    one = _build.pick_launch_config(p)
    d = _build.pick_launch_config(p, None, split=True)
    s = 1
    if d["TENSOR_CORES"]:
        hb = p.num_kv_heads * _build.num_head_blocks(p, d)
        step = 16 * (d["NUM_WARPS"] // (d["BLOCK_H"] // 16))
        sh = shortest_item(np.asarray(p.seq_lens), step, hb, 132)
        pl = planner.plan(p.seq_lens, p.num_kv_heads, 132 * _build.resident_ctas(d) // _build.num_head_blocks(p, d), step, shortest=sh)
        s = _build.alone_sharers(p, pl.num_items * hb, p.batch * hb, 132, d["BLOCK_H"], split=True)
        if s > 1: d = _build.pick_launch_config(p, None, split=True, sharers=s)
    return (one.get("NUM_WARPS"), one.get("STAGES")), (d.get("NUM_WARPS"), d.get("STAGES"))
out = []
for arg in sys.argv[2:]:
    for i, p in enumerate(heldout_problems(int(arg))):
        try:
            _build.alone_sharers = real; new = configs(p)
            _build.alone_sharers = lambda *a, **k: 1; old = configs(p)
        except Exception:
            continue
        if new != old:
            print(f"{arg}.{i} {p.label()[:62]:62s} old {old} new {new}")
            out.append(p.to_dict())
json.dump(out, open(sys.argv[1], "w"))
print(len(out))
