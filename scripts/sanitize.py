"""Run every kernel of the given backends once on small problems, for compute-sanitizer (a
development tool, not part of the harness):

    compute-sanitizer --tool memcheck python scripts/sanitize.py cupy
    compute-sanitizer --tool racecheck python scripts/sanitize.py cupy

Problems: the ``cpu`` workload (every shape class: GQA 1-8, head_dim 64-256, page sizes 1 and 16,
ragged lengths, fp16/bf16/fp32) plus head_dim 80 on 12-token pages; each implementation at its
default launch configuration and with each value of each declared knob in turn (``Backend.space``:
the other loops, ring depths and merges a backend has; a value the problem cannot take is
skipped with the backend's reason); split-K also with a forced split so the merge kernels run.
Each output is checked against the reference, so a kernel the sanitizer passes but that computes
garbage still fails here. Exit code 1 on any mismatch.
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
from specs.problem import DecodeProblem, ProblemError  # noqa: E402
from specs.reference import reference  # noqa: E402

EXTRA = [DecodeProblem(40, 8, 80, (300, 77), layout="paged", page_size=12),
         DecodeProblem(28, 4, 64, (900, 40), dtype="float16"),  # query heads not a multiple of 8
         DecodeProblem(32, 8, 128, (700,), layout="paged", page_size=128, dtype="float16")]


def option_sets(impl, problem) -> list[dict]:
    """The default configuration, then every value of every knob that applies, one at a time."""
    variant = impl.variant(problem.layout)
    knobs = [k for k in impl.backend.space.knobs if k.applies(variant, problem.layout)]
    configs = [None] + [{k.name: v, **k.when} for k in knobs for v in k.values]
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
                try:
                    checked = check(impl, inputs, ref, opts)
                except ProblemError as e:  # a knob value this problem cannot take
                    print(f"skip {impl.name} {problem.label()} {opts}: {e}", flush=True)
                    continue
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
