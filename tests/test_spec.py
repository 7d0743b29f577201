"""The spec itself: validation, input generation and poisoning, the oracle, the tolerance rule,
the workloads. (The implementations are tested by conformance/.)"""

from __future__ import annotations

import dataclasses
import json
import math

import impls  # noqa: F401  (CPU interpreters before any DSL import)
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from specs import workloads
from specs.inputs import POISON_V, make_inputs
from specs.problem import DecodeProblem, ProblemError
from specs.reference import reference
from specs.tolerance import compare

VALID = dict(num_q_heads=8, num_kv_heads=2, head_dim=64, seq_lens=[5, 17], layout="paged",
             page_size=16, dtype="bfloat16")

# field -> (an invalid value, what the message must say)
INVALID = {
    "num_kv_heads": (3, "num_kv_heads=3 must divide num_q_heads=8"),
    "num_q_heads": (0, "num_q_heads=0: must be >= 1"),
    "head_dim": (-64, "head_dim=-64"),
    "seq_lens": ([5, 0], "seq_lens[1]=0"),
    "layout": ("ragged", "layout='ragged'"),
    "page_size": (0, "page_size=0"),
    "dtype": ("float64", "dtype='float64'"),
    "sm_scale": (float("nan"), "sm_scale=nan"),
}


@pytest.mark.parametrize("field", sorted(INVALID))
def test_invalid_problem_names_parameter_and_rule(field):
    value, message = INVALID[field]
    with pytest.raises(ProblemError, match=message.replace("[", r"\[").replace("]", r"\]")):
        DecodeProblem.from_dict({**VALID, field: value})


@settings(max_examples=50, deadline=None)
@given(lens=st.lists(st.integers(-5, 3), min_size=1, max_size=6))
def test_any_nonpositive_length_is_rejected(lens):
    if min(lens) >= 1:
        DecodeProblem.from_dict({**VALID, "seq_lens": lens})
    else:
        with pytest.raises(ProblemError, match=f"seq_lens\\[{[n < 1 for n in lens].index(True)}\\]"):
            DecodeProblem.from_dict({**VALID, "seq_lens": lens})


def test_from_dict_unknown_and_missing_fields():
    with pytest.raises(ProblemError, match="unknown field.*'heads'"):
        DecodeProblem.from_dict({**VALID, "heads": 4})
    with pytest.raises(ProblemError, match="missing field.*'seq_lens'"):
        DecodeProblem.from_dict({k: v for k, v in VALID.items() if k != "seq_lens"})
    with pytest.raises(ProblemError, match="must be an integer"):
        DecodeProblem.from_dict({**VALID, "num_q_heads": True})


def test_round_trip_and_bytes():
    p = DecodeProblem.from_dict(VALID)
    assert DecodeProblem.from_dict(p.to_dict()) == p
    assert p.kv_bytes == 2 * (5 + 17) * 2 * 64 * 2
    assert p.max_pages_per_seq == 2 and p.group_size == 4


