"""Numba CUDA split-K decode, flash-decoding (kernels: ``_kernels.decode`` and ``combine``).

Algorithm: stage 1, grid (num_kv_heads x head chunks, batch, num_splits): each block runs the
one-pass kernel over its split's token range and writes a normalised float32 partial output and
its LSE (an empty split: 0 and -inf). Stage 2, grid (num_q_heads, batch): ``combine`` merges the
partials weighted by exp(lse_s - max lse). Both layouts (the build is specialised on it).
Why: fills the SMs at small batch; costs the partials' round trip and a second launch.
Expected bottleneck: HBM bandwidth once there are a few blocks per SM; the launch overhead of
two Numba launches at short sequences.
"""

from impls import heuristics
from impls.numba._launch import check_alignment, launcher, num_chunks, plan
from impls.registry import Launch, Unsupported, sm_count

# Split count: ~WAVES blocks per SM, no split shorter than MIN_TOKENS_PER_SPLIT.
WAVES = 2
MIN_TOKENS_PER_SPLIT = 256
MAX_SPLITS = 128


def prepare(inputs, out, lse, num_splits: int | None = None, **tile) -> Launch:
    p = inputs.problem
    num_splits = heuristics.resolve_num_splits(
        num_splits, p, sm_count(inputs.device), p.batch * p.num_kv_heads * num_chunks(p), WAVES, MIN_TOKENS_PER_SPLIT,
        MAX_SPLITS)
    if reason := check_alignment(inputs):
        raise Unsupported(reason)
    launches, config = plan(inputs, out, lse, num_splits=num_splits, **tile)
    return Launch(launcher(launches), config)
