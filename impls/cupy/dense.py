"""CuPy raw-CUDA dense decode (kernel: ``dense.cu`` + ``decode_common.cuh``).

Algorithm: grid (num_kv_heads x head chunks, batch); each CTA streams one sequence's K/V rows
once for up to 8 query heads of a GQA group: 16-byte vector loads, UNROLL tokens in flight per
row group, scores reduced with warp shuffles, float32 online softmax in registers, row groups
merged in shared memory. Writes the final out and lse.
Expected bottleneck: HBM bandwidth when batch x num_kv_heads fills the SMs; one CTA per
(sequence, KV head) leaves the GPU idle at batch 1 (use split-k there).
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
    kernel = get_kernel("dense.cu", "decode_dense_kernel", defines)
    q, k, v = inputs.q, inputs.k, inputs.v
    i64, i32 = np.int64, np.int32
    args = (view(q), view(k), view(v), view(inputs.seq_lens), view(out), view(lse),
            i64(q.stride(0)), i64(q.stride(1)), i64(k.stride(0)), i64(k.stride(1)), i64(k.stride(2)),
            i64(out.stride(0)), i64(out.stride(1)), i64(lse.stride(0)),
            i32(p.group_size), i32(num_chunks(p)), np.float32(p.scale * LOG2E))
    grid = (p.num_kv_heads * num_chunks(p), p.batch)
    return Launch(launcher([(kernel, grid, args)], defines), {"GROUP": defines["GROUP"], "TPR": defines["TPR"]})
