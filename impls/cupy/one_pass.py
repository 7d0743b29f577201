"""CuPy raw-CUDA one-pass decode, dense or paged (kernel: ``one_pass.cu``; its inner loop
``tensor_cores.cuh`` for fp16/bf16 at head_dim % 16 == 0, else ``cuda_cores.cuh``), over a cache
in the query's dtype or fp8 (converted in registers, its scales folded into the score scale and
the output).

Algorithm: one CTA per (KV head, block of its query rows, sequence) streams the sequence's K/V
rows once and writes the final out and lse; a KV head's rows are the draft's q_len tokens x its
GQA group, each masked to its own token's span. Tensor cores: the rows (up to 64, in row tiles
of 16, zero-padded) are the rows of mma.sync for Q K^T and P V, a warp per row tile; each token
slice's warps stream its 16 tokens of every tile through one cp.async ring. CUDA cores: blocks of
up to 8 heads, 16-byte vector loads, UNROLL tokens in flight per row group, scores reduced with
warp shuffles. Paged: each row is found through the block
table (page ``block_table[b, t // page_size]``, row ``t % page_size``), so any page size works.
Expected bottleneck: HBM bandwidth when batch x num_kv_heads fills the SMs; one CTA per (sequence,
KV head) leaves the GPU idle at batch 1 (use split-k there).
"""

import numpy as np

from impls import plan as planner
from impls.common import LOG2E, cache_args, require_alignment
from impls.cupy._build import (LOAD_BYTES, dynamic_smem, get_kernel, grid, launch_config,
                               launcher, mask_kernel_args, num_head_blocks, reported, scale_args,
                               split_merge, view)
from impls.registry import Launch


def prepare(inputs, out, lse, config: dict | None = None) -> Launch:
    p = inputs.problem
    defines = launch_config(inputs, split_merge(config)[0])
    require_alignment(inputs, LOAD_BYTES)
    kernel = get_kernel("one_pass.cu", "decode_kernel", defines)
    q, k, v = inputs.q, inputs.k, inputs.v
    table, stride_btb, page_size = cache_args(inputs)
    i64, i32 = np.int64, np.int32
    args = (view(q), view(k), view(v), view(inputs.seq_lens), view(table), view(out), view(lse),
            i64(q.stride(0)), i64(q.stride(1)), i64(k.stride(0)), i64(k.stride(1)), i64(k.stride(2)),
            i64(stride_btb), i64(out.stride(0)), i64(out.stride(1)), i64(lse.stride(0)),
            i32(page_size), i32(p.group_size), i32(num_head_blocks(p, defines)), np.float32(p.scale * LOG2E),
            *scale_args(inputs), *mask_kernel_args(p))
    heads, sequences = planner.one_pass_grid(p, num_head_blocks(p, defines))
    return Launch(launcher([(kernel, grid(defines, heads, sequences), args, dynamic_smem(defines))],
                           defines), reported(defines))
