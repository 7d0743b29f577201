"""Property-based conformance tests: every available implementation, every property.

Each test draws problems from the spec's axes (``strategies.problems``), fits them to the
implementation's declared capabilities, and checks one property: 1 and 12 (every launch
configuration a backend's search space offers) against the float64 oracle, 2-7, 9, 10 and 11
by comparing runs that must agree (the tolerance of ``specs.tolerance`` for different
computations, bit equality where only unread memory differs), 8 through the harness's timing
path (the timed calls compute what the checked call did). Negative controls (``negative_controls.py``) run
through the same tests under a strict xfail: a property that stops catching the control it is
meant to catch turns the suite red.
"""

from __future__ import annotations

import pytest
import torch
import functools

from hypothesis import assume, example, given, reject, settings
from hypothesis import strategies as st

from conformance.checks import (ConformanceFailure, PropertyViolation, Run, assert_agree,
                                InputSet, assert_conforms, assert_identical, fail, identical,
                                run_impl, time_and_recheck)
from conformance.negative_controls import CONTROLS
from conformance.strategies import fit, problems, seeds, sizes, with_lens
from harness.runner import extra_input_sets
from harness.timing import CpuTimer, GpuTimer
from impls import registry
from impls.registry import Unsupported
from specs.inputs import make_inputs, repeat_kv_heads
from specs.problem import LAYOUTS, DecodeProblem, ProblemError
from specs.reference import reference

