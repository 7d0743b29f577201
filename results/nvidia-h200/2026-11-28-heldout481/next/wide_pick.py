"""The first LIMIT held-out problems of seeds [FIRST, LAST) at q_len 8 whose Triton one-pass
config is a 128-row program on two warpgroups (BLOCK_H 128, 8 warps) with a 16-bit cache (the
wide drafts the conditional rescale is for), on the CPU (60 MB of L2, an H200's), as JSON:
    PYTHONPATH=. python wide_pick.py OUT.json FIRST LAST LIMIT"""
import json
import sys

import impls  # noqa: F401  (first: CPU modes before any DSL import)
from impls.triton._common import pick_launch_config
from specs import workloads

limit = int(sys.argv[4])
chosen = []
for seed in range(int(sys.argv[2]), int(sys.argv[3])):
    for i, problem in enumerate(workloads.heldout_problems(seed)):
        if min(problem.seq_lens) < 8 or problem.kv_dtype is not None or len(chosen) >= limit:
            continue
        p = problem.replace(q_len=8)
        try:
            config = pick_launch_config(p, l2_bytes=60 << 20)
        except Exception:  # a problem the rule refuses
            continue
        if config["BLOCK_H"] == 128 and config["num_warps"] == 8:
            print(f"{seed}.{i} {p.label()[:70]}")
            chosen.append(p.to_dict())
with open(sys.argv[1], "w") as f:
    json.dump(chosen, f)
print(len(chosen))
