"""torch-fa2, one pass over the dense layout: the FlashAttention-2 kernels bundled with PyTorch.

Algorithm: FA2's forward with one query row per sequence. Uniform lengths go through
``torch.ops.aten._scaled_dot_product_flash_attention``, the op behind
``F.scaled_dot_product_attention`` under ``SDPBackend.FLASH_ATTENTION`` (called directly because
it returns the LSE too); the cache ``[B, S, Hkv, D]`` is passed as a ``[B, Hkv, S, D]`` view.
Ragged batches go through ``torch.ops.aten._flash_attention_forward`` in its varlen form: the
dense cache flattened to ``[B * S, Hkv, D]`` (a view), ``cu_seqlens_k`` at each sequence's first
row and ``seqused_k`` = the lengths, so only the rows that exist are read. FA2 takes GQA natively
and picks its own KV split for decode. The ops allocate their outputs; ``run()`` returns them.
Expected bottleneck: HBM bandwidth at large batch.
"""

import torch

from impls.registry import Launch, Unavailable, Unsupported


def probe() -> None:
    if not torch.backends.cuda.is_flash_attention_available():
        raise Unavailable("this torch build has no FlashAttention kernels")
    major, _ = torch.cuda.get_device_capability()
    if major < 8:
        raise Unavailable(f"FlashAttention-2 needs sm80 or newer (this GPU: sm{major}x)")


def prepare(inputs, out, lse) -> Launch:
    p = inputs.problem
    B, Hq, D = p.batch, p.num_q_heads, p.head_dim
    if p.uniform:
        length = p.seq_lens[0]
        q = inputs.q.unsqueeze(2)  # [B, Hq, 1, D]
        k = inputs.k[:, :length].transpose(1, 2)  # [B, Hkv, L, D] views
        v = inputs.v[:, :length].transpose(1, 2)
        op = torch.ops.aten._scaled_dot_product_flash_attention

        def run():
            o, logsumexp = op(q, k, v, 0.0, False, False, scale=p.scale)[:2]
            return o.reshape(B, Hq, D), logsumexp.reshape(B, Hq)  # views

        return Launch(run, {"kernel": "fa2 (sdpa flash op)"})

    rows = inputs.k.shape[1]  # rows per sequence in the dense cache (>= max(seq_lens))
    if not (inputs.k.is_contiguous() and inputs.v.is_contiguous()):
        raise Unsupported("ragged batches go through FA2's varlen op, which needs the dense cache "
                          "contiguous (viewed as [batch * rows, Hkv, D] without a copy)")
    k = inputs.k.view(B * rows, p.num_kv_heads, D)
    v = inputs.v.view(B * rows, p.num_kv_heads, D)
    cu_q = torch.arange(B + 1, dtype=torch.int32, device=inputs.device)
    cu_k = cu_q * rows
    op = torch.ops.aten._flash_attention_forward

    def run():
        o, logsumexp = op(inputs.q, k, v, cu_q, cu_k, 1, p.max_seq_len, 0.0, False, False,
                          scale=p.scale, seqused_k=inputs.seq_lens)[:2]
        return o, logsumexp.t()  # varlen LSE is [Hq, total_q]

    return Launch(run, {"kernel": "fa2 (varlen, seqused_k)"})
