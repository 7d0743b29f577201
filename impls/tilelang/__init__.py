"""TileLang backend: one-pass and split-K decode kernels (a GPU is needed: TileLang has no CPU
mode for CUDA kernels; the CPU tests lower them to CUDA source and compile that with nvcc).

TileLang 0.1.15 pins apache-tvm-ffi<0.1.13, which FlashInfer and FlashAttention-4 outgrow: it
runs in an environment of its own (``environment="tilelang"``, the ``tilelang`` extra).
"""

from impls.launch import Knob, Space
from impls.registry import Backend, Capabilities, Impl
from specs.problem import KV_DTYPES

BACKEND = Backend(
    name="tilelang",
    summary="TileLang kernels; GQA group as a 16-row T.gemm tile, online softmax, "
            "T.Pipelined K/V tiles (TMA on sm_90)",
    requires=("tilelang",),
    install="pip install -e .[tilelang] (in an environment of its own: README)",
    environment="tilelang",
    compiles="TileLang JIT (TVM lowering + nvcc) on the first call of each specialisation; "
             "cached on disk (TILELANG_CACHE_DIR)",
    packages=("tilelang", "apache-tvm-ffi"),
    jit_cache_env=("TILELANG_CACHE_DIR",),
    shown_config=("chunk", "num_items", "merges", "block_n", "gather", "num_stages"),
    # TileLang's own autotuner (the tune option) searches this space too
    space=Space(Knob("block_n", (32, 64, 128), param="BLOCK_N"),
                Knob("num_warps", (4, 8)),
                Knob("num_stages", (1, 2, 3))),
)

# T.gemm splits the K/V tile's columns and the head dim over 4 warps in multiples of 8 (head
# dims of 32k); the query group is padded to 16-64 MMA rows; fp16/bf16 tensor-core operands
# (fp8 tiles converted to the query's dtype in shared memory first).
CAPS = Capabilities(frozenset({"dense", "paged"}), dtypes=frozenset({"float16", "bfloat16"}),
                    min_head_dim=32, max_head_dim=256, head_dim_multiple=32, max_group_size=64,
                    kv_dtypes=frozenset(KV_DTYPES),
                    note="T.gemm tiles: bf16/fp16 operands, head dims of 32k, groups <= 64",
                    q_note="not implemented in its kernels yet: the T.gemm rows are one query "
                           "token's group",
                    mask_note="not implemented in its kernels yet")
IMPLS = [
    Impl(BACKEND, "one-pass", "impls.tilelang.one_pass", CAPS, options=("config", "tune"),
         summary="grid (batch, kv_heads); paged: one TMA tile per page where the tile divides "
                 "the page, else a per-token cp.async gather"),
    Impl(BACKEND, "split-k", "impls.tilelang.split_k", CAPS,
         options=("num_splits", "config", "tune"),
         summary="flash-decoding over a balanced plan (impls.plan): split sequences write "
                 "(out, lse) partials a TileLang kernel merges"),
]
