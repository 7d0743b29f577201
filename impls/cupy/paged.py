"""CuPy raw-CUDA paged decode (kernel: ``paged.cu`` + ``decode_common.cuh``).

Algorithm: as the dense kernel (grid (num_kv_heads x head chunks, batch), one pass, 16-byte
loads shared by the GQA group), with each token's row found through the block table per token
(page ``block_table[b, t // page_size]``, row ``t % page_size``): any page size works and every
row is still one coalesced segment of ``head_dim`` elements.
Expected bottleneck: HBM bandwidth; the block-table read and the integer division per token
are hidden behind the loads; one CTA per (sequence, KV head) leaves batch 1 underfilled.
"""

import numpy as np

from impls.cupy import _build
from impls.cupy._build import LOG2E, check_alignment, get_kernel, launcher, num_chunks, view
from impls.registry import Launch, Unsupported


def prepare(inputs, out, lse) -> Launch:
    p = inputs.problem
    if reason := check_alignment(inputs):
        raise Unsupported(reason)
    defines = _build.kernel_defines(p)
    kernel = get_kernel("paged.cu", "decode_paged_kernel", defines)
    q, k, v, table = inputs.q, inputs.k, inputs.v, inputs.block_table
    i64, i32 = np.int64, np.int32
    args = (view(q), view(k), view(v), view(inputs.seq_lens), view(table), view(out), view(lse),
            i64(q.stride(0)), i64(q.stride(1)), i64(k.stride(0)), i64(k.stride(1)), i64(k.stride(2)),
            i64(table.stride(0)), i64(out.stride(0)), i64(out.stride(1)), i64(lse.stride(0)),
            i32(p.page_size), i32(p.group_size), i32(num_chunks(p)), np.float32(p.scale * LOG2E))
    grid = (p.num_kv_heads * num_chunks(p), p.batch)
    return Launch(launcher([(kernel, grid, args)], defines), {"GROUP": defines["GROUP"], "TPR": defines["TPR"]})
