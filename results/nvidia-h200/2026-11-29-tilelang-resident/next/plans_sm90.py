"""For each problem of workload files: the blocks an SM TileLang's split kernel holds, compiled for
sm_90a on the CPU (impls.tilelang._common.compiled_residency), and the split plan's items for one
block an SM (main) and for that many (the branch), on 132 SMs. From the repository root:
    PYTHONPATH=. python results/nvidia-h200/2026-11-29-tilelang-resident/next/plans_sm90.py FILE.json ...
"""
import math
import sys

import impls  # noqa: F401  (first: CPU modes before any DSL import)
from impls import plan as planner
from impls.tilelang import split_k
from impls.tilelang._common import compile_key, compiled_residency, pick_launch_config, resources
from specs import workloads

SMS = 132  # an H200's

for path in sys.argv[1:]:
    for p in workloads.load_file(path):
        cfg = pick_launch_config(p)
        key = compile_key(cfg)
        regs, smem, threads = resources(split_k.split_kernel, key, "sm_90a")
        held = compiled_residency(split_k.split_kernel, key, planner.SmLimits(), "sm_90a")
        granule = math.lcm(cfg["BLOCK_N"], p.page_size) if p.layout == "paged" else cfg["BLOCK_N"]
        items = [planner.plan(p.seq_lens, p.num_kv_heads, SMS * r, granule).num_items
                 for r in (1, held)]
        print(f"{p.label()}: {cfg['GATHER']} BLOCK_N {cfg['BLOCK_N']} stages {cfg['num_stages']} "
              f"threads {threads} registers {regs} shared {smem} blocks an SM {held} "
              f"items {items[0]} -> {items[1]}", flush=True)
