"""Two caches an online softmax must take, every implementation this machine runs against the
float64 oracle (on the CPU: Triton's interpreter and Numba's simulator; on a GPU every backend):
- scores that rise along the sequence, by some 60 log2 units from the first token to the last:
  the reference max must keep moving (a loop that rescales only when the max has moved far, as
  FA4's conditional rescaling does, still must; one that never moved it would overflow P);
- every score shifted some 40 log2 units below 0 (softmax is shift-invariant), with draft rows
  whose windows start a token apart across a tile boundary, so that some rows see nothing of
  their first tile: a row that has seen nothing must not keep 0 as its max (its p's against 0
  would underflow P's 16-bit pack and the row would come out 0)."""

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


# a draft of 4 tokens, a window of 42: on the 300-token sequence row 0's window starts at token
# 255 and rows 1-3's at 256 onwards, so rows 1-3 see nothing of the tile (any of 16-128 tokens)
# that ends at 255
SHIFTED = DecodeProblem(4, 4, 64, (300, 97), layout="dense", dtype="float16", q_len=4, window=42)


def shifted(problem: DecodeProblem, device: str, natural: float = 30.0):
    """The problem's inputs with every attended K row of a KV head plus one vector u (minus its
    query rows' mean, scaled): each query row's scores shift by one constant, about -``natural``
    for a row like the mean (softmax unchanged, the LSE shifted by it)."""
    inputs = make_inputs(problem, seed=7, device=device)
    ql = problem.q_len
    sm_scale = problem.head_dim ** -0.5
    for b, n in enumerate(problem.seq_lens):
        q = inputs.q[b * ql:(b + 1) * ql].float()  # [q_len, Hq, D]; one query head a KV head
        u = -q.mean(0)
        shift = (q * u[None]).sum(-1).mean(0) * sm_scale  # [Hq]
        first = problem.window_starts[b]
        k = inputs.k[b, first:n].float() + (natural / shift.abs())[None, :, None] * u[None]
        inputs.k[b, first:n] = k.to(inputs.k.dtype)
    return inputs


def test_the_shift_leaves_the_softmax_and_moves_the_lse():
    plain = reference(make_inputs(SHIFTED, seed=7, device="cpu"))
    moved = reference(shifted(SHIFTED, "cpu"))
    assert float((moved.lse.float() - plain.lse.float()).median()) < -20
    assert SHIFTED.window_starts[0] == 255


CACHES = {"rising": (PROBLEM, rising), "shifted": (SHIFTED, shifted)}


@pytest.mark.parametrize("cache", CACHES)
@pytest.mark.parametrize("name", [i.name for i in registry.all_impls()])
def test_every_implementation_takes_the_cache(name, cache):
    problem, make = CACHES[cache]
    impl = registry.get(name)
    if impl.availability():
        pytest.skip(impl.availability())
    if impl.unsupported(problem):
        pytest.skip(impl.unsupported(problem))
    device = "cpu" if impl.backend.mode() != "gpu" else "cuda"
    checked = check(impl, make(problem, device))
    assert checked.comparison.passed, checked.comparison.summary()
