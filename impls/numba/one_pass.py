"""Numba CUDA one-pass decode, dense or paged (kernel: ``_kernels.decode_kernel``, one split).

Algorithm: grid (num_kv_heads x num_head_blocks, batch); each block streams one sequence's K/V
rows once for a block of up to 8 query heads of a GQA group: 8-byte vector loads, UNROLL rows in
flight per row group plus the next step's, scores summed across a row's lanes with warp
shuffles, float32 online softmax in registers, row groups merged by shuffles, warps in shared
memory. Paged (the build is specialised on the layout): each token's row is found through the
block table (page block_table[b, t // page_size], row t % page_size), looked up a step ahead by
the lanes that load it, so any page size works.
Expected bottleneck: HBM bandwidth when batch x num_kv_heads fills the SMs; one block per
(sequence, KV head) leaves the GPU idle at batch 1 (use split-k there). Paged: the block-table
load in front of each K/V row load.
"""

from impls import plan as planner
from impls.common import require_alignment
from impls.numba._kernels import LOAD_BYTES
from impls.numba._launch import launcher, launches_for, require_whole_words
from impls.registry import Launch


def prepare(inputs, out, lse, config: dict | None = None) -> Launch:
    require_whole_words(inputs.problem)
    require_alignment(inputs, LOAD_BYTES)
    whole = planner.whole_sequences(inputs.problem.seq_lens)  # one item per sequence, in order
    launches, reported = launches_for(inputs, out, lse, planner.SplitLaunch.of(whole, inputs),
                                      config)
    return Launch(launcher(launches), reported)
