"""Triton backend: dense, paged and split-K decode kernels (GPU, or the CPU interpreter)."""

from impls.registry import Backend, Capabilities, Impl

BACKEND = Backend(
    name="triton",
    summary="Triton kernels; GQA group as a 16-row tl.dot tile, online softmax",
    requires=("triton",),
    cpu_mode="interpreter",  # TRITON_INTERPRET=1, set by impls/__init__.py without a GPU
    compiles="Triton JIT on the first launch of each specialisation; cached on disk (TRITON_CACHE_DIR)",
)

# Head dims are padded to a power of two inside the kernels (masked), up to 256.
_CAPS = dict(max_head_dim=256, note="")
IMPLS = [
    Impl(BACKEND, "dense", "impls.triton.dense", Capabilities(frozenset({"dense"}), **_CAPS),
         summary="one pass, grid (batch, kv_heads)"),
    Impl(BACKEND, "paged", "impls.triton.paged", Capabilities(frozenset({"paged"}), **_CAPS),
         summary="one pass through the block table, per-token page gather (any page size)"),
    Impl(BACKEND, "split-k", "impls.triton.split_k",
         Capabilities(frozenset({"dense", "paged"}), **_CAPS), options=("num_splits",),
         summary="flash-decoding: splits write (out, lse) partials, a Triton kernel combines"),
]
