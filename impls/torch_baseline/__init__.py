"""torch baselines: the attention kernels PyTorch ships, called on the same inputs (GPU only).

Two backends, one per kernel family inside torch, so each is a row of its own:
``torch-cudnn`` (cuDNN's fused attention) and ``torch-fa2`` (the FlashAttention-2 build bundled
with torch). Neither needs a package beyond a CUDA build of torch.
"""

from impls.registry import Backend, Capabilities, Impl

CUDNN = Backend(
    name="torch-cudnn",
    summary="cuDNN fused attention through torch (SDPA's CUDNN_ATTENTION backend)",
    requires=("torch",),
    cpu_mode=None,  # the point is torch's CUDA kernels; its CPU path is no baseline
    vendor=True,
    compiles="cuDNN builds an execution plan per shape on its first call (kept in-process)",
)
FA2 = Backend(
    name="torch-fa2",
    summary="FlashAttention-2 as bundled in torch (SDPA's FLASH_ATTENTION backend)",
    requires=("torch",),
    cpu_mode=None,
    probe_module="impls.torch_baseline.flash2",
    vendor=True,
)

IMPLS = [
    Impl(CUDNN, "dense", "impls.torch_baseline.sdpa_cudnn",
         Capabilities(frozenset({"dense"}), dtypes=frozenset({"float16", "bfloat16"}),
                      max_head_dim=128, head_dim_multiple=8, uniform_lengths_only=True,
                      note="cuDNN SDPA via torch: fp16/bf16, head_dim % 8 == 0 and <= 128 on "
                           "sm90, one length for the whole batch (no per-sequence lengths)"),
         summary="torch.ops.aten._scaled_dot_product_cudnn_attention (cuDNN), GQA native",
         allocates_outputs=True),
    Impl(CUDNN, "paged", None, cell_unsupported="torch 2.11 has no paged-KV attention kernel"),
    Impl(CUDNN, "split-k", None,
         cell_unsupported="torch exposes no split-KV control for cuDNN (cuDNN picks its own schedule)"),
    Impl(FA2, "dense", "impls.torch_baseline.flash2",
         Capabilities(frozenset({"dense"}), dtypes=frozenset({"float16", "bfloat16"}),
                      max_head_dim=256, head_dim_multiple=8,
                      note="torch's FlashAttention-2: fp16/bf16, head_dim % 8 == 0 and <= 256"),
         summary="uniform lengths: aten._scaled_dot_product_flash_attention (SDPA's flash op); "
                 "ragged: aten._flash_attention_forward (varlen) with seqused_k; GQA native",
         allocates_outputs=True),
    Impl(FA2, "paged", None,
         cell_unsupported="torch 2.11's _flash_attention_forward takes no block table"),
    Impl(FA2, "split-k", None,
         cell_unsupported="torch 2.11's _flash_attention_forward takes no num_splits (FA2 splits "
                          "the KV axis by its own heuristic inside the dense row)"),
]
