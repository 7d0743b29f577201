"""One cell's launch of a variant, three times (compile, warm, profiled), for Nsight Compute:
    ncu -k regex:decode_kernel --launch-skip 2 --launch-count 1 \
        python3 ncu_cell.py gluon dense dense 64 8192 '{"DENSE_TMA": 0}'
(backend, variant, layout, batch, seq_len, optional launch config as JSON); batch ``ragged16``
or ``ragged64`` with any seq_len picks the ragged workload's batch of that size."""
import json
import sys

import impls  # noqa: F401
import torch
from impls import registry
from specs import workloads
from specs.inputs import make_inputs

backend, variant, layout, batch, seq = sys.argv[1:6]
config = json.loads(sys.argv[6]) if len(sys.argv) > 6 else None
if batch.startswith("ragged"):
    problem = next(p for p in workloads.named(["ragged"]) if p.layout == layout
                   and p.batch == int(batch[len("ragged"):]))
else:
    problem = workloads.model_problem("llama3-8b", [int(seq)] * int(batch), layout)
inputs = make_inputs(problem, 0)
out, lse = inputs.new_outputs()
launch = registry.get(f"{backend}/{variant}").prepare(inputs, out, lse,
                                                       **({"config": config} if config else {}))
print(problem.label(), variant, launch.config, flush=True)
for _ in range(3):
    launch.run()
torch.cuda.synchronize()
