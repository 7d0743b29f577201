"""An fp8 KV cache in the spec (specs.problem.Cache.kv_dtype): the problem's rules, the inputs'
scales and poison, the oracle's exact dequantisation, and the tolerance judging a correct and a
wrong reading of the scales."""

from __future__ import annotations

import dataclasses

import impls  # noqa: F401  (CPU modes before any DSL import)
import pytest
import torch

from conformance import negative_controls as nc
from harness import cases
from specs import workloads
from specs.inputs import TORCH_DTYPES, make_inputs, validate_inputs
from specs.problem import KV_DTYPES, DecodeProblem, ProblemError
from specs.reference import reference
from specs.tolerance import compare


def fp8(kv_dtype="float8_e4m3fn", kv_scale="head", layout="paged", **fields):
    base = dict(num_q_heads=8, num_kv_heads=4, head_dim=64, seq_lens=(70, 33, 17))
    return DecodeProblem(**{**base, **fields}, layout=layout, kv_dtype=kv_dtype, kv_scale=kv_scale)


def run(entry, inputs):
    """A CPU implementation of the controls' module on ``inputs``: (out, lse)."""
    out, lse = inputs.new_outputs()
    getattr(nc, entry)(inputs, out, lse).run()
    return out, lse


@pytest.mark.parametrize("bad,rule", [
    (dict(kv_dtype="int8"), "kv_dtype='int8': must be one of"),
    (dict(kv_scale="row"), "kv_scale='row': must be one of"),
    (dict(dtype="float32"), "a quantised cache is read with a bfloat16 or float16 query"),
])
def test_bad_fp8_problems_name_the_parameter(bad, rule):
    with pytest.raises(ProblemError, match=rule.replace("(", r"\(")):
        fp8(**bad)


def test_fp8_bytes_label_and_round_trip():
    p = fp8()
    assert p.kv_itemsize == 1 and p.itemsize == 2
    assert p.kv_bytes == 2 * 120 * 4 * 64  # one byte a value
    assert "kv-e4m3/head" in p.label() and "kv-e5m2" in fp8("float8_e5m2", "tensor").label()
    assert DecodeProblem.from_dict(p.to_dict()) == p
    old = {k: v for k, v in p.to_dict().items() if k not in ("kv_dtype", "kv_scale")}
    assert DecodeProblem.from_dict(old).kv_dtype is None  # a row written before the field
    assert workloads.with_kv_dtype([p], "none")[0].kv_dtype is None


@pytest.mark.parametrize("kv_dtype", KV_DTYPES)
@pytest.mark.parametrize("layout", ["dense", "paged"])
def test_inputs_hold_fp8_values_scales_and_poison(kv_dtype, layout):
    p = fp8(kv_dtype, layout=layout)
    x = make_inputs(p, 3, "cpu")
    validate_inputs(x)
    assert x.k.dtype == x.v.dtype == TORCH_DTYPES[kv_dtype] and x.q.dtype == torch.bfloat16
    assert x.k_scale.shape == (4,) and len(set(x.k_scale.tolist())) > 1  # one per head, distinct
    for s in (*x.k_scale.tolist(), *x.v_scale.tolist()):  # m / 8 x 2^-e: 4-bit significands
        m, e = torch.frexp(torch.tensor(s))
        assert float(m) * 16 == int(float(m) * 16)
    # V past a sequence's end: the dtype's largest finite value, x [1/2, 1)
    _, v = x.rows(2, 17, 24) if layout == "paged" else (None, x.v[2, 17:24])
    biggest = torch.finfo(TORCH_DTYPES[kv_dtype]).max
    assert (v.float().abs() >= biggest / 2).all()
    if layout == "paged":  # unused pages NaN, as in 16-bit
        assert torch.isnan(x.k.float()).any()
    per_tensor = make_inputs(fp8(kv_dtype, "tensor", layout), 3, "cpu")
    assert per_tensor.k_scale.shape == (1,)


def test_bad_scales_are_refused_before_any_launch():
    x = make_inputs(fp8(), 0, "cpu")
    for name, bad, rule in (("k_scale", torch.ones(3), r"k_scale.shape=\(3,\): expected \(4,\)"),
                            ("v_scale", torch.tensor([1.0, -1.0, 1.0, 1.0]), r"v_scale\[1\]=-1.0"),
                            ("k_scale", torch.tensor([1.0, float("nan"), 1.0, 1.0]), r"k_scale\[1\]=nan"),
                            ("k_scale", None, "k_scale: required")):
        with pytest.raises(ProblemError, match=rule):
            validate_inputs(dataclasses.replace(x, **{name: bad}))
    with pytest.raises(ProblemError, match="k.dtype=torch.bfloat16"):
        validate_inputs(dataclasses.replace(x, k=x.k.to(torch.bfloat16)))


