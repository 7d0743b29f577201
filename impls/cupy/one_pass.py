"""CuPy raw-CUDA one-pass decode, dense or paged (kernel: ``one_pass.cu`` + ``decode_common.cuh``).

Algorithm: grid (num_kv_heads x num_head_blocks, batch); each CTA streams one sequence's K/V rows
once for a block of up to 8 query heads of a GQA group: 16-byte vector loads, UNROLL tokens in
flight per row group, scores reduced with warp shuffles, float32 online softmax in registers, row
groups merged in shared memory. Paged: each token's row is found through the block table (page
``block_table[b, t // page_size]``, row ``t % page_size``), so any page size works and every row
is still one coalesced segment of ``head_dim`` elements. Writes the final out and lse.
Expected bottleneck: HBM bandwidth when batch x num_kv_heads fills the SMs; one CTA per
(sequence, KV head) leaves the GPU idle at batch 1 (use split-k there). Paged: the block-table
read and the index arithmetic per token are hidden behind the loads.
"""

import numpy as np

from impls.common import LOG2E, cache_args, require_alignment
from impls.cupy._build import (LOAD_BYTES, dynamic_smem, get_kernel, grid, launcher,
                               num_head_blocks, pick_launch_config, reported, view)
from impls.registry import Launch


def prepare(inputs, out, lse, config: dict | None = None) -> Launch:
    p = inputs.problem
    require_alignment(inputs, LOAD_BYTES)
    defines = pick_launch_config(p, config)
    kernel = get_kernel("one_pass.cu", "decode_kernel", defines)
    q, k, v = inputs.q, inputs.k, inputs.v
    table, stride_btb, page_size = cache_args(inputs)
    i64, i32 = np.int64, np.int32
    args = (view(q), view(k), view(v), view(inputs.seq_lens), view(table), view(out), view(lse),
            i64(q.stride(0)), i64(q.stride(1)), i64(k.stride(0)), i64(k.stride(1)), i64(k.stride(2)),
            i64(stride_btb), i64(out.stride(0)), i64(out.stride(1)), i64(lse.stride(0)),
            i32(page_size), i32(p.group_size), i32(num_head_blocks(p, defines)), np.float32(p.scale * LOG2E))
    return Launch(launcher([(kernel, grid(defines, p.num_kv_heads * num_head_blocks(p, defines), p.batch),
                              args, dynamic_smem(defines))], defines), reported(defines))
