"""Numba CUDA backend: dense, paged and split-K decode kernels written in Python (numba-cuda)."""

from impls.registry import Backend, Capabilities, Impl

BACKEND = Backend(
    name="numba",
    summary="@cuda.jit kernels in Python syntax (numba-cuda), launched on torch's stream",
    requires=("numba_cuda",),  # numba.cuda itself is imported by the probe, after a numpy alias
    cpu_mode="simulator",  # NUMBA_ENABLE_CUDASIM=1, set by impls/__init__.py without a GPU
    compiles="NVVM on the first launch of each specialisation, in-process (no disk cache)",
    probe_module="impls.numba._compat",
)

# 8-byte word loads: head_dim a multiple of 4 (16-bit) or 2 (fp32) elements; up to 256.
_CAPS = dict(max_head_dim=256, head_dim_multiple=4,
             note="8-byte word loads need head_dim % 4 == 0")
IMPLS = [
    Impl(BACKEND, "dense", "impls.numba.dense", Capabilities(frozenset({"dense"}), **_CAPS),
         summary="one pass, block per (kv head, <= 8 query heads, sequence), 8 B loads, shuffles"),
    Impl(BACKEND, "paged", "impls.numba.paged", Capabilities(frozenset({"paged"}), **_CAPS),
         summary="one pass through the block table, per-token page lookup (any page size)"),
    Impl(BACKEND, "split-k", "impls.numba.split_k",
         Capabilities(frozenset({"dense", "paged"}), **_CAPS), options=("num_splits",),
         summary="flash-decoding: blocks per split write (out, lse) partials, a Numba combine"),
]
