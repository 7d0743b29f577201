"""flash_attn4 (flash-attn-4), one pass on either layout: FlashAttention's CuTe-DSL forward kernel.

Algorithm: the FA4 forward (warp-specialised, TMA or cp.async loads, wgmma on sm90) with the
GQA group packed into the query tile (``pack_gqa``). Dense, uniform lengths:
``flash_attn_func(q [B, 1, Hq, D], k [B, L, Hkv, D], v)`` on views of the cache. Dense, ragged:
``flash_attn_varlen_func`` on the whole dense cache with ``seqused_k`` = the lengths. Paged:
``flash_attn_varlen_func(..., seqused_k, page_table=block_table)`` on the page pool; pages load
by TMA when ``page_size`` equals the kernel's KV tile, else row by row. A draft of ``q_len``
tokens a sequence goes through ``flash_attn_varlen_func`` on either layout, as varlen queries
(``cu_seqlens_q`` = 0, q_len, ..; LSE ``[Hq, B x q_len]``) with ``causal=True``: FA4 aligns the
causal mask to the bottom right, each token seeing the cache up to its own position, as the spec
does. A window is ``window_size=(window - 1, 0)`` (FA's left window counts the tokens before the
query's own), a cap ``softcap`` (FA4's score_mod, applied to the scaled scores as the spec's).
``num_splits`` stays 1: on sm90 FA4 has no split-KV (its interface asserts), which is why batch 1
leaves most SMs idle. The library allocates its outputs; ``run()`` returns them (LSE natural log).

FA4's precondition: it loads whole KV tiles and masks the scores past ``seqused_k``, so the
rows past a sequence's length that share its last tile (dense) or its last page (paged) must be
finite (P = 0 times NaN is NaN). ``prepare`` checks those rows (paged: the rest of each last
page; dense ragged: the next 256 rows past each length, more than any FA4 tile) and raises
Unsupported, naming the sequence, when they are not. Uniform dense lengths need no check: FA4
gets the cache cut at the length. The conformance inputs meet it without any change for
FA4: ``specs.inputs`` already poisons those rows with finite values (keys drawn like real ones,
V rows of +-1e4 that wreck the output if weighted), and keeps NaN for what no kernel may touch
(pages no sequence owns, reached through the block table's entries past a sequence's last page).
So FA4 runs on the same inputs as every backend and is still caught if it weights a row past the
length or reads a page it does not own.
"""

import torch

from impls.registry import Launch, Unavailable, Unsupported

# Rows past a length a tile can cover: FA4's sm90 KV tiles are 80 to 144 rows (interface.py's
# _tile_size_fwd_sm90); the check covers the next 256 rows, a margin over any of them.
TILE_ROWS_CHECKED = 256


def probe() -> None:
    major, _ = torch.cuda.get_device_capability()
    if major < 9:
        raise Unavailable(f"flash-attn-4 runs on sm90 and newer here (this GPU: sm{major}x)")


