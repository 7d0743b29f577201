"""The mask's axes, windows and soft-capped logits, on the CPU: their validation, bytes and
labels, the poison before a window's start, the float64 oracle against a plain float32 attention
over the window with the cap, the metamorphic equalities (a window at least as long as the
sequence is no window, a cap far above every score is no cap), the negative controls caught,
and implementations that take neither refusing both."""

import pytest
import torch

import impls  # noqa: F401  (first: CPU modes before any DSL import)
from conformance import negative_controls
from impls import registry
from specs.inputs import POISON_V, make_inputs
from specs.problem import DecodeProblem, ProblemError
from specs.reference import reference
from specs.tolerance import compare

BASE = DecodeProblem(8, 2, 64, (70, 9, 33), layout="paged", page_size=16, dtype="float16")


@pytest.mark.parametrize("fields, match", [
    (dict(window=0), "window=0: must be >= 1"),
    (dict(window=2.5), "window=2.5: must be an integer"),
    (dict(softcap=0.0), "softcap=0.0: must be finite and > 0"),
    (dict(softcap=-3), "softcap=-3: must be finite and > 0"),
    (dict(softcap=float("nan")), "softcap=nan: must be finite and > 0"),
    (dict(softcap="50"), "softcap='50': must be a number"),
])
def test_bad_mask_fields_are_refused_naming_them(fields, match):
    with pytest.raises(ProblemError, match=match):
        BASE.replace(**fields)


def test_a_window_reads_its_tokens_only():
    p = BASE.replace(window=16, softcap=20.0)
    assert p.window_starts == (54, 0, 17)
    assert p.attended_lens == (16, 9, 16)
    assert p.kv_bytes == BASE.replace(seq_lens=(16, 9, 16)).kv_bytes
    assert p.label().endswith("fp16 win16 cap20")
    assert DecodeProblem.from_dict(p.to_dict()) == p


def test_rows_before_a_window_are_poisoned():
    p = BASE.replace(layout="dense", window=16)
    inputs = make_inputs(p, seed=3, device="cpu")
    for b, (first, n) in enumerate(zip(p.window_starts, p.seq_lens)):
        v = inputs.v[b, :n].float().abs()
        assert bool((v[:first] >= POISON_V).all()), "rows before the window hold the poison"
        assert bool((v[first:] < 10).all()), "the window's rows are real values"


@pytest.mark.parametrize("fields", [
    dict(window=16), dict(softcap=2.0), dict(window=5, softcap=0.75),
    dict(window=16, kv_dtype="float8_e4m3fn", kv_scale="head"), dict(layout="dense", window=1),
], ids=["window", "softcap", "both", "fp8-window", "one-token-window"])
def test_the_oracle_matches_a_plain_windowed_capped_attention(fields):
    p = BASE.replace(**fields)
    inputs = make_inputs(p, seed=5, device="cpu")
    out, lse = negative_controls.plain_attention(inputs)
    result = compare(p, out, lse, reference(inputs))
    assert result.passed, result.summary()


def test_a_window_as_long_as_the_sequence_is_no_window():
    plain = make_inputs(BASE, seed=2, device="cpu")
    wide = make_inputs(BASE.replace(window=max(BASE.seq_lens)), seed=2, device="cpu")
    a, b = reference(plain), reference(wide)
    assert torch.equal(a.out, b.out) and torch.equal(a.lse, b.lse)


def test_a_cap_far_above_every_score_is_no_cap():
    capped = BASE.replace(softcap=1.0e6)
    inputs = make_inputs(capped, seed=4, device="cpu")
    free = reference(make_inputs(BASE, seed=4, device="cpu"))
    result = compare(capped, free.out, free.lse.float(), reference(inputs))
    assert result.passed, result.summary()


@pytest.mark.parametrize("entry, fields", [
    ("window_one_too_wide", dict(window=16)),
    ("softcap_before_scale", dict(softcap=2.0)),
])
def test_the_mask_controls_are_caught(entry, fields):
    p = BASE.replace(**fields)
    inputs = make_inputs(p, seed=6, device="cpu")
    out, lse = inputs.new_outputs()
    getattr(negative_controls, entry)(inputs, out, lse).run()
    assert not compare(p, out, lse, reference(inputs)).passed


def test_implementations_without_the_axes_refuse_them():
    plain = DecodeProblem(8, 2, 64, (64, 64), dtype="bfloat16")  # what every backend takes
    for fields, word in ((dict(window=16), "window"), (dict(softcap=2.0), "soft-capped")):
        p = plain.replace(**fields)
        for impl in registry.all_impls():
            if impl.caps is not None and impl.unsupported(plain) is None and \
                    not (impl.caps.windows or impl.caps.softcaps):
                assert word in (impl.unsupported(p) or ""), impl.name


def _declaring_impls():
    """Implementations that declare a window and soft-capping and run on this machine."""
    return [i for i in registry.all_impls()
            if i.caps is not None and i.caps.windows and i.caps.softcaps and i.availability() is None
            and i.backend.mode() != "gpu"]


@pytest.mark.parametrize("impl", _declaring_impls(), ids=lambda i: i.name)
@pytest.mark.parametrize("fields, options", [
    (dict(window=40, softcap=3.0), {}),
    # many pieces a sequence, planned from the window's tile
    (dict(window=20, layout="dense"), {"num_splits": 6}),
    (dict(window=1, softcap=0.5, kv_dtype="float8_e4m3fn", kv_scale="head"), {"num_splits": 3}),
    (dict(softcap=2.0), {"num_splits": 6, "config": {"merge": "fused"}}),
], ids=["window-cap", "pieces-from-the-window", "one-token-fp8", "fused-merge"])
def test_declaring_implementations_match_the_oracle(impl, fields, options):
    p = BASE.replace(**fields)
    if impl.unsupported(p) or not set(options) <= set(impl.options) or \
            "merge" in options.get("config", {}) and "merge" not in impl.backend.space.names:
        pytest.skip(impl.unsupported(p) or "an option it does not take")
    inputs = make_inputs(p, seed=8, device="cpu")
    out, lse = inputs.new_outputs()
    impl.prepare(inputs, out, lse, **options).run()
    result = compare(p, out, lse, reference(inputs))
    assert result.passed, result.summary()


def test_a_split_plan_covers_the_window_only():
    """The split plan starts each sequence's pieces at the tile holding its window's start."""
    from impls import plan as planner
    p = BASE.replace(seq_lens=(4000, 300, 9), window=1000, layout="dense")
    inputs = make_inputs(p, seed=1, device="cpu")
    split_plan = planner.for_launch(inputs, 1, 64, num_splits=4)
    for b, (first, n) in enumerate(zip(p.window_starts, p.seq_lens)):
        pieces = split_plan.items[split_plan.items[:, 0] == b]
        assert pieces[:, 1].min() == first // 64 * 64 and pieces[:, 2].max() == n
        assert sum(int(e - s) for _, s, e, _ in pieces) == n - first // 64 * 64
