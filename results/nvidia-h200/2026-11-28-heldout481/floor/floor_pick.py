"""The held-out problems of seeds [FIRST, LAST) whose CuPy split-K plan the floor of branch
hyp/cupy-floor (``impls.cupy.split_k.shortest_item``) changes against main's (one step only
where a step's items would leave half the SMs idle), on the CPU (132 SMs, the occupancy
estimate ``resident_ctas``); the first LIMIT go to OUT.json. Run on the branch:
    PYTHONPATH=. python floor_pick.py OUT.json FIRST LAST [LIMIT]
(The third form's floor, on hyp/cupy-floor3 and main since, also takes the head dim.)"""
import inspect
import json
import sys

import numpy as np

from impls import plan as planner
from impls.cupy import _build
from impls.cupy.split_k import shortest_item
from specs.workloads import heldout_problems

SMS = 132


def main_floor(lens, step, ctas_per_item, num_sms, head_dim=None):
    items = int((-(-lens // step)).sum())
    return step if 2 * items * ctas_per_item <= num_sms else planner.MIN_CHUNK


def split_plan(p, floor):
    d = _build.pick_launch_config(p, None, split=True)
    if not d["TENSOR_CORES"]:
        return None
    blocks = _build.num_head_blocks(p, d)
    head_blocks = p.num_kv_heads * blocks
    step = 16 * (d["NUM_WARPS"] // (d["BLOCK_H"] // 16))
    takes_dims = "head_dim" in inspect.signature(floor).parameters
    shortest = floor(np.asarray(p.seq_lens), step, head_blocks, SMS,
                     *((p.head_dim,) if takes_dims else ()))
    plan = planner.plan(p.seq_lens, p.num_kv_heads, SMS * _build.resident_ctas(d) // blocks, step,
                        shortest=shortest)
    return plan.chunk, plan.num_items, plan.num_items * head_blocks


limit = int(sys.argv[4]) if len(sys.argv) > 4 else 12
chosen = []
for seed in range(int(sys.argv[2]), int(sys.argv[3])):
    for i, p in enumerate(heldout_problems(seed)):
        try:
            old, new = split_plan(p, main_floor), split_plan(p, shortest_item)
        except Exception:  # a problem no loop takes
            continue
        if old != new and len(chosen) < limit:
            print(f"{seed}.{i} {p.label()[:60]:60s} (chunk, items, CTAs) {old} -> {new}")
            chosen.append(p.to_dict())
with open(sys.argv[1], "w") as f:
    json.dump(chosen, f)
print(len(chosen))
