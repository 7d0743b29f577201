"""The vendor backends' host-side pieces, on the CPU: registry entries and their reasons,
FA4's finite-tail precondition, FlashInfer's base-2 LSE convention, head-dim sets in fit(), and
the vendor ratios and side-by-side table of the results."""

from __future__ import annotations

import math
import sys

import pytest
import torch

import impls  # noqa: F401  (first: CPU modes before any DSL import)
from conformance.checks import check
from conformance.strategies import fit
from harness import results
from impls import registry
from impls.flash_attn4.fa4 import nonfinite_tail
from impls.registry import Backend, Capabilities, Impl, Launch
from specs.inputs import make_inputs
from specs.problem import DecodeProblem
from specs.reference import reference
from specs.tolerance import compare


def test_vendor_cells_and_their_reasons():
    assert registry.get("flash_attn4/split-k").no_kernel("dense") == \
        "flash-attn-4 has no split-KV on sm90"
    assert registry.get("torch-cudnn/dense").no_kernel("paged") == \
        "torch 2.11 has no paged-KV attention kernel"
    for name in ("flash_attn4/dense", "flash_attn4/paged", "flashinfer/dense", "flashinfer/paged",
                 "flashinfer/split-k", "torch-cudnn/dense", "torch-fa2/dense"):
        impl = registry.get(name)
        layout = name.partition("/")[2]
        assert layout not in ("dense", "paged") or layout in impl.layouts, name
        assert impl.backend.vendor and impl.allocates_outputs, name
        if not torch.cuda.is_available():
            assert impl.availability() == "no CUDA GPU", name
    assert not any(i.backend.vendor for i in registry.all_impls()
                   if i.backend.name in ("triton", "gluon", "cupy", "numba"))


# ---- FA4: rows past the length in the last tile / page must be finite ------------------------
@pytest.mark.parametrize("layout", ["dense", "paged"])
def test_conformance_inputs_meet_fa4s_precondition(layout):
    p = DecodeProblem(8, 2, 64, (15, 16, 17, 40), layout=layout, page_size=16)
    assert nonfinite_tail(make_inputs(p, 3)) is None  # finite poison past every length


def test_nan_in_a_last_page_tail_is_named_nan_elsewhere_is_allowed():
    p = DecodeProblem(8, 2, 64, (15, 16, 40), layout="paged", page_size=16)
    inputs = make_inputs(p, 3)
    # pages no sequence owns hold NaN already (FA4 never loads them): fine
    assert torch.isnan(inputs.k).any() and nonfinite_tail(inputs) is None
    last = int(inputs.block_table[2, 2])  # seq 2 (40 tokens): its last page holds tokens 32..47
    inputs.v[last, 7] = float("nan")  # token 39: inside the length, not the precondition's business
    assert nonfinite_tail(inputs) is None
    inputs.k[last, 12] = float("inf")  # token 44: past the length, in the last page
    why = nonfinite_tail(inputs)
    assert why is not None and "seq_lens[2]=40" in why and f"page {last}" in why
    inputs.k[last, 12] = 0.0
    inputs.v[int(inputs.block_table[0, 0]), 15] = float("nan")  # seq 0 (15 tokens): row 15
    assert "seq_lens[0]=15" in nonfinite_tail(inputs)
    assert nonfinite_tail(make_inputs(p.replace(seq_lens=(16, 32, 48)), 3)) is None  # full pages


def test_dense_tail_rows_checked_within_a_tile():
    p = DecodeProblem(8, 2, 64, (5, 300), layout="dense")
    inputs = make_inputs(p, 1)
    assert nonfinite_tail(inputs) is None
    inputs.v[0, 300] = float("nan")  # 295 rows past seq 0's length: beyond any FA4 tile
    assert nonfinite_tail(inputs) is None
    inputs.v[0, 100] = float("nan")  # inside the 256-row window past it
    assert "seq_lens[0]=5" in nonfinite_tail(inputs)


# ---- a library whose LSE is base 2 (FlashInfer) ----------------------------------------------
def _correct_but_base2(inputs, out, lse):
    ref = reference(inputs)
    o = ref.out.to(inputs.q.dtype)
    lse2 = (ref.lse / math.log(2.0)).float()
    return Launch(lambda: (o, lse2), lse_base2=inputs.problem.seq_lens[0] != 7)


