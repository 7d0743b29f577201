"""torch baseline: the attention kernels PyTorch ships, called on the same inputs (GPU only)."""

from impls.registry import Backend, Capabilities, Impl

BACKEND = Backend(
    name="torch",
    summary="PyTorch's own attention kernels (cuDNN SDPA) as the vendor baseline",
    requires=("torch",),
    cpu_mode=None,  # the point is torch's CUDA kernels; its CPU path is no baseline
)

IMPLS = [
    Impl(BACKEND, "dense", "impls.torch_baseline.sdpa_cudnn",
         Capabilities(frozenset({"dense"}), dtypes=frozenset({"float16", "bfloat16"}),
                      max_head_dim=128, head_dim_multiple=8, uniform_lengths_only=True,
                      note="cuDNN SDPA via torch: fp16/bf16, head_dim % 8 == 0 and <= 128 on "
                           "sm90, one length for the whole batch (no per-sequence lengths)"),
         summary="torch.ops.aten._scaled_dot_product_cudnn_attention (cuDNN), GQA native",
         allocates_outputs=True),
    Impl(BACKEND, "paged", None, cell_unsupported="torch 2.11 has no paged-KV attention kernel"),
    Impl(BACKEND, "split-k", None,
         cell_unsupported="torch exposes no split-KV decode kernel (cuDNN picks its own schedule)"),
]
