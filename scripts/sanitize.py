"""Run every kernel of the given backends once on small problems, for compute-sanitizer (a
development tool, not part of the harness):

    compute-sanitizer --tool memcheck python scripts/sanitize.py cupy
    compute-sanitizer --tool racecheck python scripts/sanitize.py cupy

Problems: the ``cpu`` workload (every shape class: GQA 1-8, head_dim 64-256, page sizes 1 and 16,
ragged lengths, fp16/bf16/fp32) plus head_dim 80 on 12-token pages; each implementation at its
default launch configuration and, for CuPy, on its CUDA-core loop and 2-warp rings too; split-K
also with a forced split so the merge kernel runs (for CuPy, also merged in the split kernel:
MERGE=fused). Each output is checked against the reference, so a kernel the sanitizer passes but
that computes garbage still fails here. Exit code 1 on any mismatch.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import impls  # noqa: E402,F401
import torch  # noqa: E402

from conformance.checks import check  # noqa: E402
from impls import registry  # noqa: E402
from specs import workloads  # noqa: E402
from specs.inputs import make_inputs  # noqa: E402
from specs.problem import DecodeProblem  # noqa: E402
from specs.reference import reference  # noqa: E402

EXTRA = [DecodeProblem(40, 8, 80, (300, 77), layout="paged", page_size=12),
         DecodeProblem(28, 4, 64, (900, 40), dtype="float16"),  # query heads not a multiple of 8
         DecodeProblem(32, 8, 128, (700,), layout="paged", page_size=128, dtype="float16")]


def option_sets(impl, problem) -> list[dict]:
    configs = [None]
    if impl.backend.name == "cupy":
        from impls.cupy._build import tensor_cores_fit
        if tensor_cores_fit(problem):  # the CUDA-core loop, and the small rings of many-CTA grids
            configs += [{"TENSOR_CORES": 0}, {"NUM_WARPS": 2, "STAGES": 2}]
        if "num_splits" in impl.options:  # both merges of split-K, whatever the plan would pick
            configs = [{**(c or {}), "MERGE": m} for c in configs for m in ("kernel", "fused")]
    splits = (None, 3) if "num_splits" in impl.options else (None,)
    return [{**({"config": c} if c else {}), **({"num_splits": s} if s else {})}
            for c in configs for s in splits]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("backends", help="comma-separated backend names")
    args = parser.parse_args()
    wanted = args.backends.split(",")
    failed = runs = 0
    for problem in workloads.named(["cpu"]) + EXTRA:
        inputs = make_inputs(problem, 0, device="cuda")
        ref = reference(inputs)
        for impl in registry.all_impls():
            if impl.backend.name not in wanted or impl.unsupported(problem):
                continue
            for opts in option_sets(impl, problem):
                checked = check(impl, inputs, ref, opts)
                torch.cuda.synchronize()
                runs += 1
                if not checked.comparison.passed:
                    failed += 1
                    print(f"FAIL {impl.name} {problem.label()} {opts}: "
                          f"{checked.comparison.summary()[:200]}", flush=True)
    print(f"{runs} runs, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
