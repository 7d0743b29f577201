"""Tuning sweep (a development tool, not part of the harness): time launch configurations of one
backend's kernels on a few cells and print the fastest per cell. The configurations are the
backend's declared search space (``Backend.space``, in the one vocabulary of ``impls.launch``),
each passed as the ``config`` launch option and checked against the reference first; a wrong one
is reported, never chosen, and one the problem cannot take is skipped with the backend's reason.

    python scripts/sweep.py BACKEND [--quick] [--cells 0,2] [--grid] [--configs JSON-list]

``--grid`` sweeps the one-pass kernels on every grid cell of 16 sequences or more (dense and
paged; batch 1 is split-K's) instead of CELLS; ``--configs`` tries only the given configurations.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import impls  # noqa: E402,F401
import torch  # noqa: E402

from conformance.checks import check  # noqa: E402
from harness.timing import GpuTimer  # noqa: E402
from impls import registry  # noqa: E402
from specs import workloads  # noqa: E402
from specs.inputs import make_inputs  # noqa: E402
from specs.reference import reference  # noqa: E402

CELLS = [(1, 32768, "split-k"), (16, 4096, "split-k"), (16, 4096, "dense"), (64, 2048, "dense"),
         (64, 8192, "dense"), (64, 2048, "paged"), (128, 4096, "split-k")]
GRID_CELLS = [(b, s, v) for b in (16, 64, 128) for s in (1024, 2048, 4096, 8192)
              for v in ("dense", "paged")] + [(16, 32768, "dense"), (16, 32768, "paged")]
SPLITS = (None, 16, 32, 64, 128)  # split-k: the policy's pick, then forced counts


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("backend", choices=[b.name for b in registry.backends() if b.space.knobs])
    parser.add_argument("--cells", help="indices into CELLS, comma-separated (default: all)")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--all", action="store_true", help="print every configuration's time")
    parser.add_argument("--grid", action="store_true", help="every grid cell of batch >= 16")
    parser.add_argument("--configs", type=json.loads, help="JSON list of configurations to try")
    args = parser.parse_args()
    timer = GpuTimer(torch.device("cuda"), quick=args.quick, modes=("cold",))
    cells = GRID_CELLS if args.grid else CELLS
    cells = [cells[int(i)] for i in args.cells.split(",")] if args.cells else cells
    for batch, seq, variant in cells:
        layout = "paged" if variant == "paged" else "dense"
        problem = workloads.model_problem("llama3-8b", [seq] * batch, layout)
        impl = registry.get(f"{args.backend}/{variant}")
        inputs = make_inputs(problem, 0)
        ref = reference(inputs)
        timed = []
        for config in args.configs or impl.backend.space.configs(variant, layout):
            for splits in SPLITS if variant == "split-k" else (None,):
                opts = {"config": config, **({"num_splits": splits} if splits else {})}
                try:
                    checked = check(impl, inputs, ref, opts)
                    if not checked.comparison.passed:
                        print(f"  WRONG {opts}: {checked.comparison.summary()[:120]}")
                        continue
                    t = timer(checked.run.launch.run)["cold"]
                    timed.append((t.estimate.median, opts, checked.run.launch.config))
                except Exception as e:  # a config that does not build or fit is skipped
                    print(f"  skip {opts}: {type(e).__name__}: {str(e)[:100]}")
        timed.sort(key=lambda r: r[0])
        print(f"{problem.label()} {variant}: best {timed[0][0]:.1f} us {timed[0][1]} "
              f"{timed[0][2]} | 2nd {timed[1][0]:.1f} {timed[1][1]} {timed[1][2]}", flush=True)
        if args.all:
            for t, opts, config in timed:
                print(f"    {t:8.1f} us  {opts}  {config}")
        del inputs, ref


if __name__ == "__main__":
    main()
