"""torch-cudnn backend: cuDNN's fused attention as PyTorch ships it (no package beyond a CUDA
build of torch)."""

from impls.registry import Backend, Capabilities, Impl


def _cudnn_version() -> dict[str, str]:
    import torch

    return {"cudnn (torch's)": str(torch.backends.cudnn.version())} \
        if torch.backends.cudnn.is_available() else {}


BACKEND = Backend(
    name="torch-cudnn",
    summary="cuDNN fused attention through torch (SDPA's CUDNN_ATTENTION backend)",
    requires=("torch",),  # runs only on a GPU: torch's CPU attention is no baseline
    vendor=True,
    compiles="cuDNN builds an execution plan per shape on its first call (kept in-process)",
    versions=_cudnn_version,
    shown_config=("kernel",),
)

IMPLS = [
    Impl(BACKEND, "one-pass", "impls.torch_cudnn.sdpa", allocates_outputs=True,
         caps=Capabilities(
             frozenset({"dense"}), dtypes=frozenset({"float16", "bfloat16"}), max_head_dim=128,
             head_dim_multiple=8, uniform_lengths_only=True,
             note="cuDNN SDPA via torch: fp16/bf16, head_dim % 8 == 0 and <= 128 on sm90, one "
                  "length for the whole batch (no per-sequence lengths)",
             kv_note="torch's SDPA takes q, k and v of one dtype (no fp8 cache with a 16-bit "
                     "query)",
             q_note="torch's SDPA aligns is_causal top-left (a query's first token would see "
                    "the cache's first), not as a decode step's draft",
             mask_note="torch's SDPA op takes no window or soft cap",
             no_kernel_for={"paged": "torch 2.11 has no paged-KV attention kernel"}),
         summary="torch.ops.aten._scaled_dot_product_cudnn_attention (cuDNN), GQA native"),
    Impl(BACKEND, "split-k", None,
         lacks="torch exposes no split-KV control for cuDNN (cuDNN picks its own schedule)"),
]
