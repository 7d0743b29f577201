"""torch-fa2 backend: the FlashAttention-2 kernels bundled with PyTorch (no package beyond a CUDA
build of torch)."""

from impls.registry import Backend, Capabilities, Impl

BACKEND = Backend(
    name="torch-fa2",
    summary="FlashAttention-2 as bundled in torch (SDPA's FLASH_ATTENTION backend)",
    requires=("torch",),
    probe_module="impls.torch_fa2.flash",
    vendor=True,
    shown_config=("kernel",),
)

IMPLS = [
    Impl(BACKEND, "one-pass", "impls.torch_fa2.flash", allocates_outputs=True,
         caps=Capabilities(
             frozenset({"dense"}), dtypes=frozenset({"float16", "bfloat16"}), max_head_dim=256,
             head_dim_multiple=8, note="torch's FlashAttention-2: fp16/bf16, head_dim % 8 == 0 "
                                       "and <= 256",
             kv_note="FlashAttention-2 takes q, k and v of one 16-bit dtype (no fp8 cache)",
             q_note="this adapter passes one query token a sequence",
             mask_note="this adapter passes no window or soft cap",
             no_kernel_for={"paged": "torch 2.11's _flash_attention_forward takes no block table"}),
         summary="uniform lengths: aten._scaled_dot_product_flash_attention (SDPA's flash op); "
                 "ragged: aten._flash_attention_forward (varlen) with seqused_k; GQA native"),
    Impl(BACKEND, "split-k", None,
         lacks="torch 2.11's _flash_attention_forward takes no num_splits (FA2 splits the KV "
               "axis by its own heuristic inside the dense row)"),
]
