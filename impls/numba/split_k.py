"""Numba CUDA split-K decode, flash-decoding (kernels: ``_kernels.decode_kernel`` and
``combine_kernel``).

Algorithm: stage 1, grid (num_kv_heads x num_head_blocks, batch, num_splits): each block runs the
one-pass kernel over its split's token range and writes a normalised float32 partial output and
its LSE (an empty split: 0 and -inf). Stage 2, grid (num_q_heads, batch): ``combine_kernel``
merges the partials weighted by exp(lse_s - max lse). Both layouts (the build is specialised on
it).
Why: fills the SMs at small batch; costs the partials' round trip and a second launch.
Expected bottleneck: HBM bandwidth once there are a few blocks per SM; the launch overhead of
two Numba launches at short sequences.
"""

from impls.common import SplitPolicy, require_alignment
from impls.numba._kernels import LOAD_BYTES
from impls.numba._launch import launcher, num_head_blocks, plan
from impls.registry import Launch

SPLITS = SplitPolicy(waves=2)  # ~2 blocks per SM


def prepare(inputs, out, lse, num_splits: int | None = None, config: dict | None = None) -> Launch:
    p = inputs.problem
    num_splits = SPLITS.resolve(num_splits, p, inputs.device,
                                p.batch * p.num_kv_heads * num_head_blocks(p))
    require_alignment(inputs, LOAD_BYTES)
    launches, reported = plan(inputs, out, lse, num_splits=num_splits, config=config)
    return Launch(launcher(launches), reported)
