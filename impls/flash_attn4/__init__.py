"""flash_attn4 backend: FlashAttention-4 (``pip install flash-attn-4``, module
``flash_attn.cute``), FlashAttention's CuTe-DSL kernels for Hopper and Blackwell, compiled
in-process on the first call of each configuration. Its Hopper sibling FA3 is ``flash_attn3``.
(flash-attn 2, the ``flash_attn`` CUDA extension, cannot be installed on the GPU machine this
project is verified on, so it has no adapter here: see the README.)
"""

from impls.registry import Backend, Capabilities, Impl
from specs.problem import MAX_Q_LEN

BACKEND = Backend(
    name="flash_attn4",
    summary="flash-attn-4 (flash_attn.cute): FlashAttention's CuTe-DSL kernels",
    requires=("flash_attn.cute",),
    install="pip install -e .[flash]",
    probe_module="impls.flash_attn4.fa4",
    vendor=True,
    compiles="CuTe DSL JIT, in-process, on the first call of each configuration",
    packages=("flash-attn-4", "nvidia-cutlass-dsl", "quack-kernels"),
    jit_cache_env=("FLASH_ATTENTION_CUTE_DSL_CACHE_DIR",),
    shown_config=("kernel",),
)

# Paged KV of flash-attn-4 4.0.0b36 on sm90 computes wrong outputs at head_dim 80 and 96, rejects
# odd multiples of 8 and faults at 136 (scripts/probe_caps.py; results/nvidia-h200/
# 2026-11-21-vendors/README.md): the paged layout declares the head dims that passed.
PAGED_HEAD_DIMS = frozenset({16, 32, 48, 64, 112, 128, 256})
CAPS = Capabilities(
    frozenset({"dense", "paged"}), dtypes=frozenset({"float16", "bfloat16"}), max_head_dim=256,
    head_dim_multiple=8, note="flash-attn-4 on sm90: fp16/bf16, head_dim a multiple of 8 up to 256",
    kv_note="flash-attn-4's interface takes q, k and v of one 16-bit dtype on sm90 (no fp8 "
            "cache with a 16-bit query)",
    max_q_len=MAX_Q_LEN, windows=True, softcaps=True,
    per_layout={"paged": dict(
        head_dims=PAGED_HEAD_DIMS,
        note="flash-attn-4 4.0.0b36 paged KV on sm90: head_dim 16, 32, 48, 64, 112, 128 or 256; "
             "80 and 96 give wrong results, odd multiples of 8 are rejected, 136 faults "
             "(scripts/probe_caps.py)")})

IMPLS = [
    Impl(BACKEND, "one-pass", "impls.flash_attn4.fa4", CAPS, allocates_outputs=True,
         summary="dense: flash_attn_func (uniform lengths), flash_attn_varlen_func with seqused_k "
                 "(ragged); paged: flash_attn_varlen_func(seqused_k, page_table), num_splits=1; "
                 "a multi-token query: flash_attn_varlen_func(cu_seqlens_q, causal=True)"),
    Impl(BACKEND, "split-k", None, lacks="flash-attn-4 has no split-KV on sm90"),
]
