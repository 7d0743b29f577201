"""Numba CUDA dense decode (kernel: ``_kernels.decode`` with one split).

Algorithm: grid (num_kv_heads x head chunks, batch); each block streams one sequence's K/V rows
once for up to 8 query heads of a GQA group: 8-byte word loads, UNROLL rows in flight per row
group plus the next step's, scores summed across a row's lanes with warp shuffles, float32
online softmax in registers, row groups merged by shuffles, warps in shared memory.
Expected bottleneck: HBM bandwidth when batch x num_kv_heads fills the SMs; one block per
(sequence, KV head) leaves the GPU idle at batch 1 (use split-k there).
"""

from impls.numba._launch import check_alignment, launcher, plan
from impls.registry import Launch, Unsupported


def prepare(inputs, out, lse, **tile) -> Launch:
    if reason := check_alignment(inputs):
        raise Unsupported(reason)
    launches, config = plan(inputs, out, lse, num_splits=None, **tile)
    return Launch(launcher(launches), config)
