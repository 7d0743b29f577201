"""TileLang one-pass decode, on the dense or the paged layout (``PAGE_SIZE`` > 0).

Algorithm: grid (batch, num_kv_heads); each thread block streams its sequence's K/V rows in
``BLOCK_N``-token tiles once, for all query heads of its GQA group at once (``_common``'s
``attend``: T.gemm on the tensor cores, online softmax in float32), and writes the final ``out``
and ``lse``. Dense tiles and paged tiles inside one page are TMA copies in a warp-specialised
pipeline; pages smaller than a tile are gathered per token with cp.async. No workspace, no
second kernel.
Expected bottleneck: HBM bandwidth when batch x num_kv_heads fills the GPU; at small batch the
grid is too small (8 blocks at batch 1 for Llama-3-8B) and split-K is the answer. Paged: small
pages give a token gather of a one-stage pipeline (``_common`` says why).
"""

import time

import tilelang.language as T

from impls.common import LOG2E
from impls.registry import Launch
from impls.tilelang._common import (REPORTED, attend_macro, autotune, compile_key, compiled,
                                    kv_scales, pick_launch_config, scale_shape, store_macro)


def decode_kernel(HEAD_DIM, GROUP_SIZE, NUM_KV_HEADS, DTYPE, KV_DTYPE, SCALES, BLOCK_H, BLOCK_N,
                  PAGE_SIZE, GATHER,
                  threads, num_stages):
    """The one-pass prim_func of these compile-time parameters; batch, cache rows (pool pages)
    and block-table columns are symbolic, bound by the tensors at each call."""
    batch, rows, table_cols = T.dynamic("batch, rows, table_cols")
    num_q_heads = GROUP_SIZE * NUM_KV_HEADS
    kv_shape = (rows, PAGE_SIZE, NUM_KV_HEADS, HEAD_DIM) if PAGE_SIZE else \
        (batch, rows, NUM_KV_HEADS, HEAD_DIM)
    attend = attend_macro(HEAD_DIM, GROUP_SIZE, BLOCK_H, BLOCK_N, PAGE_SIZE, GATHER, DTYPE,
                          KV_DTYPE, SCALES, threads, num_stages)
    store = store_macro(HEAD_DIM, GROUP_SIZE, BLOCK_H)

    @T.prim_func
    def decode(
        q: T.Tensor((batch, num_q_heads, HEAD_DIM), DTYPE),
        k: T.Tensor(kv_shape, KV_DTYPE),
        v: T.Tensor(kv_shape, KV_DTYPE),
        seq_lens: T.Tensor((batch,), "int32"),
        block_table: T.Tensor((batch, table_cols), "int32"),
        out: T.Tensor((batch, num_q_heads, HEAD_DIM), DTYPE),
        lse: T.Tensor((batch, num_q_heads), "float32"),
        qk_scale: T.float32,
        k_scale: T.Tensor(scale_shape(SCALES), "float32"),
        v_scale: T.Tensor(scale_shape(SCALES), "float32"),
    ):
        with T.Kernel(batch, NUM_KV_HEADS, threads=threads) as (pid_b, pid_kvh):
            acc = T.alloc_fragment((BLOCK_H, HEAD_DIM), "float32")
            m_i = T.alloc_fragment((BLOCK_H,), "float32")
            l_i = T.alloc_fragment((BLOCK_H,), "float32")
            attend(q, k, v, k_scale, v_scale, block_table, pid_b, pid_kvh, 0, seq_lens[pid_b],
                   qk_scale, acc, m_i, l_i)
            store(out, lse, pid_b, pid_kvh * GROUP_SIZE, acc, m_i, l_i)

    return decode


def kernel_args(inputs, out, lse):
    """The runtime arguments of ``decode_kernel`` (the dense layout reads no block table:
    ``seq_lens`` as a [B, 1] view stands in)."""
    p = inputs.problem
    table = inputs.block_table if p.layout == "paged" else inputs.seq_lens.view(-1, 1)
    return (inputs.q, inputs.k, inputs.v, inputs.seq_lens, table, out, lse, p.scale * LOG2E,
            *kv_scales(inputs))


def prepare(inputs, out, lse, config: dict | None = None, tune: bool = False) -> Launch:
    p = inputs.problem
    args = kernel_args(inputs, out, lse)
    tuning_s = None
    if tune:
        start = time.perf_counter()
        cfg, kernel = autotune(decode_kernel, p, args, p.layout)
        tuning_s = time.perf_counter() - start
    else:
        cfg = pick_launch_config(p, config)
        kernel = compiled(decode_kernel, compile_key(cfg))

    def run():
        kernel(*args)

    return Launch(run, {key: cfg[key] for key in REPORTED}, tuning_s=tuning_s)
