"""flash_attn backend: flash-attn-4 (``pip install flash-attn-4``, module ``flash_attn.cute``),
FlashAttention's CuTe-DSL kernels for Hopper and Blackwell, compiled in-process on the first
call of each configuration. (flash-attn 2, the ``flash_attn`` CUDA extension, cannot be installed
on the GPU machine this project is verified on, so it has no adapter here: see the README.)
"""

from impls.registry import Backend, Capabilities, Impl

BACKEND = Backend(
    name="flash_attn",
    summary="flash-attn-4 (flash_attn.cute): FlashAttention's CuTe-DSL kernels",
    requires=("flash_attn.cute",),
    cpu_mode=None,
    probe_module="impls.flash_attn.fa4",
    vendor=True,
    compiles="CuTe DSL JIT, in-process, on the first call of each configuration",
)

_CAPS = dict(dtypes=frozenset({"float16", "bfloat16"}), max_head_dim=256, head_dim_multiple=8,
             note="flash-attn-4 on sm90: fp16/bf16, head_dim a multiple of 8 up to 256")

# Paged KV in flash-attn-4 4.0.0b36 on sm90, probed on an H200 (scripts/probe_caps.py, bf16 and
# fp16, page sizes 1/16/128; results/nvidia-h200/2026-11-21-vendors/): head_dim 80 and 96 compute
# wrong outputs (errors 6e4 to 9e8 times the tolerance, every page size), head dims that are odd
# multiples of 8 raise "Paged KV does not support irregular head dim" (page 16), and 136 hits an
# illegal memory access (page 128). Declared: the head dims that passed.
_PAGED_CAPS = dict(_CAPS, head_dims=frozenset({16, 32, 48, 64, 112, 128, 256}),
                   note="flash-attn-4 4.0.0b36 paged KV on sm90: head_dim 16, 32, 48, 64, 112, "
                        "128 or 256; 80 and 96 give wrong results, odd multiples of 8 are "
                        "rejected, 136 faults (scripts/probe_caps.py)")

IMPLS = [
    Impl(BACKEND, "dense", "impls.flash_attn.fa4", Capabilities(frozenset({"dense"}), **_CAPS),
         entry="prepare_dense", allocates_outputs=True,
         summary="flash_attn_func (uniform lengths); flash_attn_varlen_func with seqused_k on "
                 "the dense cache (ragged)"),
    Impl(BACKEND, "paged", "impls.flash_attn.fa4", Capabilities(frozenset({"paged"}), **_PAGED_CAPS),
         entry="prepare_paged", allocates_outputs=True,
         summary="flash_attn_varlen_func(seqused_k, page_table), num_splits=1"),
    Impl(BACKEND, "split-k", None, cell_unsupported="flash-attn-4 has no split-KV on sm90"),
]
