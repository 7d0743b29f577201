"""The Triton rule's launch config of every held-out problem of seeds 0-99 at q_len 1, 2, 4 and 8
with 50 and 60 MB of L2, as JSON (run from a tree's root, once in each of two trees, then diff):
    TRITON_INTERPRET=0 PYTHONPATH=. python3 results/nvidia-h100/2026-11-27-wide-rows/configs.py OUT.json"""
import json
import sys

import impls  # noqa: F401  (first: CPU modes before any DSL import)
from impls.triton._common import pick_launch_config
from specs import workloads

out = {}
for seed in range(100):
    for i, problem in enumerate(workloads.heldout_problems(seed)):
        for q_len in (1, 2, 4, 8):
            if min(problem.seq_lens) < q_len:
                continue
            p = problem.replace(q_len=q_len)
            for l2 in (50 << 20, 60 << 20):
                try:
                    config = pick_launch_config(p, l2_bytes=l2)
                except Exception as e:  # a problem the rule refuses: its reason
                    config = str(e)
                out[f"{seed}.{i}.q{q_len}.{l2}"] = (config, p.head_dim, p.q_len * p.group_size)
json.dump(out, open(sys.argv[1], "w"), default=str)
