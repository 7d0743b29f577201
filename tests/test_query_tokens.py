"""Multi-token queries (``q_len``) on the CPU: validation naming the parameter and the rule,
shapes and bytes, the float64 oracle against a plain float32 attention over each query token's
causal span (with a window, a cap, an fp8 cache), the oracle's q_len = n against n single-token
oracles on the prefixes, the off-by-one causal control caught, and implementations that take one
token refusing more."""

import pytest
import torch

import impls  # noqa: F401  (first: CPU modes before any DSL import)
from conformance import negative_controls
from impls import registry
from specs.inputs import make_inputs, validate_inputs
from specs.problem import DecodeProblem, ProblemError
from specs.reference import reference
from specs.tolerance import compare

BASE = DecodeProblem(8, 2, 64, (70, 9, 33), layout="paged", page_size=16, dtype="float16",
                     q_len=4)


@pytest.mark.parametrize("fields, match", [
    (dict(q_len=0), "q_len=0: must be >= 1"),
    (dict(q_len=17), "q_len=17: must be <= 16"),
    (dict(q_len=2.0), "q_len=2.0: must be an integer"),
    (dict(q_len=10), r"seq_lens\[1\]=9 < q_len=10"),
])
def test_bad_query_lengths_are_refused_naming_them(fields, match):
    with pytest.raises(ProblemError, match=match):
        BASE.replace(**fields)


def test_query_rows_spans_and_bytes():
    p = BASE.replace(window=8)
    assert p.q_rows == 12
    assert [p.query_span(1, i) for i in range(4)] == [(0, 6), (0, 7), (0, 8), (1, 9)]
    assert p.query_span(0) == (62, 70)
    assert p.window_starts == (59, 0, 22)  # the first query token's window: what must be read
    assert p.attended_lens == (11, 9, 11)
    one = BASE.replace(q_len=1)  # no window: the same tokens read, 3 more query rows a sequence
    assert BASE.bytes_moved - one.bytes_moved == 3 * BASE.query.bytes(BASE.batch) // 4
    assert " q4 " in p.label() and " q" not in one.label().split("/")[0]
    assert DecodeProblem.from_dict(p.to_dict()) == p
    inputs = make_inputs(p, seed=1, device="cpu")
    out, lse = inputs.new_outputs()
    assert inputs.q.shape == out.shape == (12, 8, 64) and lse.shape == (12, 8)
    validate_inputs(inputs, out, lse)
    with pytest.raises(ProblemError, match=r"out.shape=\(3, 8, 64\): expected \(12, 8, 64\)"):
        validate_inputs(inputs, out[:3], lse)


def test_the_first_query_row_is_the_single_token_query():
    """Query token 0 is drawn as a plain decode's query: q_len=1 inputs are what they were."""
    many = make_inputs(BASE, seed=3, device="cpu")
    one = make_inputs(BASE.replace(q_len=1), seed=3, device="cpu")
    assert torch.equal(many.q[::4], one.q)
    assert not torch.equal(many.q[1::4], one.q)


@pytest.mark.parametrize("fields", [
    dict(), dict(window=5), dict(window=1, softcap=0.75),
    dict(q_len=16, layout="dense", seq_lens=(70, 16, 33)),
    dict(softcap=2.0, kv_dtype="float8_e4m3fn", kv_scale="head"),
], ids=["causal", "window", "one-token-window-cap", "sixteen-dense", "fp8-cap"])
def test_the_oracle_matches_a_plain_causal_attention(fields):
    p = BASE.replace(**fields)
    inputs = make_inputs(p, seed=5, device="cpu")
    out, lse = negative_controls.plain_attention(inputs)
    result = compare(p, out, lse, reference(inputs))
    assert result.passed, result.summary()


def test_the_oracle_is_single_token_oracles_on_the_prefixes():
    p = BASE.replace(window=6, softcap=3.0)
    n = p.q_len
    multi = make_inputs(p, seed=7, device="cpu")
    ref = reference(multi)
    for i in range(n):
        single = make_inputs(p.replace(q_len=1, seq_lens=tuple(x - n + i + 1 for x in p.seq_lens)),
                             seed=7, device="cpu")
        single.q.copy_(multi.q[i::n])
        one = reference(single)
        torch.testing.assert_close(ref.out[i::n], one.out, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(ref.lse[i::n], one.lse, rtol=1e-12, atol=1e-12)


def test_the_causal_control_is_caught():
    inputs = make_inputs(BASE, seed=6, device="cpu")
    out, lse = inputs.new_outputs()
    negative_controls.causal_off_by_one(inputs, out, lse).run()
    assert not compare(BASE, out, lse, reference(inputs)).passed
    one = make_inputs(BASE.replace(q_len=1), seed=6, device="cpu")  # right with one token
    out, lse = one.new_outputs()
    negative_controls.causal_off_by_one(one, out, lse).run()
    assert compare(one.problem, out, lse, reference(one)).passed


def test_implementations_taking_one_token_refuse_more():
    plain = DecodeProblem(8, 2, 64, (64, 64), dtype="bfloat16")
    for impl in registry.all_impls():
        if impl.caps is not None and impl.unsupported(plain) is None and impl.caps.max_q_len == 1:
            assert "q_len 4" in (impl.unsupported(plain.replace(q_len=4)) or ""), impl.name


@pytest.mark.parametrize("layout", ["dense", "paged"])
def test_triton_one_pass_decodes_every_sequence_head_and_row_block_of_its_grid(layout):
    """Every program of the one-pass grid: 3 sequences of other lengths, 3 KV heads, 128 rows a
    head (16 x 8 tokens) in blocks of 64; a block written to another sequence's, head's or rows'
    place fails the oracle, in the interpreter."""
    pytest.importorskip("triton")
    from conformance.checks import check

    problem = DecodeProblem(48, 3, 128, (40, 17, 29), layout=layout, page_size=16, dtype="float16",
                            q_len=8)
    impl = next(i for i in registry.all_impls() if i.backend.name == "triton"
                and i.algorithm == "one-pass" and i.unsupported(problem) is None)
    checked = check(impl, make_inputs(problem, seed=5, device="cpu"))
    assert checked.run.launch.config["block_h"] < 128  # several row blocks a head
    assert checked.comparison.passed, checked.comparison.summary()


@pytest.mark.parametrize("variant, options", [("one-pass", {}), ("split-k", {"num_splits": 3})])
def test_triton_wide_row_blocks_match_the_oracle(monkeypatch, variant, options):
    """Triton's 128-row programs on two warpgroups at head dim 160 (K/V beyond L2: here an L2 of
    none), 160 rows of a KV head (a group of 20 x 8 tokens) in two blocks, the second partly
    padding, in the interpreter."""
    pytest.importorskip("triton")
    from conformance.checks import check
    from impls import common

    monkeypatch.setattr(common, "L2_BYTES", 0)
    problem = DecodeProblem(20, 1, 160, (150, 17), layout="paged", page_size=16, dtype="float16",
                            q_len=8)
    impl = next(i for i in registry.all_impls() if i.backend.name == "triton" and i.algorithm == variant)
    checked = check(impl, make_inputs(problem, seed=3, device="cpu"), options=options)
    assert (checked.run.launch.config["block_h"], checked.run.launch.config["num_warps"]) == (128, 8)
    assert checked.comparison.passed, checked.comparison.summary()
    if variant == "split-k":  # the long sequence in pieces, merged
        assert checked.run.launch.config["merges"] == 1
