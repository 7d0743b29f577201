"""Scores that rise along the sequence, by some 60 log2 units from the first token to the last:
an online softmax must keep moving its reference max (a loop that rescales only when the max has
moved far, as FA4's conditional rescaling does, still must; one that never moved it would
overflow P), so every implementation this machine runs matches the float64 oracle on such a
cache. On the CPU: Triton's interpreter and Numba's simulator; on a GPU every backend."""

import pytest
import torch

import impls  # noqa: F401  (first: CPU modes before any DSL import)
from conformance.checks import check
from impls import registry
from specs.inputs import make_inputs
from specs.problem import DecodeProblem
from specs.reference import reference

PROBLEM = DecodeProblem(8, 2, 64, (300, 97), layout="dense", dtype="float16")


def rising(problem: DecodeProblem, device: str):
    """The problem's inputs (one query token) with each sequence's K rows set to its KV head's
    mean query times a ramp: token t of n scores about 40 x t / n (natural units) for a head
    whose query is that mean."""
    inputs = make_inputs(problem, seed=7, device=device)
    group = problem.num_q_heads // problem.num_kv_heads
    sm_scale = problem.head_dim ** -0.5
    for b, n in enumerate(problem.seq_lens):
        mean = inputs.q[b].float().view(problem.num_kv_heads, group, -1).mean(1)  # [Hkv, D]
        scale = 40.0 / (sm_scale * (mean * mean).sum(-1))  # [Hkv]
        ramp = torch.arange(n, device=mean.device, dtype=torch.float32) / n
        inputs.k[b, :n] = (ramp[:, None, None] * (scale[:, None] * mean)[None]).to(inputs.k.dtype)
    return inputs


def test_the_scores_rise_by_tens_of_units():
    """The oracle's LSE (natural units) is tens above the first token's score of 0: the last
    tokens dominate, and a softmax's max moved a long way."""
    lse = reference(rising(PROBLEM, "cpu")).lse.float()
    assert float(lse.median()) > 20, lse


@pytest.mark.parametrize("name", [i.name for i in registry.all_impls()])
def test_every_implementation_follows_rising_scores(name):
    impl = registry.get(name)
    if impl.availability():
        pytest.skip(impl.availability())
    if impl.unsupported(PROBLEM):
        pytest.skip(impl.unsupported(PROBLEM))
    device = "cpu" if impl.backend.mode() != "gpu" else "cuda"
    checked = check(impl, rising(PROBLEM, device))
    assert checked.comparison.passed, checked.comparison.summary()
