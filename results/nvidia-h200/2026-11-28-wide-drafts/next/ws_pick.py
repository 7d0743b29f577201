"""The first LIMIT held-out problems of seeds [FIRST, LAST) at q_len 8 whose Gluon one-pass config
is the warp-specialized kernel (WARP_SPEC 1: more than 64 rows a KV head past 128 dims, 16-bit,
K/V beyond L2, and sequences x KV heads filling an H200's 132 SMs, as the one-pass launcher
asks), on the CPU (60 MB of L2, an H200's), as JSON (branch hyp/gluon-ws-wide):
    PYTHONPATH=. python ws_pick.py OUT.json FIRST LAST LIMIT"""
import json
import sys

import impls  # noqa: F401  (first: CPU modes before any DSL import)
from impls.gluon._common import pick_launch_config
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
        if config["WARP_SPEC"] and p.batch * p.num_kv_heads >= 132:
            print(f"{seed}.{i} {p.label()[:70]}")
            chosen.append(p.to_dict())
with open(sys.argv[1], "w") as f:
    json.dump(chosen, f)
print(len(chosen))
