"""CuPy backend: one-pass and split-K decode kernels in CUDA C++ (NVRTC via cupy.RawModule)."""

from impls.registry import Backend, Capabilities, Impl

BACKEND = Backend(
    name="cupy",
    summary="raw CUDA C++ compiled by NVRTC through cupy.RawModule, launched on torch's stream",
    requires=("cupy",),
    compiles="NVRTC on the first use of each kernel specialisation; cached on disk (CUPY_CACHE_DIR)",
    packages=("cupy-cuda13x", "cupy-cuda12x"),
    jit_cache_env=("CUPY_CACHE_DIR",),
    shown_config=("chunk", "num_items", "merges", "TPR"),
    tunable=("TPR", "UNROLL", "NUM_WARPS", "PREFETCH"),
)

# 16-byte vector loads: head_dim a multiple of 8 (16-bit) elements; up to 256.
CAPS = Capabilities(frozenset({"dense", "paged"}), max_head_dim=256, head_dim_multiple=8,
                    note="16-byte vector loads need head_dim % 8 == 0")
IMPLS = [
    Impl(BACKEND, "one-pass", "impls.cupy.one_pass", CAPS, options=("config",),
         summary="CTA per (kv head, <= 8 query heads, sequence), 16 B loads, shuffles; paged: "
                 "per-token page lookup (any page size)"),
    Impl(BACKEND, "split-k", "impls.cupy.split_k", CAPS, options=("num_splits", "config"),
         summary="flash-decoding over a balanced plan (impls.plan): CTAs per work item, split "
                 "sequences write (out, lse) partials a CUDA kernel merges"),
]
