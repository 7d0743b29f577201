"""FlashInfer backend (``pip install flashinfer-python``): its batch decode kernels on the paged
cache, JIT-compiled with nvcc on the first use of each configuration (dtype, head_dim, path).
"""

from impls.registry import Backend, Capabilities, Impl

BACKEND = Backend(
    name="flashinfer",
    summary="FlashInfer batch decode (BatchDecodeWithPagedKVCacheWrapper), planned outside the timed call",
    requires=("flashinfer",),
    cpu_mode=None,
    probe_module="impls.flashinfer.decode",
    vendor=True,
    compiles="nvcc JIT on the first use of each (dtype, head_dim, path); cached on disk",
)

_CAPS = dict(dtypes=frozenset({"float16", "bfloat16"}), head_dims=frozenset({64, 128, 256}),
             note="FlashInfer decode: fp16/bf16, head_dim 64, 128 or 256")
_PATH = ("tensor-core path (its prefill kernel) for GQA groups >= 4, CUDA-core decode kernel "
         "below; ")

IMPLS = [
    Impl(BACKEND, "dense", "impls.flashinfer.decode", Capabilities(frozenset({"dense"}), **_CAPS),
         entry="prepare_one_pass", allocates_outputs=True,
         summary=_PATH + "the dense cache viewed as pages of up to 64 rows (no copy), disable_split_kv=True"),
    Impl(BACKEND, "paged", "impls.flashinfer.decode", Capabilities(frozenset({"paged"}), **_CAPS),
         entry="prepare_one_pass", allocates_outputs=True,
         summary=_PATH + "CSR page indices from the block table, disable_split_kv=True"),
    Impl(BACKEND, "split-k", "impls.flashinfer.decode",
         Capabilities(frozenset({"dense", "paged"}), **_CAPS),
         entry="prepare_split_kv", allocates_outputs=True,
         summary=_PATH + "FlashInfer's own split-KV schedule (plan picks the split) and merge"),
]
