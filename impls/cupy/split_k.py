"""CuPy raw-CUDA split-K decode, flash-decoding (kernels: ``split_k.cu`` + ``decode_common.cuh``).

Algorithm: stage 1, grid (num_kv_heads x num_head_blocks, batch, num_splits): each CTA runs the
one-pass kernel's loop over its split's tokens and writes a normalised float32 partial output
and its LSE (an empty split: 0 and -inf). Stage 2, grid (num_q_heads, batch): ``combine_kernel``
merges the partials weighted by exp(lse_s - max lse). Works on both layouts (IS_PAGED).
Why: fills the SMs at small batch; costs the partials' round trip (tiny next to the cache) and
a second launch.
Expected bottleneck: HBM bandwidth once there are a few CTAs per SM; launch overhead of the two
kernels at short sequences.
"""

import numpy as np

from impls import common
from impls.common import LOG2E, SplitPolicy, cache_args, new_partials, require_alignment
from impls.cupy._build import (LOAD_BYTES, get_kernel, launcher, num_head_blocks,
                               pick_launch_config, reported, step_tokens, view)
from impls.registry import Launch

# ~2 CTAs per SM (4 fit at once: 128 registers x 128 threads)
SPLITS = SplitPolicy(waves=2)


def prepare(inputs, out, lse, num_splits: int | None = None, config: dict | None = None) -> Launch:
    p = inputs.problem
    num_splits = SPLITS.resolve(num_splits, p, inputs.device,
                                p.batch * p.num_kv_heads * num_head_blocks(p))
    require_alignment(inputs, LOAD_BYTES)
    defines = pick_launch_config(p, config)
    split = get_kernel("split_k.cu", "split_kernel", defines)
    combine = get_kernel("split_k.cu", "combine_kernel", defines)
    # splits start on the boundaries of a CTA's loop steps
    tokens_per_split = common.tokens_per_split(p, num_splits, step_tokens(defines))
    q, k, v = inputs.q, inputs.k, inputs.v
    table, stride_btb, page_size = cache_args(inputs)
    part_out, part_lse = new_partials(p, num_splits, q.device)
    i64, i32 = np.int64, np.int32
    split_args = (view(q), view(k), view(v), view(inputs.seq_lens), view(table), view(part_out),
                  view(part_lse), i64(q.stride(0)), i64(q.stride(1)), i64(k.stride(0)),
                  i64(k.stride(1)), i64(k.stride(2)), i64(stride_btb), i32(page_size),
                  i32(p.group_size), i32(num_head_blocks(p)), i32(p.num_q_heads),
                  i32(tokens_per_split), np.float32(p.scale * LOG2E))
    combine_args = (view(part_out), view(part_lse), view(out), view(lse), i32(num_splits),
                    i64(out.stride(0)), i64(out.stride(1)), i64(lse.stride(0)))
    run = launcher([(split, (p.num_kv_heads * num_head_blocks(p), p.batch, num_splits), split_args),
                    (combine, (p.num_q_heads, p.batch), combine_args)], defines)
    return Launch(run, {"num_splits": num_splits, "tokens_per_split": tokens_per_split,
                        **reported(defines)})