def test_a_declared_base2_lse_is_converted_by_the_check_not_by_run():
    backend = Backend(name="base2", summary="", requires=("torch",), cpu_mode="cpu")
    impl = Impl(backend, "one-pass", __name__, Capabilities(frozenset({"dense"})),
                entry="_correct_but_base2", allocates_outputs=True)
    p = DecodeProblem(4, 2, 64, (9, 30))
    checked = check(impl, make_inputs(p, 0))
    assert checked.comparison.passed
    ref = reference(make_inputs(p, 0))  # what run() returns, the timed call, stays base 2
    assert torch.allclose(checked.run.launch.run()[1].double(), ref.lse / math.log(2.0), rtol=1e-6)
    # control: the same base-2 LSE without the declaration is caught
    undeclared = check(impl, make_inputs(p.replace(seq_lens=(7, 30)), 0)).comparison
    assert not undeclared.passed and undeclared.lse_err_ratio > 1


def test_fit_moves_head_dim_into_an_explicit_set():
    flashinfer = registry.get("flashinfer/paged")
    for given, expected in ((96, 128), (64, 64), (256, 256), (40, 64)):
        p = DecodeProblem(8, 2, given, (5,), layout="paged", page_size=16)
        assert fit(p, flashinfer).head_dim == expected
    assert "head_dim 96 (handles: 64, 128, 256)" in flashinfer.unsupported(
        DecodeProblem(8, 2, 96, (5,), layout="paged"))


# ---- results: the fastest vendor kernel per problem, and the side-by-side table --------------
def _row(impl, problem, us, status="PASS", vendor=False):
    backend, variant = impl.split("/")
    return {"impl": impl, "backend": backend, "variant": variant, "problem": problem,
            "status": status, "median_us": us if status == "PASS" else None, "vendor": vendor,
            "pct_peak_bw": 50.0 if us else None, "spec": {"label": problem}}


def test_vendor_ratio_is_against_the_fastest_passing_vendor_kernel_of_the_same_problem():
    rows = [_row("torch-cudnn/dense", "A dense", 100.0, vendor=True),
            _row("flash_attn4/dense", "A dense", 80.0, vendor=True),
            _row("flashinfer/dense", "A dense", 50.0, status="FAIL", vendor=True),  # no baseline
            _row("triton/dense", "A dense", 40.0),
            _row("triton/paged", "A paged", 60.0),  # no vendor timed on this problem
            _row("flash_attn4/paged", "A paged", None, status="UNSUPPORTED", vendor=True)]
    results.add_vendor_ratios(rows)
    triton = rows[3]
    assert triton["vendor_best"] == "flash_attn4/dense" and triton["vs_vendor"] == 2.0
    assert rows[0]["vs_vendor"] == 0.8 and rows[1]["vs_vendor"] == 1.0
    assert rows[4]["vs_vendor"] is None and rows[4]["vendor_best"] is None
    header, body = results.side_by_side(rows)
    assert header[:2] == ["problem", "fastest vendor (us)"]
    assert header.index("triton") < header.index("flash_attn4")  # DSLs first, then vendors
    line = dict(zip(header, body[0]))
    assert line["fastest vendor (us)"] == "flash_attn4/dense 80.0"
    assert line["triton"] == "40.0 [d] 50% 2.00x"
    assert line["flashinfer"] == "FAIL"


def test_declared_rounded_sum_lse_bound_is_u_more_and_no_looser():
    from specs.tolerance import UNIT_ROUNDOFF, compare

    p = DecodeProblem(8, 2, 64, (40, 7), dtype="bfloat16")
    inputs = make_inputs(p, 2)
    ref = reference(inputs)
    out = ref.out.to(inputs.q.dtype)
    u = UNIT_ROUNDOFF["bfloat16"]
    near = (ref.lse + 0.5 * u).float()  # what a normaliser of rounded P can do (<= u)
    assert not compare(p, out, near, ref).passed  # beyond the float32 rule ...
    assert compare(p, out, near, ref, lse_rounded_sum=True).passed  # ... within the declared one
    far = (ref.lse + 2 * u).float()  # a real error (one token of ~128 dropped) is still caught
    assert not compare(p, out, far, ref, lse_rounded_sum=True).passed


