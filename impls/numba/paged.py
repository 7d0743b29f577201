"""Numba CUDA paged decode (kernel: ``_kernels.decode`` with one split, compiled with PAGED).

Algorithm: as dense.py, but each token's row is found through the block table (page
block_table[b, t // page_size], row t % page_size), looked up per token by the lanes that load
it, so any page size works. Pages past a sequence's length are never touched.
Expected bottleneck: HBM bandwidth at large batch, plus the block-table load that sits in front
of each K/V row load (one dependent load per token and row group).
"""

from impls.numba.dense import prepare  # noqa: F401  (the layout selects the kernel build)