# Awkward cases every property tries first (then fit() to each implementation).
PINNED = [
    (DecodeProblem(8, 2, 128, (1,), layout="paged", page_size=16), 1),  # seq_len 1
    (DecodeProblem(8, 2, 128, (15, 16, 17), layout="paged", page_size=16), 2),  # ps-1, ps, ps+1
    (DecodeProblem(14, 2, 64, (40, 9), layout="paged", page_size=16), 3),  # GQA group 7, ragged
    (DecodeProblem(4, 4, 96, (5, 3), layout="paged", page_size=1), 4),  # page_size 1, head_dim 96
    (DecodeProblem(8, 1, 128, (700, 300), layout="dense"), 5),  # long: low precision shows
    (DecodeProblem(16, 8, 256, (33, 64), layout="dense", dtype="float16"), 6),  # head_dim 256
    (DecodeProblem(8, 4, 64, (40, 9), layout="paged", kv_dtype="float8_e4m3fn",  # fp8, a scale
                   kv_scale="head"), 8),  # per KV head (an fp8-less implementation: 16-bit)
    (DecodeProblem(8, 2, 64, (40, 9, 17), layout="paged", q_len=4, window=12,  # a draft of 4
                   softcap=5.0), 9),  # tokens in a window, capped (fit drops what is not taken)
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


AGAINST_ORACLE = ("matches_reference", "every_config_conforms")  # the rest compare two runs


def cases(prop: str, where=lambda impl, layouts: True):
    """One case per variant of every registered implementation (skipped with the reason when
    unavailable here): the one-pass algorithm on each layout it serves (``<backend>/dense``,
    ``<backend>/paged``), split-k once, its problems drawn on either layout (layout None); then the
    negative controls that ``prop`` must reject (strict xfail). ``where(impl, layouts)`` selects
    by the implementation and the layouts a case may draw. Properties 1 and 12 reject a control
    with a ConformanceFailure (mismatch with the oracle); the others must reject theirs with their
    own assertion, a PropertyViolation (two runs that should agree do not)."""
    params = []
    for impl in registry.all_impls():
        if impl.module is None:
            continue
        why = impl.availability()
        marks = [pytest.mark.skip(reason=f"unavailable: {why}")] if why else []
        for variant, layouts in impl.variants():
            layout = variant if variant in LAYOUTS else None  # None: split-k draws either layout
            if where(impl, layouts):
                params.append(pytest.param(impl, layout, marks=marks,
                                           id=f"{impl.backend.name}/{variant}"))
    raises = ConformanceFailure if prop in AGAINST_ORACLE else PropertyViolation
    for control in CONTROLS:
        if prop in control.caught_by and where(control.impl, control.impl.layouts):
            params.append(pytest.param(control.impl, None, id=f"negative-control:{control.name}", marks=[
                pytest.mark.xfail(strict=True, raises=raises,
                                  reason="negative control: the property must reject it")]))
    return params


IMPL_LAYOUT = "impl,layout"


def unsupported_rejected(test):
    """A draw the launcher refuses in ``prepare`` (``Unsupported``: a precondition only it can
    see) is rejected, as the harness reports it UNSUPPORTED: it is no failure. (Placed under
    ``@given``; hypothesis then draws another.)"""
    @functools.wraps(test)
    def wrapper(*args, **kwargs):
        try:
            return test(*args, **kwargs)
        except Unsupported:
            reject()
    return wrapper


# 1. out and lse match the float64 reference within the dtype's tolerance.
@pytest.mark.parametrize(IMPL_LAYOUT, cases("matches_reference"))
@pinned()
@given(problem=problems(), seed=seeds)
@unsupported_rejected
def test_matches_reference(impl, layout, problem, seed):
    problem = fit(problem, impl, layout)
    assert_conforms(impl, make_inputs(problem, seed))


# 2. split-k gives the same result for any number of splits (1, 2, odd, more than pages).
LONG = (DecodeProblem(8, 1, 128, (2200,), layout="dense"), 7)  # > 32 non-empty splits: the
# combine's loop over blocks of splits runs more than once


@pytest.mark.parametrize(IMPL_LAYOUT, cases("split_invariance",
                                             lambda i, layouts: "num_splits" in i.options))
@pinned()
@example(problem=LONG[0], seed=LONG[1])
@given(problem=problems(), seed=seeds)
@unsupported_rejected
def test_split_invariance(impl, layout, problem, seed):
    problem = fit(problem, impl, layout)
    inputs = make_inputs(problem, seed)
    ref = reference(inputs)
    one = run_impl(impl, inputs, {"num_splits": 1})
    most = impl.caps.max_splits or 4096  # the launchers' rule: 1 <= num_splits <= 4096
    for splits in sorted({min(most, s) for s in (2, 3, problem.max_pages_per_seq + 3)} - {1}):
        opts = {"num_splits": splits}
        assert_agree(impl, inputs, run_impl(impl, inputs, opts), one, ref,
                     f"num_splits={splits} differs from num_splits=1", opts)


def _dense_sibling(impl):
    """The same backend's kernel for the dense layout (the implementation itself when it serves
    both layouts)."""
    if "dense" in impl.layouts:
        return impl
    return next((i for i in registry.all_impls() if i.backend == impl.backend
                 and "dense" in i.layouts), None)


# 3. paged equals dense for the same logical cache, under any page order and page size.
@pytest.mark.parametrize(IMPL_LAYOUT, cases("paged_equals_dense",
                                             lambda i, layouts: "paged" in layouts))
@pinned(lambda p: p.layout == "paged", other_page_size=16)
@given(problem=problems(layout="paged"), seed=seeds,
       other_page_size=st.sampled_from((1, 3, 16, 64, 256)))
@unsupported_rejected
def test_paged_equals_dense(impl, layout, problem, seed, other_page_size):
    problem = fit(problem, impl, layout)
    dense = make_inputs(problem.replace(layout="dense"), seed)  # the same cache, laid out densely
    ref = reference(dense)
    first = make_inputs(problem, seed)
    run_a = run_impl(impl, first)
    repaged = problem.replace(page_size=other_page_size)
    run_b = None
    if impl.unsupported(repaged) is None:  # another page size and another shuffle of pages
        try:
            run_b = run_impl(impl, make_inputs(repaged, seed, page_seed=seed + 1))
        except Unsupported:  # the launcher refuses that page size: the rest still holds
            pass
    if run_b is not None:
        assert_agree(impl, first, run_b, run_a, ref,
                     f"page_size {other_page_size} (pages reshuffled) differs from {problem.page_size}",
                     derived=f"repaged to page_size {other_page_size} with page order seed {seed + 1}")
    dense_impl = _dense_sibling(impl)
    if dense_impl is not None and dense_impl.unsupported(problem.replace(layout="dense")) is None:
        run_d = run_impl(dense_impl, dense)
        assert_agree(impl, first, run_a, run_d, ref, f"paged differs from {dense_impl.name} dense",
                     derived="the same cache in the dense layout")


# 4. GQA equals MHA with the KV heads repeated.
@pytest.mark.parametrize(IMPL_LAYOUT, cases("gqa_equals_mha"))
@pinned(lambda p: p.group_size > 1)
@given(problem=problems(min_group=2), seed=seeds)
@unsupported_rejected
def test_gqa_equals_mha(impl, layout, problem, seed):
    problem = fit(problem, impl, layout)
    gqa = make_inputs(problem, seed)
    g = problem.group_size
    mha = repeat_kv_heads(gqa, g)
    assert_agree(impl, gqa, run_impl(impl, gqa), run_impl(impl, mha), reference(gqa),
                 "GQA differs from MHA with repeated KV heads",
                 derived=f"MHA: each KV head repeated {g} times")


# 5. Permuting the batch permutes the output.
@pytest.mark.parametrize(IMPL_LAYOUT, cases("batch_permutation"))
@pinned(lambda p: p.batch > 1, perm_seed=0)
@given(problem=problems(min_batch=2), seed=seeds, perm_seed=st.integers(0, 2**16))
@unsupported_rejected
def test_batch_permutation(impl, layout, problem, seed, perm_seed):
    problem = fit(problem, impl, layout)
    perm = torch.randperm(problem.batch, generator=torch.Generator().manual_seed(perm_seed))
    if torch.equal(perm, torch.arange(problem.batch)):
        perm = perm.roll(1)
    base = make_inputs(problem, seed)
    dev_perm = perm.to(base.device)
    permuted = make_inputs(problem.replace(seq_lens=tuple(problem.seq_lens[i] for i in perm.tolist())),
                           seed, seq_ids=perm.tolist())  # the same sequences, in the new order
    run_base = run_impl(impl, base)
    n = problem.q_len  # rows: each sequence's q_len query tokens move together
    rows = (dev_perm[:, None] * n + torch.arange(n, device=base.device)).flatten()
    run_base.out = run_base.out[rows]
    if run_base.lse is not None:
        run_base.lse = run_base.lse[rows]
    assert_agree(impl, base, run_impl(impl, permuted), run_base, reference(permuted),
                 f"batch permuted by {perm.tolist()} is not the permuted output",
                 derived=f"batch permuted by {perm.tolist()}")


# 6. Nothing outside a sequence's pages or length leaks into its output.
@pytest.mark.parametrize(IMPL_LAYOUT, cases("no_leak"))
@pinned()
@given(problem=problems(), seed=seeds)
@unsupported_rejected
def test_no_leak(impl, layout, problem, seed):
    """The same logical cache under two different poisonings (rows past each length, unused
    pages) gives bit-identical outputs, when the kernel is deterministic (two runs on the same
    inputs give the same bits); otherwise outputs within the tolerance of each other."""
    problem = fit(problem, impl, layout)
    a = make_inputs(problem, seed)
    b = make_inputs(problem, seed, poison_seed=seed + 7919)
    run_a, run_a_again, run_b = run_impl(impl, a), run_impl(impl, a), run_impl(impl, b)
    derived = f"a second poisoning, poison_seed={seed + 7919}"
    what = "output depends on the poison past the lengths"
    if identical(run_a, run_a_again):
        assert_identical(impl, a, run_b, run_a, what, derived=derived)
    else:  # a nondeterministic kernel: the poison may still not move it beyond the tolerance
        assert_agree(impl, a, run_b, run_a, reference(a), what, derived=derived)


# 7. Every output element is written.
SENTINEL = 12345.0  # finite and absurd for an attention output (a weighted mean of V rows)


@pytest.mark.parametrize(IMPL_LAYOUT, cases("every_element_written",
                                             lambda i, layouts: not i.allocates_outputs))
@pinned()
@given(problem=problems(), seed=seeds)
@unsupported_rejected
def test_every_element_written(impl, layout, problem, seed):
    problem = fit(problem, impl, layout)
    inputs = make_inputs(problem, seed)
    run = run_impl(impl, inputs, fill=SENTINEL)
    left_out = run.out.float() == torch.tensor(SENTINEL, dtype=run.out.dtype).float().item()
    left_lse = run.lse == SENTINEL if run.lse is not None else torch.zeros(0, dtype=torch.bool)
    if left_out.any() or left_lse.any():
        where = left_out.nonzero()[:5].tolist()
        raise fail(f"{int(left_out.sum())} out and {int(left_lse.sum())} lse element(s) never "
                   f"written, first out indices {where}", impl, inputs, kind=PropertyViolation)


# 8. The timed calls compute what the checked call did: the harness's timing path (input sets
# cycled, outputs poisoned, every set re-checked after timing) on a short timer.
TIMED_EXAMPLES = 4  # each example times the kernel: fewer than the other properties draw


@functools.cache
def _timer():
    return GpuTimer(torch.device("cuda"), quick=True, modes=("cold", "graph")) if torch.cuda.is_available() \
        else CpuTimer()


@pytest.mark.parametrize(IMPL_LAYOUT, cases("timed_calls_conform"))
@pinned(lambda p: p.batch > 1)
@settings(max_examples=TIMED_EXAMPLES)
@given(problem=problems(), seed=seeds)
@unsupported_rejected
def test_timed_calls_conform(impl, layout, problem, seed):
    problem = fit(problem, impl, layout)
    inputs = make_inputs(problem, seed)
    checked = assert_conforms(impl, inputs)
    _, failure = time_and_recheck(impl, checked, InputSet(inputs, checked.ref),
                                  extra_input_sets(problem, seed, inputs), {}, _timer())
    if failure:
        raise fail(failure, impl, inputs, kind=PropertyViolation)


# 9. q_len = n equals n single-token calls on the prefixes: query token i of a sequence of length
# L is a plain decode of the sequence's first L - n + i + 1 tokens.
DRAFT_EXAMPLES = 8  # each example of property 9 is q_len + 1 calls: fewer draws


@pytest.mark.parametrize(IMPL_LAYOUT, cases("query_tokens", lambda i, layouts: i.caps.max_q_len > 1))
@pinned(lambda p: p.q_len > 1, q_len=4)
@settings(max_examples=DRAFT_EXAMPLES)
@given(problem=problems(), seed=seeds, q_len=st.integers(2, sizes().max_q_len))
@unsupported_rejected
def test_query_tokens(impl, layout, problem, seed, q_len):
    problem = fit(problem.replace(q_len=min(q_len, min(problem.seq_lens))), impl, layout)
    n = problem.q_len
    assume(n > 1)
    multi = make_inputs(problem, seed)
    run_multi = run_impl(impl, multi)
    out, lse = multi.new_outputs()
    prefixes = Run(out, lse if run_multi.lse is not None else None, run_multi.launch, 0.0)
    for i in range(n):
        single = make_inputs(problem.replace(q_len=1, seq_lens=tuple(
            length - n + i + 1 for length in problem.seq_lens)), seed)
        single.q.copy_(multi.q[i::n])  # query token i of each sequence
        run_i = run_impl(impl, single)
        prefixes.out[i::n] = run_i.out
        if prefixes.lse is not None:
            prefixes.lse[i::n] = run_i.lse
    assert_agree(impl, multi, run_multi, prefixes, reference(multi),
                 f"q_len={n} differs from {n} single-token calls on the prefixes",
                 derived=f"{n} single-token problems, lengths L - {n} + i + 1")


def _last_tokens(inputs):
    """Inputs whose sequences hold only the tokens the window of ``inputs`` attends (each
    sequence's from its first query token's window start): with no window for one query token,
    with the same window for a draft (its earlier tokens' windows start earlier; none reaches
    before the cut); the same q, values and scales."""
    p = inputs.problem
    starts = p.window_starts
    cut = make_inputs(with_lens(p, p.attended_lens, window=None if p.q_len == 1 else p.window),
                      inputs.seed)
    for b, (first, length) in enumerate(zip(starts, p.seq_lens)):
        k, v = inputs.rows(b, first, length)
        t = torch.arange(length - first, device=inputs.device)
        if cut.block_table is None:
            cut.k[b, t], cut.v[b, t] = k, v
        else:
            pages = cut.block_table[b, t // p.page_size].long()
            cut.k[pages, t % p.page_size], cut.v[pages, t % p.page_size] = k, v
    return cut


# 10. A window of w on a sequence equals no window on the sequence's last w tokens (a draft of
# several tokens: the same window on the tokens any of them attends).
@pytest.mark.parametrize(IMPL_LAYOUT, cases("window_is_last_tokens",
                                             lambda i, layouts: i.caps.windows))
@pinned(lambda p: p.window is not None, window=12)
@given(problem=problems(), seed=seeds, window=st.integers(1, 64))
@unsupported_rejected
def test_window_is_last_tokens(impl, layout, problem, seed, window):
    problem = fit(problem.replace(window=window), impl, layout)
    assume(problem.window is not None)
    windowed = make_inputs(problem, seed)
    assert_agree(impl, windowed, run_impl(impl, windowed), run_impl(impl, _last_tokens(windowed)),
                 reference(windowed), f"window {problem.window} differs from the sequences cut to "
                 "its tokens", derived="each sequence cut to the tokens its window attends")


# 11. Soft-capping at a cap far above every score equals no cap, within the tolerance (the cap's
# own tanh term included: specs.tolerance.softcap_error). Fewer draws: it repeats property 1's
# kernels with one more compile-time switch.
FAR_CAP = 1.0e4  # the suite's scaled scores stay below ~20: tanh(s / c) is s / c to 1e-6


@pytest.mark.parametrize(IMPL_LAYOUT, cases("far_cap_is_none", lambda i, layouts: i.caps.softcaps))
@pinned(lambda p: p.softcap is not None)
@settings(max_examples=TIMED_EXAMPLES)
@given(problem=problems(), seed=seeds)
@unsupported_rejected
def test_far_cap_is_none(impl, layout, problem, seed):
    problem = fit(problem.replace(softcap=FAR_CAP), impl, layout)
    assume(problem.softcap is not None)
    capped = make_inputs(problem, seed)
    free = make_inputs(problem.replace(softcap=None), seed)
    assert_agree(impl, capped, run_impl(impl, capped), run_impl(impl, free), reference(capped),
                 f"softcap={FAR_CAP:g} differs from no cap", derived="the same inputs, no cap")


# 12. every launch configuration of a backend's search space (what --tune may pick, --config may
# name, the tuning cache may hold) computes what the oracle does, or is refused before any launch
# with a ProblemError naming why (it does not fit the problem). A configuration is drawn; the
# refused ones pass to the next in the space's order.
@pytest.mark.parametrize(IMPL_LAYOUT, cases("every_config_conforms",
                                             lambda i, layouts: "config" in i.options and
                                             bool(i.backend.space.knobs)))
@settings(max_examples=TIMED_EXAMPLES)
@given(problem=problems(), seed=seeds, pick=st.integers(0, 2**16))
@unsupported_rejected
def test_every_config_conforms(impl, layout, problem, seed, pick):
    problem = fit(problem, impl, layout)
    configs = impl.backend.space.configs(impl.variant(problem.layout), problem.layout)
    assume(configs)
    inputs = make_inputs(problem, seed)
    for n in range(len(configs)):
        config = configs[(pick + n) % len(configs)]
        try:
            assert_conforms(impl, inputs, options={"config": config}, what=f"config {config}")
            return
        except ProblemError:  # refused before the launch: try the space's next one
            continue
    reject()  # no configuration of the space fits this problem