@pytest.mark.parametrize("layout", ["dense", "paged"])
def test_flashinfer_csr_form_addresses_exactly_each_sequences_rows(layout):
    from impls.flashinfer.decode import _csr

    p = DecodeProblem(8, 2, 64, (15, 16, 100, 1), layout=layout, page_size=16)
    inputs = make_inputs(p, 0)
    dense = make_inputs(p.replace(layout="dense"), 0)  # the same cache, read without any table
    indptr, indices, last, page_size, (k, v) = _csr(inputs)
    assert indptr.dtype == indices.dtype == last.dtype == torch.int32
    if layout == "dense":  # a view of the dense cache, pages small enough to split the KV axis
        assert k.data_ptr() == inputs.k.data_ptr() and page_size == 64  # 164 rows -> 192
    for b, n in enumerate(p.seq_lens):
        pages = indices[indptr[b]:indptr[b + 1]].long()
        assert int(last[b]) == n - (len(pages) - 1) * page_size and 1 <= int(last[b]) <= page_size
        for cache, rows in zip((k, v), (dense.k[b, :n], dense.v[b, :n])):
            assert torch.equal(cache[pages].flatten(0, 1)[:n], rows)


# ---- FlashAttention-3 (vLLM's build): how it is found and what it says when it cannot be --------
def test_fa3_cells_and_unavailable_reasons(monkeypatch):
    from impls.flash_attn3 import fa3

    for name in ("flash_attn3/dense", "flash_attn3/paged", "flash_attn3/split-k"):
        impl = registry.get(name)
        assert impl.backend.vendor and not impl.allocates_outputs  # FA3 writes the caller's out
        if not torch.cuda.is_available():
            assert impl.availability() == "no CUDA GPU", name
    assert registry.get("flash_attn3/split-k").caps.max_splits == 256
    real_find_spec = fa3.importlib.util.find_spec
    monkeypatch.setattr(fa3.importlib.util, "find_spec",
                        lambda name, *a: None if name == "vllm" else real_find_spec(name, *a))
    with pytest.raises(registry.Unavailable, match=r"package 'vllm' not installed .*--no-deps vllm"):
        fa3.probe()
    monkeypatch.setattr(fa3.importlib.util, "find_spec", lambda name, *a: object())
    monkeypatch.setattr(fa3.torch.cuda, "get_device_capability", lambda *a: (8, 0))
    with pytest.raises(registry.Unavailable, match=r"Hopper \(sm90\) only \(this GPU: sm80\)"):
        fa3.probe()


