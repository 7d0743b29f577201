"""Which held-out problems a launch-rule change re-configures: Triton's and CuPy's one-pass and
split-K configs (pure, no GPU: 132 SMs) of every problem of seeds FIRST..LAST under the code in
this tree, written to OUT; with BEFORE (a file this wrote under the old code) the problems whose
configs differ, in seed order, as the A/B's problem files would take them.
    PYTHONPATH=. python results/nvidia-h100/2026-11-28-short-bytes/session/changed.py OUT FIRST LAST [BEFORE]
How the A/Bs here chose theirs: run it at e8aa51c, then at the new commit with the first file as
BEFORE; the first 24 problems listed, 6 a lane."""

import json
import sys

from impls.cupy import _build as cupy_rules
from impls.triton import _common as triton_rules
from specs import workloads


def configs(problem) -> dict:
    row = {}
    for split in (False, True):
        for name, pick in (("triton", lambda: triton_rules.pick_launch_config(problem, sms=132, split=split)),
                           ("cupy", lambda: cupy_rules.pick_launch_config(problem, num_sms=132, split=split))):
            try:
                c = pick()
                row[f"{name}{'-split' if split else ''}"] = {k: c.get(k) for k in (
                    "BLOCK_N", "num_stages", "NUM_WARPS", "STAGES")}
            except Exception as e:  # unsupported or refused: the same under both codes, or a change
                row[f"{name}{'-split' if split else ''}"] = type(e).__name__
    return row


out, first, last = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
now = {f"{s}.{i}": configs(p) for s in range(first, last + 1)
       for i, p in enumerate(workloads.heldout_problems(s))}
json.dump(now, open(out, "w"))
if len(sys.argv) > 4:
    before = json.load(open(sys.argv[4]))
    for key, row in now.items():
        if before.get(key) != row:
            print(key, {k: (before[key][k], v) for k, v in row.items() if before[key][k] != v})
