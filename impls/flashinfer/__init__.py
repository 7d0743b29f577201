"""FlashInfer backend (``pip install flashinfer-python``): its batch decode kernels on the paged
cache, JIT-compiled with nvcc on the first use of each configuration (dtype, head_dim, path).
"""

from impls.registry import Backend, Capabilities, Impl
from specs.problem import KV_DTYPES, MAX_Q_LEN

BACKEND = Backend(
    name="flashinfer",
    summary="FlashInfer batch decode (BatchDecodeWithPagedKVCacheWrapper), planned outside the timed call",
    requires=("flashinfer",),
    install="pip install -e .[flashinfer]",
    probe_module="impls.flashinfer.decode",
    vendor=True,
    compiles="nvcc JIT on the first use of each (dtype, head_dim, path); cached on disk",
    packages=("flashinfer-python",),
    jit_cache_env=("FLASHINFER_WORKSPACE_BASE",),
    shown_config=("call", "kernel", "split_kv", "lse"),
)

CAPS = Capabilities(frozenset({"dense", "paged"}), dtypes=frozenset({"float16", "bfloat16"}),
                    head_dims=frozenset({64, 128, 256}), kv_dtypes=frozenset(KV_DTYPES),
                    kv_scales=frozenset({"tensor"}), windows=True, softcaps=True,
                    max_q_len=MAX_Q_LEN,
                    note="FlashInfer decode: fp16/bf16, head_dim 64, 128 or 256",
                    kv_note="FlashInfer's decode takes one float k_scale and v_scale per call")
_PATH = ("tensor-core path (its prefill kernel) for GQA groups >= 4, CUDA-core decode kernel "
         "below; ")

IMPLS = [
    Impl(BACKEND, "one-pass", "impls.flashinfer.decode", CAPS, entry="prepare_one_pass",
         allocates_outputs=True,
         summary=_PATH + "disable_split_kv=True; paged: CSR page indices from the block table; "
                         "dense: the cache viewed as pages of up to 64 rows (no copy)"),
    Impl(BACKEND, "split-k", "impls.flashinfer.decode", CAPS, entry="prepare_split_kv",
         allocates_outputs=True,
         summary=_PATH + "FlashInfer's own split-KV schedule (plan picks the split) and merge"),
]
