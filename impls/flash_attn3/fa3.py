"""flash_attn3 (FlashAttention-3, vLLM's build), one pass and split-K on either layout.

Algorithm: FA3's Hopper forward (warp-specialised producer and consumer warpgroups, K/V loaded
by TMA or cp.async, wgmma for both products), called as a serving engine calls it for a decode
batch: ``flash_attn_varlen_func(q [B x q_len, Hq, D] as B sequences of q_len query tokens
(cu_seqlens_q = 0, q_len, ..), k, v, max_seqlen_q=q_len, max_seqlen_k, seqused_k=seq_lens,
causal=q_len > 1, window_size=(window - 1, 0), softcap, block_table, out=out,
return_softmax_lse=True, scheduler_metadata, num_splits, fa_version=3)``. FA3 packs the GQA group
into the query tile (its ``pack_gqa`` heuristic), so each K/V tile is read once per group.
Dense: the cache ``[B, rows, Hkv, D]`` as a batch of ``rows``-row sequences (``max_seqlen_k`` =
rows), ``seqused_k`` the lengths; paged: the pool and the block table. The scheduler metadata (its
split plan for the batch, ``get_scheduler_metadata``) is computed in ``prepare``, outside the
timed call, as vLLM does once per batch; ``out`` is written into the caller's buffer; the LSE is
FA3's own ``[Hq, B]`` (natural log), returned as a ``[B, Hq]`` view. One pass: ``num_splits=1``.
Split-K: ``num_splits=0`` lets FA3's heuristic split each batch, or a count is forced (at most
256, FA3's limit); FA3 merges the splits itself.
Expected bottleneck: HBM bandwidth; at small batch, how well its split plan fills the SMs.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import sys
import types

import torch

from impls.common import check_num_splits
from impls.flash_attn3 import INSTALL
from impls.registry import Launch, Unavailable


def load():
    """FA3's Python interface, ``vllm.vllm_flash_attn``. A full vLLM install has a
    ``vllm/__init__.py`` that imports vLLM's whole stack; where that fails (installed without
    its dependencies), a bare ``vllm`` package stands in for it, so only ``vllm_flash_attn``
    (its interface and the compiled extension) is loaded."""
    try:
        import vllm.vllm_flash_attn as fa
    except ImportError:
        spec = importlib.util.find_spec("vllm")
        if spec is None or not spec.submodule_search_locations or "vllm" in sys.modules:
            raise
        bare = types.ModuleType("vllm")
        bare.__path__ = list(spec.submodule_search_locations)
        sys.modules["vllm"] = bare
        import vllm.vllm_flash_attn as fa
    return fa


def probe() -> None:
    if importlib.util.find_spec("vllm") is None:
        raise Unavailable(f"package 'vllm' not installed (FlashAttention-3 comes in vLLM's wheel: "
                          f"{INSTALL})")
    major, minor = torch.cuda.get_device_capability()
    if major != 9:
        raise Unavailable(f"FlashAttention-3 runs on Hopper (sm90) only (this GPU: sm{major}{minor})")
    try:
        fa = load()
    except Exception as e:  # a broken install says so, it does not crash the run
        raise Unavailable(f"vllm.vllm_flash_attn failed to import: {type(e).__name__}: {e}") from None
    if not fa.flash_attn_interface.FA3_AVAILABLE:
        raise Unavailable(f"FA3 extension not loaded: {fa.flash_attn_interface.FA3_UNAVAILABLE_REASON}")


def provenance() -> dict[str, str]:
    """Where FA3 came from when no ``vllm`` distribution names it (an unpacked folder)."""
    spec = importlib.util.find_spec("vllm")
    if spec is None:
        return {}
    try:
        importlib.metadata.version("vllm")
        return {}  # the distribution's version is recorded
    except importlib.metadata.PackageNotFoundError:
        where = ", ".join(spec.submodule_search_locations or [])
        return {"vllm_flash_attn (FA3)": f"unpacked without distribution metadata ({where})"}


def _prepare(inputs, out, num_splits: int) -> Launch:
    fa = load()
    p = inputs.problem
    paged = p.layout == "paged"
    # q_len query tokens a sequence: FA3's varlen queries, causal (its mask is aligned to the
    # bottom right, each token seeing the cache up to its own position, as the spec's)
    cu_seqlens_q = torch.arange(p.batch + 1, dtype=torch.int32, device=inputs.device) * p.q_len
    max_seqlen_k = p.max_seq_len if paged else inputs.k.shape[1]  # dense: the rows of the batch
    table = inputs.block_table if paged else None
    causal = p.q_len > 1
    # FA3's window counts the tokens before the query's own: the spec's window less one
    window = (p.window - 1, 0) if p.window is not None else (-1, -1)
    softcap = float(p.softcap) if p.softcap is not None else 0.0  # 0: none, FA3's convention

    def plan():  # FA3's split plan for the batch, which a serving loop redoes per step
        return fa.get_scheduler_metadata(
            p.batch, p.q_len, max_seqlen_k, p.num_q_heads, p.num_kv_heads, p.head_dim,
            inputs.seq_lens, qkv_dtype=inputs.q.dtype, cu_seqlens_q=cu_seqlens_q,
            page_size=p.page_size if paged else None, causal=causal, window_size=window,
            has_softcap=softcap > 0, num_splits=num_splits)

    metadata = plan()

    def run():
        o, lse = fa.flash_attn_varlen_func(
            inputs.q, inputs.k, inputs.v, p.q_len, cu_seqlens_q, max_seqlen_k,
            seqused_k=inputs.seq_lens, softmax_scale=p.scale, causal=causal, window_size=window,
            softcap=softcap, block_table=table, return_softmax_lse=True, out=out,
            scheduler_metadata=metadata, num_splits=num_splits, fa_version=3)
        return o, lse.t()  # LSE [Hq, B x q_len] -> a [B x q_len, Hq] view

    return Launch(run, {"num_splits": num_splits or "FA3's heuristic"}, plan=plan)


def prepare_one_pass(inputs, out, lse) -> Launch:
    return _prepare(inputs, out, num_splits=1)


def prepare_split_kv(inputs, out, lse, num_splits: int | None = None) -> Launch:
    if num_splits is not None:
        check_num_splits(num_splits)
    return _prepare(inputs, out, num_splits=0 if num_splits is None else num_splits)
