"""One problem of a workload file, one implementation, launched three times (compile, warm,
profiled), for Nsight Compute:
    ncu -k regex:decode_kernel --launch-skip 2 --launch-count 1 \
        python3 ncu_cell.py triton/paged sweep.json 9 ['{"num_stages": 3}']
(implementation, workload file, index of the problem in it, optional launch config as JSON).
Run from a project root (this tree, or the code before the change in .old/) with PYTHONPATH=."""
import json
import sys

import impls  # noqa: F401
import torch
from impls import registry
from specs import workloads
from specs.inputs import make_inputs

name, path, index = sys.argv[1], sys.argv[2], int(sys.argv[3])
config = json.loads(sys.argv[4]) if len(sys.argv) > 4 else None
problem = workloads.load_file(path)[index]
inputs = make_inputs(problem, 0)
out, lse = inputs.new_outputs()
launch = registry.get(name).prepare(inputs, out, lse, **({"config": config} if config else {}))
print(problem.label(), name, launch.config, flush=True)
for _ in range(3):
    launch.run()
torch.cuda.synchronize()