def _rows_via_table(inputs, b):
    p = inputs.problem
    t = torch.arange(p.seq_lens[b])
    pages = inputs.block_table[b, t // p.page_size].long()
    return inputs.k[pages, t % p.page_size], inputs.v[pages, t % p.page_size]


@pytest.mark.parametrize("page_size", [1, 3, 16, 64])
def test_paged_layout_holds_the_logical_cache_and_poison(page_size):
    p = DecodeProblem.from_dict({**VALID, "seq_lens": [1, 17, 40], "page_size": page_size})
    inputs = make_inputs(p, seed=3)
    dense = make_inputs(p.replace(layout="dense"), seed=3)  # the same logical cache
    used = set()
    for b, n in enumerate(p.seq_lens):
        k, v = _rows_via_table(inputs, b)
        assert torch.equal(k, dense.k[b, :n]) and torch.equal(v, dense.v[b, :n])
        pages = inputs.block_table[b, : p.pages_for(n)].tolist()
        used.update(pages)
        last, tail = pages[-1], n % page_size
        if tail:  # rows past the length in the last page: large finite V
            assert bool((inputs.v[last, tail:].float().abs() >= POISON_V * 0.99).all())
        spare = inputs.block_table[b, p.pages_for(n):].tolist()
        assert not set(spare) & used, "table padding must point at pages nobody owns"
    unused = sorted(set(range(inputs.k.shape[0])) - used)
    assert unused, "the pool keeps at least one unused page"
    assert bool(inputs.k[unused].isnan().all()) and bool(inputs.v[unused].isnan().all())
    assert sorted(used) != list(range(len(used))) or len(used) < 3, "pages are shuffled"


def test_dense_tail_poisoned_and_generation_seeded():
    p = DecodeProblem.from_dict({**VALID, "layout": "dense"})
    a, b, c = make_inputs(p, 1), make_inputs(p, 1), make_inputs(p, 2)
    assert torch.equal(a.q, b.q) and torch.equal(a.k, b.k) and not torch.equal(a.k, c.k)
    assert bool((a.v[0, 5:].float().abs() >= POISON_V * 0.99).all())
    other_poison = make_inputs(p, 1, poison_seed=99)
    assert torch.equal(other_poison.v[0, :5], a.v[0, :5])
    assert not torch.equal(other_poison.v[0, 5:], a.v[0, 5:])


def test_reference_against_a_plain_python_loop():
    p = DecodeProblem(4, 2, 8, (3, 5), layout="dense", dtype="float32", sm_scale=0.3)
    inputs = make_inputs(p, seed=11)
    ref = reference(inputs)
    q, k, v = (t.double().tolist() for t in (inputs.q, inputs.k, inputs.v))
    for b, n in enumerate(p.seq_lens):
        for h in range(p.num_q_heads):
            g = h // p.group_size
            s = [p.scale * sum(q[b][h][d] * k[b][t][g][d] for d in range(8)) for t in range(n)]
            m = max(s)
            lse = m + math.log(sum(math.exp(x - m) for x in s))
            out = [sum(math.exp(s[t] - lse) * v[b][t][g][d] for t in range(n)) for d in range(8)]
            assert ref.lse[b, h].item() == pytest.approx(lse, rel=1e-12)
            assert ref.out[b, h].tolist() == pytest.approx(out, rel=1e-9, abs=1e-12)


def _dtype_result(inputs, ref):
    return ref.out.to(inputs.q.dtype), ref.lse.float()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_tolerance_accepts_rounded_truth_and_rejects_bugs(dtype):
    p = DecodeProblem(8, 2, 64, (100, 37), layout="dense", dtype=dtype)
    inputs = make_inputs(p, seed=5)
    ref = reference(inputs)
    out, lse = _dtype_result(inputs, ref)
    assert compare(p, out, lse, ref).passed
    bad = out.clone()
    bad[1, 3, 7] = float("nan")
    c = compare(p, bad, lse, ref)
    assert not c.passed and c.n_nonfinite == 1 and "out(1, 3, 7)" in c.summary()
    assert not compare(p, out, lse + 1e-3, ref).passed  # LSE off by 1e-3
    assert not compare(p, out, lse / math.log(2), ref).passed  # log2 instead of ln


def _fp16_kernel(inputs):
    """What an fp16 tensor-core kernel computes: float32 scores, probabilities rounded to fp16
    (subnormals included) for P.V, float32 normaliser, the output rounded to fp16."""
    p = inputs.problem
    outs = []
    for b, n in enumerate(p.seq_lens):
        q = inputs.q[b].float().view(p.num_kv_heads, p.group_size, -1)
        k, v = inputs.k[b, :n].float(), inputs.v[b, :n].float()
        s = torch.einsum("hgd,lhd->hgl", q, k) * p.scale
        e = torch.exp(s - s.amax(-1, keepdim=True))
        out = torch.einsum("hgl,lhd->hgd", e.half().float(), v) / e.sum(-1, keepdim=True)
        outs.append(out.reshape(p.num_q_heads, -1))
    return torch.stack(outs).half()


def test_tolerance_allows_fp16_subnormal_probabilities():
    """A spiky fp16 softmax (one key dominates, most others subnormal after rounding) whose
    dominant key has a tiny V row (the failing H100 draw): the output is ~1e-5, yet the rounding
    of the other tokens' probabilities is absolute, times V rows of ~1. The rule allows what an
    fp16 kernel computes there; the same output with one token dropped still fails."""
    p = DecodeProblem(8, 8, 64, (400,), layout="dense", dtype="float16")
    inputs = make_inputs(p, seed=3)
    inputs.q.mul_(2)  # spiky scores: the top key dominates, many others fall below 2^-14
    scores = torch.einsum("hd,lhd->hl", inputs.q[0].float(), inputs.k[0, :400].float())
    for h, top in enumerate(scores.argmax(-1).tolist()):
        inputs.v[0, top, h].mul_(1e-4)  # the dominant row's values: outputs of ~1e-5
    ref = reference(inputs)
    out = _fp16_kernel(inputs)
    assert compare(p, out, ref.lse.float(), ref).passed
    strict = dataclasses.replace(ref, v_subnormal=torch.zeros_like(ref.v_subnormal))
    assert not compare(p, out, ref.lse.float(), strict).passed  # what the rule used to say
    dropped = reference(dataclasses.replace(inputs, problem=p.replace(seq_lens=(399,))))
    assert not compare(p, dropped.out.half(), dropped.lse.float(), ref).passed


def test_tolerance_rejects_one_dropped_token_of_a_hundred():
    p = DecodeProblem(8, 2, 64, (100,), layout="dense", dtype="bfloat16")
    inputs = make_inputs(p, seed=5)
    ref = reference(inputs)
    # the same cache with its last token dropped
    dropped = reference(dataclasses.replace(inputs, problem=p.replace(seq_lens=(99,))))
    c = compare(p, dropped.out.to(torch.bfloat16), dropped.lse.float(), ref)
    assert not c.passed and c.n_bad > 0


def test_named_workloads_are_valid_and_ragged_is_ragged():
    for name in workloads.WORKLOADS:
        problems = workloads.named([name])
        assert problems and all(isinstance(p, DecodeProblem) for p in problems)
    ragged = workloads.named(["ragged"])
    assert all(not p.uniform for p in ragged)
    assert ragged == workloads.named(["ragged"]), "the same name always means the same batch"
    lens = workloads.ragged_lengths(1000, 1024, 32768, seed=1)
    assert min(lens) >= workloads.RAGGED_MIN and max(lens) <= 32768
    assert 700 < sorted(lens)[500] < 1400, "median near 1024"
    with pytest.raises(ProblemError, match="unknown workload 'nope'"):
        workloads.named(["nope"])


def test_workload_file(tmp_path):
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"problems": [VALID, {**VALID, "layout": "dense"}]}))
    assert [p.layout for p in workloads.load_file(path)] == ["paged", "dense"]
    path.write_text(json.dumps([{**VALID, "num_kv_heads": 3}]))
    with pytest.raises(ProblemError, match=r"problems\[0\]: num_kv_heads=3 must divide"):
        workloads.load_file(path)
    path.write_text("{not json")
    with pytest.raises(ProblemError, match="cannot read JSON"):
        workloads.load_file(path)



def test_heldout_shapes_are_seeded_and_cover_the_axes():
    from specs.inputs import input_bytes

    a, c = workloads.heldout_problems(5), workloads.heldout_problems(6)
    assert [p.to_dict() for p in a] == [p.to_dict() for p in workloads.heldout_problems(5)]
    assert [p.to_dict() for p in a] != [p.to_dict() for p in c]
    drawn = a + c
    for p in drawn:
        assert 1 <= p.group_size <= 16 and 64 <= p.head_dim <= 256 and p.head_dim % 16 == 0
        assert p.page_size in workloads.HELDOUT_PAGES and 1 <= p.batch <= 512
        assert all(n % 16 for n in p.seq_lens), p.label()
        assert input_bytes(p) <= 1.1 * workloads.HELDOUT_KV_BYTES, p.label()
    for axis in (lambda p: p.layout, lambda p: p.dtype, lambda p: p.uniform):
        assert len({axis(p) for p in drawn}) == 2
    assert [p.to_dict() for p in workloads.named(["heldout:5"])] == [p.to_dict() for p in a]
    assert workloads.named(["heldout"])[0].name.startswith("heldout0.0 ")
    with pytest.raises(ProblemError, match="heldout:N needs a seed"):
        workloads.named(["heldout:x"])