def nonfinite_tail(inputs) -> str | None:
    """Where the rows FA4 loads past a sequence's length hold NaN or inf (None: nowhere).
    Pure torch, one host sync: for ``prepare``, never a timed call."""
    p = inputs.problem
    lens = inputs.seq_lens.long()
    if p.layout == "paged":
        ps = p.page_size
        last = inputs.block_table.gather(1, ((lens - 1) // ps)[:, None]).squeeze(1).long()
        rows = torch.arange(ps, device=inputs.device)
        tail = rows[None, :] >= (lens - (lens - 1) // ps * ps)[:, None]  # [B, ps] past the length
        k, v = inputs.k[last], inputs.v[last]  # [B, ps, Hkv, D]
        where = lambda b: (f"page {int(last[b])}, rows {int(lens[b] - (lens[b] - 1) // ps * ps)}.."  # noqa: E731
                           f"{ps - 1}")
    else:
        n = min(TILE_ROWS_CHECKED, inputs.k.shape[1])
        start = torch.clamp(lens, max=inputs.k.shape[1] - n)  # a window of n rows from the length
        idx = start[:, None] + torch.arange(n, device=inputs.device)[None, :]  # [B, n]
        tail = idx >= lens[:, None]
        gather = idx[:, :, None, None].expand(-1, -1, *inputs.k.shape[2:])
        k, v = inputs.k.gather(1, gather), inputs.v.gather(1, gather)
        where = lambda b: f"rows {int(lens[b])}..{int(start[b]) + n - 1}"  # noqa: E731
    bad = tail & ~(torch.isfinite(k) & torch.isfinite(v)).flatten(2).all(-1)
    seqs = bad.any(1).nonzero().flatten().tolist()
    if not seqs:
        return None
    b = seqs[0]
    return (f"flash-attn-4 loads whole KV tiles and needs the rows past seq_len in a sequence's "
            f"last tile/page finite; seq_lens[{b}]={int(lens[b])}: {where(b)} hold NaN or inf "
            f"({len(seqs)} sequence(s))")


def _check(inputs) -> None:
    if why := nonfinite_tail(inputs):
        raise Unsupported(why)


def _aligned(*tensors):
    """The tensors as FA4 will use them: its interface copies any whose layout it cannot take
    (``maybe_contiguous``); doing that here keeps a hidden copy out of the timed call."""
    from flash_attn.cute.cute_dsl_utils import maybe_contiguous

    out = [maybe_contiguous(t) for t in tensors]
    return out, any(a is not t for a, t in zip(out, tensors))


def _mask_args(p) -> dict:
    """FA4's arguments for the spec's mask: the window less the query's own token, the cap."""
    return dict(window_size=(p.window - 1, 0) if p.window is not None else (None, None),
                softcap=float(p.softcap) if p.softcap is not None else 0.0)  # 0: none (FA's)


def _launch(call, p, config) -> Launch:
    B, Hq, D = p.batch, p.num_q_heads, p.head_dim

    def run():
        o, lse = call()
        if p.q_len > 1:  # varlen queries: [B x q_len, Hq, D] and LSE [Hq, B x q_len]
            return o, lse.t()
        return o.reshape(B, Hq, D), lse.reshape(B, Hq)  # [B, 1, Hq, D], [B, Hq, 1]: views

    return Launch(run, config)


def prepare(inputs, out, lse) -> Launch:
    if inputs.problem.q_len > 1:
        return _prepare_draft(inputs)
    return _prepare_paged(inputs) if inputs.problem.layout == "paged" else _prepare_dense(inputs)


def _prepare_dense(inputs) -> Launch:
    from flash_attn.cute import flash_attn_func, flash_attn_varlen_func

    p = inputs.problem
    q = inputs.q.unsqueeze(1)  # [B, 1, Hq, D]
    if p.uniform:  # views cut at the length: nothing past it to load
        length = p.seq_lens[0]
        (q, k, v), copied = _aligned(q, inputs.k[:, :length], inputs.v[:, :length])
        call = lambda: flash_attn_func(q, k, v, softmax_scale=p.scale, num_splits=1,  # noqa: E731
                                       return_lse=True, **_mask_args(p))
        return _launch(call, p, {"kernel": "flash_attn_func", "copied_inputs": copied})
    _check(inputs)
    (q, k, v), copied = _aligned(q, inputs.k, inputs.v)
    call = lambda: flash_attn_varlen_func(  # noqa: E731
        q, k, v, seqused_k=inputs.seq_lens, max_seqlen_q=1, max_seqlen_k=p.max_seq_len,
        softmax_scale=p.scale, num_splits=1, return_lse=True, **_mask_args(p))
    return _launch(call, p, {"kernel": "flash_attn_varlen_func (seqused_k)", "copied_inputs": copied})


def _prepare_paged(inputs) -> Launch:
    from flash_attn.cute import flash_attn_varlen_func

    _check(inputs)
    p = inputs.problem
    (q, k, v), copied = _aligned(inputs.q.unsqueeze(1), inputs.k, inputs.v)
    table = inputs.block_table  # int32, contiguous (specs.inputs)
    call = lambda: flash_attn_varlen_func(  # noqa: E731
        q, k, v, seqused_k=inputs.seq_lens, page_table=table, max_seqlen_q=1,
        max_seqlen_k=p.max_seq_len, softmax_scale=p.scale, num_splits=1, return_lse=True,
        **_mask_args(p))
    return _launch(call, p, {"kernel": "flash_attn_varlen_func (page_table)", "copied_inputs": copied})


def _prepare_draft(inputs) -> Launch:
    """q_len > 1: the batch's drafts as varlen queries over the dense cache (seqused_k) or the
    page pool (page_table), causal."""
    from flash_attn.cute import flash_attn_varlen_func

    _check(inputs)
    p = inputs.problem
    paged = p.layout == "paged"
    cu_seqlens_q = torch.arange(p.batch + 1, dtype=torch.int32, device=inputs.device) * p.q_len
    (q, k, v), copied = _aligned(inputs.q, inputs.k, inputs.v)
    table = inputs.block_table if paged else None
    call = lambda: flash_attn_varlen_func(  # noqa: E731
        q, k, v, cu_seqlens_q=cu_seqlens_q, max_seqlen_q=p.q_len, seqused_k=inputs.seq_lens,
        page_table=table, max_seqlen_k=p.max_seq_len, softmax_scale=p.scale, causal=True,
        num_splits=1, return_lse=True, **_mask_args(p))
    kind = "page_table" if paged else "seqused_k"
    return _launch(call, p, {"kernel": f"flash_attn_varlen_func (cu_seqlens_q, {kind}, causal)",
                             "copied_inputs": copied})
