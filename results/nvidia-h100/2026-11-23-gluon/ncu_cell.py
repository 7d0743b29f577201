"""One cell's split-K launch, three times (compile, warm, profiled), for Nsight Compute:
    ncu -k regex:split_kernel --launch-skip 2 --launch-count 1 python3 ncu_cell.py gluon paged 1 8192
"""
import sys

import impls  # noqa: F401
import torch
from impls import registry
from specs import workloads
from specs.inputs import make_inputs

backend, layout, batch, seq = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
problem = workloads.model_problem("llama3-8b", [seq] * batch, layout)
inputs = make_inputs(problem, 0)
out, lse = inputs.new_outputs()
launch = registry.get(f"{backend}/split-k").prepare(inputs, out, lse)
print(problem.label(), launch.config)
for _ in range(3):
    launch.run()
torch.cuda.synchronize()
