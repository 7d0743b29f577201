"""The held-out problems of the given seeds whose CuPy split-K config the sharing rule
(``impls.cupy._build.alone_sharers``) changes, the rule against itself with sharing off, on the
CPU (132 SMs, the occupancy estimate of ``resident_ctas``); writes them to OUT.json:
    PYTHONPATH=. python share_pick.py OUT.json SEED [SEED ...]"""
import json
import sys

import numpy as np

from impls import plan as planner
from impls.cupy import _build
from impls.cupy.split_k import shortest_item
from specs.workloads import heldout_problems

SMS = 132
RULE = _build.alone_sharers


def split_ring(p):
    d = _build.pick_launch_config(p, None, split=True)
    if not d["TENSOR_CORES"]:
        return None
    blocks = _build.num_head_blocks(p, d)
    head_blocks = p.num_kv_heads * blocks
    step = 16 * (d["NUM_WARPS"] // (d["BLOCK_H"] // 16))
    shortest = shortest_item(np.asarray(p.seq_lens), step, head_blocks, SMS)
    plan = planner.plan(p.seq_lens, p.num_kv_heads, SMS * _build.resident_ctas(d) // blocks, step,
                        shortest=shortest)
    sharers = _build.alone_sharers(p, plan.num_items * head_blocks, p.batch * head_blocks, SMS,
                                   d["BLOCK_H"], split=True)
    if sharers > 1:
        d = _build.pick_launch_config(p, None, split=True, sharers=sharers)
    return d["NUM_WARPS"], d["STAGES"]


chosen = []
for seed in sys.argv[2:]:
    for i, p in enumerate(heldout_problems(int(seed))):
        try:
            _build.alone_sharers = RULE
            new = split_ring(p)
            _build.alone_sharers = lambda *args, **kwargs: 1
            old = split_ring(p)
        except Exception:  # a problem no loop takes
            continue
        if new != old:
            print(f"{seed}.{i} {p.label()[:62]:62s} old {old} new {new}")
            chosen.append(p.to_dict())
_build.alone_sharers = RULE
with open(sys.argv[1], "w") as f:
    json.dump(chosen, f)
print(len(chosen))