def test_fa3_loads_without_running_vllms_own_init(tmp_path, monkeypatch):
    """A vLLM installed without its dependencies: its __init__ fails, vllm_flash_attn loads."""
    from impls.flash_attn3 import fa3

    (tmp_path / "vllm" / "vllm_flash_attn").mkdir(parents=True)
    (tmp_path / "vllm" / "__init__.py").write_text("raise ImportError('No module named transformers')\n")
    (tmp_path / "vllm" / "vllm_flash_attn" / "__init__.py").write_text("LOADED = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("vllm", "vllm.vllm_flash_attn"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    try:
        assert fa3.load().LOADED
        assert not hasattr(sys.modules["vllm"], "__file__")  # the bare stand-in, not vllm's own
    finally:
        for name in ("vllm", "vllm.vllm_flash_attn"):
            sys.modules.pop(name, None)


# ---- FA4's adapter against a CPU stand-in of FA4's documented semantics ------------------------
def _fa_attention(q, k, v, lengths, softmax_scale, causal, window_size, softcap):
    """FlashAttention's forward as its interface documents it, in float32 on the CPU: q ``[B, Sq,
    Hq, D]``, k/v lists of each sequence's rows ``[L, Hkv, D]``; the causal mask and the window
    aligned to the bottom right (query row i of Sq sits at key position L - Sq + i), the window
    ``(left, right)`` counting keys before and after it, the cap on the scaled scores. Returns
    out ``[B, Sq, Hq, D]`` and lse ``[B, Hq, Sq]``."""
    B, Sq, Hq, D = q.shape
    out = torch.empty(B, Sq, Hq, D)
    lse = torch.empty(B, Hq, Sq)
    left, right = window_size
    right = 0 if causal else right
    for b in range(B):
        L = int(lengths[b])
        kb = k[b].float().repeat_interleave(Hq // k[b].shape[1], dim=1)  # [L, Hq, D]
        vb = v[b].float().repeat_interleave(Hq // v[b].shape[1], dim=1)
        s = torch.einsum("ihd,jhd->hij", q[b].float(), kb) * softmax_scale  # [Hq, Sq, L]
        if softcap:
            s = softcap * torch.tanh(s / softcap)
        pos = torch.arange(Sq)[:, None] + L - Sq
        j = torch.arange(L)[None, :]
        keep = torch.ones(Sq, L, dtype=torch.bool)
        if right is not None:
            keep &= j <= pos + right
        if left is not None:
            keep &= j >= pos - left
        s = s.masked_fill(~keep, float("-inf"))
        lse[b] = torch.logsumexp(s, -1)
        out[b] = torch.einsum("hij,jhd->ihd", torch.softmax(s, -1), vb)
    return out.to(q.dtype), lse


def _fake_fa4(monkeypatch):
    def rows(k, v, seqused_k, page_table):
        if page_table is None:
            return [k[b, :int(n)] for b, n in enumerate(seqused_k)], \
                   [v[b, :int(n)] for b, n in enumerate(seqused_k)]
        ps = k.shape[1]
        pages = [page_table[b, :-(-int(n) // ps)].long() for b, n in enumerate(seqused_k)]
        return ([k[p].flatten(0, 1)[:int(n)] for p, n in zip(pages, seqused_k)],
                [v[p].flatten(0, 1)[:int(n)] for p, n in zip(pages, seqused_k)])

    def flash_attn_func(q, k, v, softmax_scale=None, causal=False, window_size=(None, None),
                        softcap=0.0, num_splits=1, return_lse=False):
        assert num_splits == 1 and return_lse
        lens = [k.shape[1]] * k.shape[0]
        return _fa_attention(q, list(k), list(v), lens, softmax_scale, causal, window_size, softcap)

    def flash_attn_varlen_func(q, k, v, cu_seqlens_q=None, max_seqlen_q=None, max_seqlen_k=None,
                               seqused_k=None, page_table=None, softmax_scale=None, causal=False,
                               window_size=(None, None), softcap=0.0, num_splits=1, return_lse=False):
        assert num_splits == 1 and return_lse and seqused_k is not None
        ks, vs = rows(k, v, seqused_k, page_table)
        if cu_seqlens_q is None:  # q [B, Sq, Hq, D]
            return _fa_attention(q, ks, vs, seqused_k, softmax_scale, causal, window_size, softcap)
        B, n = len(ks), max_seqlen_q  # varlen queries of one length each here: [B x n, Hq, D]
        assert torch.equal(cu_seqlens_q, torch.arange(B + 1, dtype=torch.int32) * n)
        o, lse = _fa_attention(q.view(B, n, *q.shape[1:]), ks, vs, seqused_k, softmax_scale,
                               causal, window_size, softcap)
        return o.flatten(0, 1), lse.permute(1, 0, 2).flatten(1)  # [Hq, total_q], FA's varlen LSE

    cute = type(sys)("flash_attn.cute")
    cute.flash_attn_func, cute.flash_attn_varlen_func = flash_attn_func, flash_attn_varlen_func
    utils = type(sys)("flash_attn.cute.cute_dsl_utils")
    utils.maybe_contiguous = lambda t: t
    for name, module in (("flash_attn", type(sys)("flash_attn")), ("flash_attn.cute", cute),
                         ("flash_attn.cute.cute_dsl_utils", utils)):
        monkeypatch.setitem(sys.modules, name, module)


@pytest.mark.parametrize("problem", [
    DecodeProblem(8, 2, 64, (40, 40), dtype="float16", window=7, softcap=2.0),  # flash_attn_func
    DecodeProblem(8, 2, 64, (40, 17, 33), dtype="float16", window=9),  # dense ragged
    DecodeProblem(8, 2, 64, (40, 17, 33), layout="paged", page_size=16, softcap=1.5),
    DecodeProblem(8, 2, 64, (40, 17, 33), dtype="float16", q_len=3),  # drafts, dense
    DecodeProblem(8, 2, 64, (40, 5, 33), layout="paged", page_size=16, q_len=4, window=6),
], ids=lambda p: p.label())
def test_fa4_adapter_maps_the_spec_onto_fa4s_arguments(problem, monkeypatch):
    """The adapter's calls (varlen queries, causal, window_size, softcap, the LSE's layout) give
    the oracle's answer when FA4 does what its interface documents."""
    from impls.flash_attn4 import fa4

    _fake_fa4(monkeypatch)
    inputs = make_inputs(problem, seed=5)
    out, lse = inputs.new_outputs()
    got_out, got_lse = fa4.prepare(inputs, out, lse).run()
    result = compare(problem, got_out, got_lse, reference(inputs))
    assert result.passed, result.summary()
