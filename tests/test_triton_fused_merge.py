"""Triton's split-K with the merge fused into the split kernel (``MERGE=fused``: the last
program of each sequence merges, counted by an atomic it resets) computes what the reference
does, on the CPU interpreter, launch after launch (a counter left set would merge early on the
next launch), for the planner's cut and forced uniform ones. The default merge kernel is what
the conformance suite runs; this keeps the fused path exercised."""

import importlib

import pytest

import impls  # noqa: F401  (first: CPU modes before any DSL import)

pytest.importorskip("triton")

from impls import registry  # noqa: E402
from specs.inputs import make_inputs  # noqa: E402
from specs.problem import DecodeProblem  # noqa: E402
from specs.reference import reference  # noqa: E402
from specs.tolerance import compare  # noqa: E402


@pytest.mark.parametrize("layout", ["dense", "paged"])
@pytest.mark.parametrize("num_splits", [None, 3, 7])
def test_fused_merge_matches_the_reference_on_every_launch(layout, num_splits):
    impl = registry.get("triton/split-k")
    if impl.availability():
        pytest.skip(impl.availability())
    problem = DecodeProblem(8, 2, 64, (900, 70, 1, 129), layout=layout, dtype="float16")
    inputs = make_inputs(problem, seed=3, device="cpu")
    ref = reference(inputs)
    out, lse = inputs.new_outputs()
    module = importlib.import_module(impl.module)
    launch = module.prepare(inputs, out, lse, num_splits=num_splits, config={"MERGE": "fused"})
    assert launch.config["merge"] == "fused" and launch.config["merges"] > 0
    for _ in range(3):
        out.fill_(float("nan"))
        lse.fill_(float("nan"))
        launch.run()
        result = compare(problem, out, lse, ref)
        assert result.passed, result.summary()
