"""Implementations of decode attention, one folder per DSL or vendor library.

One vocabulary in every backend, kernels included (Triton, Gluon, CUDA sources, Numba), so the
versions of one algorithm read side by side:

=====================================  ===========================================================
name                                   meaning
=====================================  ===========================================================
``group_size``                         query heads per KV head (the GQA group; 1 is MHA)
``BLOCK_H``                            query heads one program handles: Triton and Gluon pad the
                                       group to a tile of >= 16 rows, CuPy and Numba take blocks
                                       of <= 8
``num_head_blocks``, ``pid_hb``        head blocks per KV head, and which one (Triton: always 1)
``head0``, ``n_heads``                 a program's first query head, the valid heads of its block
``pid_b``, ``pid_kvh``, ``pid_h``      program indices: sequence, KV head, the query head of a
                                       combine program
``stride_kp``, ``stride_kt``,          K/V strides between pages, token rows and KV heads; the
``stride_kh``                          dense cache is addressed as one page per sequence
``stride_btb``                         block-table row stride (``stride_qb``/``qh``,
                                       ``stride_ob``/``oh``, ``stride_lb``/``lh`` for q, out, lse)
``qk_scale``                           sm_scale * log2(e): scores come out in log2 units
``m_i``, ``l_i``, ``acc``              online-softmax state: running max, running sum, unnormalised
                                       output (float32)
``BLOCK_N``                            tokens per K/V tile (Triton, Gluon)
``NUM_STAGES``                         slots of a K/V ring in shared memory (Gluon; Triton's
                                       ``num_stages`` is its pipeliner's)
``TPR``, ``VEC``, ``VPT``, ``UNROLL``  CuPy/Numba thread mapping: threads per K/V row, elements per
                                       vector load (16 B CuPy, 8 B Numba), vectors per thread per
                                       row, rows per row group (``rg``) per loop step
``STEP``                               tokens a program consumes per loop step
``items``, ``pid_i``, ``chunk``        split-K work items (``impls.plan``: sequence, start, end,
                                       slot), which one a program runs, their most tokens
``part_out``, ``part_lse``             split-K workspace: partial outputs [slots, Hq, D] and their
                                       LSE [slots, Hq], float32, one slot per piece of a split
                                       sequence; ``merge_seqs``/``merge_indptr`` say whose
``decode_kernel``, ``split_kernel``,   one-pass kernel, split-K stage 1 (Numba runs
``combine_kernel``                     ``decode_kernel`` over splits), split-K merge
``IS_PAGED``, ``HEAD_DIM``             compile-time layout switch and head dim
``pick_launch_config(problem,          the pure choice of compile-time parameters; ``config`` is
config)``                              the launch option that overrides the tunable ones, named in
                                       the launch vocabulary (``impls.launch.KNOBS``: ``block_n``,
                                       ``num_warps``, ``num_stages``, ...) in every DSL alike
=====================================  ===========================================================

Importing this package first decides how DSLs that can run without a GPU should run: with no
CUDA GPU, Triton runs kernels in its interpreter (``TRITON_INTERPRET=1``) and Numba runs CUDA
kernels in its simulator (``NUMBA_ENABLE_CUDASIM=1``). Both read the variable once, at their own
import, so it is set here, before any backend module imports them. A value the user set wins
(``TRITON_INTERPRET=0`` keeps Triton compiling, e.g. to build sm_90 code on a CPU machine).
"""

import os
import sys

import torch

if not torch.cuda.is_available():
    for var, dsl in (("TRITON_INTERPRET", "triton"), ("NUMBA_ENABLE_CUDASIM", "numba")):
        if dsl in sys.modules and var not in os.environ:
            raise RuntimeError(f"{dsl} was imported before impls on a machine without a GPU; "
                               f"import impls first or set {var}=1")
        os.environ.setdefault(var, "1")