@pytest.mark.parametrize("kv_dtype", KV_DTYPES)
def test_the_oracle_dequantises_exactly(kv_dtype):
    """An fp8 cache gives the result of the 16-bit cache holding its values (exact in bf16:
    4-bit scale significands); K's values doubled and its scale halved change nothing (doubling
    is exact in fp8 below its largest value; halving is not, for its subnormals)."""
    p = fp8(kv_dtype)
    x = make_inputs(p, 1, "cpu")
    ref = reference(x)
    k16, v16 = x.values64(x.k, x.v)
    exact = dataclasses.replace(x, problem=p.replace(kv_dtype=None), k=k16.to(torch.bfloat16),
                                v=v16.to(torch.bfloat16), k_scale=None, v_scale=None)
    real = ~k16.isnan()  # the unused pages' NaN aside, bf16 holds every value exactly
    assert torch.equal(exact.k.double()[real], k16[real])
    ref16 = reference(exact)
    assert torch.equal(ref.out, ref16.out) and torch.equal(ref.lse, ref16.lse)
    doubled = dataclasses.replace(x, k=(x.k.float() * 2).to(x.k.dtype), k_scale=x.k_scale / 2)
    assert torch.equal(reference(doubled).out, ref.out)


def test_a_correct_reading_passes_and_swapped_head_scales_fail():
    """The tolerance on fp8: a float32 kernel that applies each head's scale passes; one that
    applies head 1's scale to head 0 (and back) fails, as does one ignoring the scales."""
    x = make_inputs(fp8(), 2, "cpu")
    ref = reference(x)
    good_out, good_lse = x.new_outputs()
    nc._per_sequence(x, good_out, good_lse, lambda b: x.problem.seq_lens[b]).run()
    assert compare(x.problem, good_out, good_lse, ref).passed
    assert not compare(x.problem, *run("swapped_head_scales", x), ref).passed
    raw_out, raw_lse = x.new_outputs()  # the stored values read as they are: scales of 1
    unscaled = dataclasses.replace(x, k_scale=torch.ones_like(x.k_scale),
                                   v_scale=torch.ones_like(x.v_scale))
    nc._per_sequence(unscaled, raw_out, raw_lse, lambda b: x.problem.seq_lens[b]).run()
    assert not compare(x.problem, raw_out, raw_lse, ref).passed


def test_saved_fp8_cases_replay(tmp_path):
    x = make_inputs(fp8(layout="dense"), 0, "cpu")
    ref = reference(x)
    out, lse = ref.out.to(torch.bfloat16), ref.lse.float()
    cases.save(tmp_path, "ref/one-pass", x, out, lse,
               {"status": "PASS", "out_err_ratio": 0.0, "lse_err_ratio": 0.0})
    loaded = cases.load_inputs(next(tmp_path.iterdir()), torch.device("cpu"))
    assert torch.equal(loaded.k_scale, x.k_scale) and loaded.k.dtype == x.k.dtype
    found, disagree, refused = cases.replay(tmp_path)
    assert not disagree and not refused and found[0]["replay"] == "PASS"


@pytest.mark.parametrize("kv_dtype", KV_DTYPES)
def test_a_row_past_the_end_is_seen_at_serving_lengths(kv_dtype):
    """V's poison stays far above every real V in fp8 too (large V scales): one row read past
    the end of an 8000-token sequence fails the tolerance."""
    x = make_inputs(fp8(kv_dtype, num_kv_heads=2, seq_lens=(8000,), layout="dense"), 5, "cpu")
    out, lse = x.new_outputs()
    nc._per_sequence(x, out, lse, lambda b: 8001).run()
    assert not compare(x.problem, out, lse, reference(x)).passed


def test_kv_dtype_option_leaves_float32_problems_and_unquantised_scales_alone():
    fp32, bf16 = DecodeProblem(8, 2, 64, (5,), dtype="float32"), DecodeProblem(8, 2, 64, (5,))
    got = workloads.with_kv_dtype([fp32, bf16], "float8_e5m2", "head")
    assert got[0] == fp32 and got[1].kv_dtype == "float8_e5m2" and got[1].kv_scale == "head"
    assert DecodeProblem(8, 2, 64, (5,), kv_scale="head") == bf16  # no scales: one spelling
