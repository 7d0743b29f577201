"""Prepare and run one implementation on one cell a few times, for a profiler (a development
tool, not part of the harness):

    ncu -k regex:decode_kernel python scripts/run_one.py cupy/dense 64 2048 dense ['{"STAGES": 2}' [splits]]

The cell is Llama-3-8B's decode unless ``MODEL`` (a ``specs.workloads.MODELS`` name) and
``Q_LEN`` (query tokens a sequence) say otherwise in the environment.
Arguments: implementation (``backend/variant``), batch, seq_len, layout, an optional ``config``
JSON (the launch-config overrides, ``{}`` for none) and split-K's ``num_splits``. Nothing is timed
or checked here. The launches run between cudaProfilerStart and Stop, so
``ncu --profile-from-start off`` sees only them (a vendor library's kernels whose names are not
known in advance included).
"""

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import impls  # noqa: E402,F401
import torch  # noqa: E402

from impls import registry  # noqa: E402
from specs import workloads  # noqa: E402
from specs.inputs import make_inputs  # noqa: E402


def main() -> None:
    name, batch, seq, layout = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    opts = {"config": json.loads(sys.argv[5])} if len(sys.argv) > 5 and sys.argv[5] != "{}" else {}
    if len(sys.argv) > 6:
        opts["num_splits"] = int(sys.argv[6])
    p = workloads.model_problem(os.environ.get("MODEL", "llama3-8b"), [seq] * batch, layout)
    p = p.replace(q_len=int(os.environ.get("Q_LEN", "1")))
    inputs = make_inputs(p, 0, device="cuda")
    out, lse = inputs.new_outputs()
    launch = registry.get(name).prepare(inputs, out, lse, **opts)
    launch.run()  # first call (compilation, a library's set-up) outside the profiled range
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for _ in range(3):
        launch.run()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    print(name, launch.config)


if __name__ == "__main__":
    main()
