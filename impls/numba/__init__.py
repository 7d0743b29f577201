"""Numba CUDA backend: one-pass and split-K decode kernels written in Python (numba-cuda)."""

from impls.launch import Knob, Space
from impls.registry import Backend, Capabilities, Impl, ProblemLimit
from specs.problem import KV_DTYPES

BACKEND = Backend(
    name="numba",
    summary="@cuda.jit kernels in Python syntax (numba-cuda), launched on torch's stream",
    requires=("numba_cuda",),  # numba.cuda itself is imported by the probe, after a numpy alias
    install="pip install -e .[numba]",
    cpu_mode="simulator",  # NUMBA_ENABLE_CUDASIM=1, set by impls/__init__.py without a GPU
    compiles="NVVM on the first launch of each specialisation, in-process (no disk cache)",
    probe_module="impls.numba._compat",
    packages=("numba", "numba-cuda"),
    shown_config=("chunk", "num_items", "merges", "tpr"),
    space=Space(Knob("tpr", (4, 8, 16, 32), param="TPR"),
                Knob("unroll", (1, 2, 4), param="UNROLL"),
                Knob("num_warps", (4, 8), param="NUM_WARPS"),
                Knob("min_blocks", (0, 2, 4), param="MIN_BLOCKS")),
    # The simulator runs every thread as a Python thread, ~50x slower per element than Triton's
    # numpy-vectorised interpreter: CI problems are clamped further (GQA groups up to 16 kept),
    # and fewer are drawn (the GPU profile draws its full count at full sizes)
    cpu_limit=ProblemLimit(max_batch=3, max_seq_len=48, max_q_heads=4, max_examples=3),
)

# 8-byte word loads: head_dim a multiple of 4 (16-bit) or 2 (fp32) elements; up to 256.
# fp8 caches: 8 elements a word, decoded from their bits in the kernel (launchers refuse head_dim % 8)
CAPS = Capabilities(frozenset({"dense", "paged"}), max_head_dim=256, head_dim_multiple=4,
                    kv_dtypes=frozenset(KV_DTYPES),
                    note="8-byte word loads need head_dim % 4 == 0 (% 8 for an fp8 cache)",
                    q_note="not implemented in its kernels yet: a block's heads are one query "
                           "token's",
                    mask_note="not implemented in its kernels yet")
IMPLS = [
    Impl(BACKEND, "one-pass", "impls.numba.one_pass", CAPS, options=("config",),
         summary="block per (kv head, <= 8 query heads, sequence), 8 B loads, shuffles; paged: "
                 "per-token page lookup (any page size)"),
    Impl(BACKEND, "split-k", "impls.numba.split_k", CAPS, options=("num_splits", "config"),
         summary="flash-decoding over a balanced plan (impls.plan): blocks per work item, split "
                 "sequences write (out, lse) partials a Numba kernel merges"),
]
