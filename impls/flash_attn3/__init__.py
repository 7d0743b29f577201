"""flash_attn3 backend: FlashAttention-3, FlashAttention's Hopper kernels, as vLLM builds and ships
them (``vllm/vllm_flash_attn/_vllm_fa3_C.abi3.so`` in ``vllm==0.33.0``, on torch's stable ABI).
Install with ``pip install --no-deps vllm==0.33.0`` (vLLM's dependencies would replace torch):
only the ``vllm_flash_attn`` package is used, loaded without running vLLM's own ``__init__``
(``fa3.load``). Its sibling FA4 is ``flash_attn4``.
"""

from impls.registry import Backend, Capabilities, Impl
from specs.problem import MAX_Q_LEN

INSTALL = "pip install --no-deps vllm==0.33.0"  # FA3 ships inside vLLM's wheel


def _versions() -> dict[str, str]:
    from impls.flash_attn3.fa3 import provenance
    return provenance()


BACKEND = Backend(
    name="flash_attn3",
    summary="FlashAttention-3 (vLLM's build of FA3's Hopper kernels): flash_attn_varlen_func, "
            "scheduler metadata planned outside the timed call",
    requires=("torch",),  # the extension is found and loaded by the probe (see fa3.load)
    probe_module="impls.flash_attn3.fa3",
    vendor=True,
    packages=("vllm",),
    install=INSTALL,
    versions=_versions,
    shown_config=("num_splits", "pack_gqa"),
)

# FA3 compiles head dims 64, 96, 128, 192 and 256 and pads others up to them; its split-KV kernel
# refuses more than 256 splits.
CAPS = Capabilities(frozenset({"dense", "paged"}), dtypes=frozenset({"float16", "bfloat16"}),
                    max_head_dim=256, head_dim_multiple=8, max_splits=256,
                    note="FlashAttention-3 on sm90: fp16/bf16, head_dim a multiple of 8 up to "
                         "256, at most 256 splits",
                    kv_note="FA3's fp8 path takes an fp8 query with descale factors (a bf16/fp16 "
                            "query with an fp8 cache is refused: 'query and key must have the "
                            "same dtype'); a quantised query is another problem than this one",
                    max_q_len=MAX_Q_LEN, windows=True, softcaps=True)

IMPLS = [
    Impl(BACKEND, "one-pass", "impls.flash_attn3.fa3", CAPS, entry="prepare_one_pass",
         summary="flash_attn_varlen_func(fa_version=3), num_splits=1; dense: the cache as a "
                 "batch with seqused_k; paged: block_table"),
    Impl(BACKEND, "split-k", "impls.flash_attn3.fa3", CAPS, entry="prepare_split_kv",
         options=("num_splits",),
         summary="FA3's split-KV with its own split heuristic (num_splits=0) or a forced count; "
                 "the combine is FA3's"),
]
