"""The held-out problems of the given seeds whose Triton split-K config the sharing rule of
``impls.triton.split_k.prepare`` changes, on the CPU: residency by the rule's own shared-memory
estimate (``pick_launch_config``'s: one stage less than its count, registers unknown), 132 SMs.
The launcher decides on the compiled kernel's residency, so a GPU can differ. Writes them to
OUT.json:
    TRITON_INTERPRET=0 PYTHONPATH=. python triton_share_pick.py OUT.json SEED [SEED ...]"""
import json
import math
import sys

from impls import plan as planner
from impls.common import query_args
from impls.triton._common import MIN_BLOCK_H, NUM_WARPS, SHARED_MIN_DIMS, pick_launch_config
from specs.workloads import heldout_problems

SMS = 132
TYPICAL_REGS = 168  # registers a thread of these kernels, about (ptxas for sm_90: 150-200)


def held(p, cfg):
    dims = cfg["D_LO"] + cfg["D_HI"]
    ring = (cfg["num_stages"] - 1) * cfg["BLOCK_N"] * 2 * p.kv_itemsize * dims + \
        cfg["BLOCK_H"] * p.itemsize * dims
    return planner.residency(TYPICAL_REGS, ring, cfg["num_warps"])


def items(p, cfg, resident, row_blocks):
    granule = math.lcm(cfg["BLOCK_N"], p.page_size) if cfg["PAGE_SIZE"] and p.layout == "paged" \
        else cfg["BLOCK_N"]
    return planner.plan(p.seq_lens, p.num_kv_heads, max(1, SMS * resident // row_blocks),
                        granule).num_items


def change(p):
    cfg = pick_launch_config(p, None, sms=SMS, split=True)
    row_blocks = query_args(p, cfg["BLOCK_H"])["row_blocks"]
    heads = p.num_kv_heads * row_blocks
    resident = held(p, cfg)
    if resident != 1 or cfg["num_warps"] != NUM_WARPS or cfg["BLOCK_H"] != MIN_BLOCK_H \
            or p.kv_itemsize != 2 or p.q_len != 1 or cfg["D_LO"] + cfg["D_HI"] <= SHARED_MIN_DIMS \
            or items(p, cfg, 1, row_blocks) * heads <= SMS:
        return None
    shared = pick_launch_config(p, None, sms=SMS, split=True, shared=True)
    if shared == cfg:
        return None
    shared_held = held(p, shared)
    if shared_held > 1 and planner.shared_tail_free(p, p.batch * heads, SMS, shared_held, split=True):
        return (cfg["BLOCK_N"], cfg["num_stages"]), (shared["BLOCK_N"], shared["num_stages"], shared_held)
    return None


chosen = []
for seed in sys.argv[2:]:
    for i, p in enumerate(heldout_problems(int(seed))):
        try:
            moved = change(p)
        except Exception:  # a problem no config takes
            continue
        if moved:
            print(f"{seed}.{i} {p.label()[:62]:62s} {moved[0]} -> {moved[1]}")
            chosen.append(p.to_dict())
with open(sys.argv[1], "w") as f:
    json.dump(chosen, f)
print(len(chosen))
