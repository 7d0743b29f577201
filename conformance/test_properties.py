"""Property-based conformance tests: every available implementation, every property.

Each test draws problems from the spec's axes (``strategies.problems``), fits them to the
implementation's declared capabilities, and checks one property against the float64 oracle with
the one tolerance rule of ``specs.tolerance``. Negative controls (``negative_controls.py``) run
through the same tests under a strict xfail: a property that stops catching the control it is
meant to catch turns the suite red.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from conformance.checks import (ConformanceFailure, assert_agree, assert_conforms, fail,
                                run_impl, sync)
from conformance.negative_controls import CONTROLS
from conformance.strategies import fit, problems, seeds
from impls import registry
from specs.inputs import build_inputs, make_inputs, make_logical
from specs.problem import DecodeProblem
from specs.reference import reference

# Awkward cases every property tries first (then fit() to each implementation).
PINNED = [
    (DecodeProblem(8, 2, 128, (1,), layout="paged", page_size=16), 1),  # seq_len 1
    (DecodeProblem(8, 2, 128, (15, 16, 17), layout="paged", page_size=16), 2),  # ps-1, ps, ps+1
    (DecodeProblem(14, 2, 64, (40, 9), layout="paged", page_size=16), 3),  # GQA group 7, ragged
    (DecodeProblem(4, 4, 96, (5, 3), layout="paged", page_size=1), 4),  # page_size 1, head_dim 96
    (DecodeProblem(8, 1, 128, (700, 300), layout="dense"), 5),  # long: low precision shows
    (DecodeProblem(16, 8, 256, (33, 64), layout="dense", dtype="float16"), 6),  # head_dim 256
]


def pinned(predicate=lambda problem: True, **extra):
    """Apply the PINNED cases that satisfy ``predicate`` as hypothesis @examples (``extra``
    gives the test's other drawn arguments)."""
    def decorate(test):
        for problem, seed in PINNED:
            if predicate(problem):
                test = example(problem=problem, seed=seed, **extra)(test)
        return test
    return decorate


def cases(prop: str, where=lambda impl: True):
    """Registered implementations (skipped with the reason when unavailable here) plus the
    negative controls that ``prop`` must reject (strict xfail)."""
    params = []
    for impl in registry.all_impls():
        if impl.module is None or not where(impl):
            continue
        why = impl.availability()
        marks = [pytest.mark.skip(reason=f"unavailable: {why}")] if why else []
        params.append(pytest.param(impl, id=impl.name, marks=marks))
    for control in CONTROLS:
        if prop in control.caught_by and where(control):
            params.append(pytest.param(control, id=f"negative-control:{control.variant}", marks=[
                pytest.mark.xfail(strict=True, raises=ConformanceFailure,
                                  reason="negative control: the property must reject it")]))
    return params


# 1. out and lse match the float64 reference within the dtype's tolerance.
@pytest.mark.parametrize("impl", cases("matches_reference"))
@pinned()
@given(problem=problems(), seed=seeds)
def test_matches_reference(impl, problem, seed):
    problem = fit(problem, impl)
    assert_conforms(impl, make_inputs(problem, seed))


# 2. split-k gives the same result for any number of splits (1, 2, odd, more than pages).
@pytest.mark.parametrize("impl", cases("split_invariance", lambda i: "num_splits" in i.options))
@pinned()
@given(problem=problems(), seed=seeds)
def test_split_invariance(impl, problem, seed):
    problem = fit(problem, impl)
    inputs = make_inputs(problem, seed)
    ref = reference(inputs)
    more_than_pages = min(4096, problem.max_pages_per_seq + 3)
    runs = {}
    for splits in (1, 2, 3, more_than_pages):
        opts = {"num_splits": splits}
        runs[splits] = assert_conforms(impl, inputs, ref, opts, what=f"num_splits={splits}").run
        if splits > 1:
            assert_agree(impl, inputs, runs[splits], runs[1], ref,
                         f"num_splits={splits} differs from num_splits=1", opts)


def _dense_sibling(impl):
    """The same backend's implementation of the dense layout (itself when it has both)."""
    if "dense" in impl.caps.layouts:
        return impl
    return next((i for i in registry.all_impls() if i.backend == impl.backend
                 and i.module is not None and "dense" in i.caps.layouts), None)


# 3. paged equals dense for the same logical cache, under any page order and page size.
@pytest.mark.parametrize("impl", cases("paged_equals_dense", lambda i: "paged" in i.caps.layouts))
@pinned(lambda p: p.layout == "paged", other_page_size=16)
@given(problem=problems(layout="paged"), seed=seeds,
       other_page_size=st.sampled_from((1, 3, 16, 64, 256)))
def test_paged_equals_dense(impl, problem, seed, other_page_size):
    problem = fit(problem, impl)
    q, k, v = make_logical(problem, seed)
    ref = reference(build_inputs(problem.replace(layout="dense"), q, k, v, seed))
    first = build_inputs(problem, q, k, v, seed)
    run_a = assert_conforms(impl, first, ref, what=f"page_size {problem.page_size}").run
    repaged = problem.replace(page_size=other_page_size)
    if impl.unsupported(repaged) is None:  # another page size and another shuffle of pages
        second = build_inputs(repaged, q, k, v, seed + 1)
        run_b = assert_conforms(impl, second, ref, what=f"page_size {other_page_size}").run
        assert_agree(impl, first, run_b, run_a, ref,
                     f"page_size {other_page_size} (reshuffled) differs from {problem.page_size}")
    dense_impl = _dense_sibling(impl)
    if dense_impl is not None and dense_impl.unsupported(problem.replace(layout="dense")) is None:
        dense = build_inputs(problem.replace(layout="dense"), q, k, v, seed)
        run_d = assert_conforms(dense_impl, dense, ref, what="dense layout").run
        assert_agree(impl, first, run_a, run_d, ref, f"paged differs from {dense_impl.name} dense")


# 4. GQA equals MHA with the KV heads repeated.
@pytest.mark.parametrize("impl", cases("gqa_equals_mha"))
@pinned(lambda p: p.group_size > 1)
@given(problem=problems(min_group=2), seed=seeds)
def test_gqa_equals_mha(impl, problem, seed):
    problem = fit(problem, impl)
    q, k, v = make_logical(problem, seed)
    gqa = build_inputs(problem, q, k, v, seed)
    g = problem.group_size
    mha_problem = problem.replace(num_kv_heads=problem.num_q_heads)
    mha = build_inputs(mha_problem, q, k.repeat_interleave(g, dim=2), v.repeat_interleave(g, dim=2),
                       seed)
    ref = reference(mha)
    run_gqa = assert_conforms(impl, gqa, ref, what=f"GQA (group {g})").run
    run_mha = assert_conforms(impl, mha, ref, what="MHA with repeated KV heads").run
    assert_agree(impl, gqa, run_gqa, run_mha, ref, "GQA differs from MHA with repeated KV heads")


# 5. Permuting the batch permutes the output.
@pytest.mark.parametrize("impl", cases("batch_permutation"))
@pinned(lambda p: p.batch > 1, perm_seed=0)
@given(problem=problems(min_batch=2), seed=seeds, perm_seed=st.integers(0, 2**16))
def test_batch_permutation(impl, problem, seed, perm_seed):
    problem = fit(problem, impl)
    perm = torch.randperm(problem.batch, generator=torch.Generator().manual_seed(perm_seed))
    if torch.equal(perm, torch.arange(problem.batch)):
        perm = perm.roll(1)
    q, k, v = make_logical(problem, seed)
    base = build_inputs(problem, q, k, v, seed)
    permuted_problem = problem.replace(seq_lens=tuple(problem.seq_lens[i] for i in perm.tolist()))
    dev_perm = perm.to(q.device)
    permuted = build_inputs(permuted_problem, q[dev_perm], k[dev_perm], v[dev_perm], seed)
    ref = reference(permuted)
    run_base = run_impl(impl, base)
    run_perm = assert_conforms(impl, permuted, ref, what=f"batch permuted by {perm.tolist()}").run
    run_base.out, run_base.lse = run_base.out[dev_perm], run_base.lse[dev_perm]
    assert_agree(impl, permuted, run_perm, run_base, ref,
                 f"batch permuted by {perm.tolist()} is not the permuted output")


# 6. Nothing outside a sequence's pages or length leaks into its output.
@pytest.mark.parametrize("impl", cases("no_leak"))
@pinned()
@given(problem=problems(), seed=seeds)
def test_no_leak(impl, problem, seed):
    """The same logical cache with two different poisonings (rows past each length, unused
    pages) gives the same output; both match the reference."""
    problem = fit(problem, impl)
    a = make_inputs(problem, seed)
    b = make_inputs(problem, seed, poison_seed=seed + 7919)
    ref = reference(a)
    run_a = assert_conforms(impl, a, ref, what="poisoning A").run
    run_b = assert_conforms(impl, b, ref, what="poisoning B").run
    assert_agree(impl, a, run_b, run_a, ref, "output depends on the poison past the lengths")


# 7. Every output element is written.
SENTINEL = 12345.0  # finite and absurd for an attention output (a weighted mean of V rows)


@pytest.mark.parametrize("impl", cases("every_element_written", lambda i: not i.allocates_outputs))
@pinned()
@given(problem=problems(), seed=seeds)
def test_every_element_written(impl, problem, seed):
    problem = fit(problem, impl)
    inputs = make_inputs(problem, seed)
    run = run_impl(impl, inputs, fill=SENTINEL)
    sync(inputs.device)
    left_out = run.out.float() == torch.tensor(SENTINEL, dtype=run.out.dtype).float().item()
    left_lse = run.lse == SENTINEL
    if left_out.any() or left_lse.any():
        where = left_out.nonzero()[:5].tolist()
        raise fail(f"{int(left_out.sum())} out and {int(left_lse.sum())} lse element(s) never "
                   f"written, first out indices {where}", impl, inputs)
