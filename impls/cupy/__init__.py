"""CuPy backend: dense, paged and split-K decode kernels in CUDA C++ (NVRTC via cupy.RawModule)."""

from impls.registry import Backend, Capabilities, Impl

BACKEND = Backend(
    name="cupy",
    summary="raw CUDA C++ compiled by NVRTC through cupy.RawModule, launched on torch's stream",
    requires=("cupy",),
    cpu_mode=None,  # CUDA kernels need a GPU
    compiles="NVRTC on the first use of each kernel specialisation; cached on disk (CUPY_CACHE_DIR)",
)

# 16-byte vector loads: head_dim a multiple of 8 (16-bit) elements; up to 256.
_CAPS = dict(max_head_dim=256, head_dim_multiple=8,
             note="16-byte vector loads need head_dim % 8 == 0")
IMPLS = [
    Impl(BACKEND, "dense", "impls.cupy.dense", Capabilities(frozenset({"dense"}), **_CAPS),
         summary="one pass, CTA per (kv head, <= 8 query heads, sequence), 16 B loads, shuffles"),
    Impl(BACKEND, "paged", "impls.cupy.paged", Capabilities(frozenset({"paged"}), **_CAPS),
         summary="one pass through the block table, per-token page lookup (any page size)"),
    Impl(BACKEND, "split-k", "impls.cupy.split_k",
         Capabilities(frozenset({"dense", "paged"}), **_CAPS), options=("num_splits",),
         summary="flash-decoding: CTAs per split write (out, lse) partials, a CUDA combine"),
]
