"""Helion backend: one-pass and split-K decode kernels written in PyTorch's tile DSL, which
compiles them to Triton (GPU, or Triton's CPU interpreter) and can autotune their configs."""

from impls.launch import Knob, Space
from impls.registry import Backend, Capabilities, Impl
from specs.problem import KV_DTYPES

BACKEND = Backend(
    name="helion",
    summary="Helion kernels (hl.tile over sequence x KV head x GQA group, hl.dot, online "
            "softmax); fixed configs, or Helion's autotuner with the tune option",
    requires=("helion",),
    install="pip install -e .[helion]",
    # No CPU mode for the harness and the suite: every problem shape is a new Helion trace and
    # Triton build (static shapes), about 50 minutes for the suite's ci profile on 2 cores. Its
    # kernels do run in Triton's interpreter: tests/test_helion.py checks them there.
    cpu_mode=None,
    compiles="Helion traces and lowers each kernel to Triton at prepare (per shape, dtype and "
             "layout: static shapes), then Triton JIT-compiles it; Helion's and Triton's caches",
    packages=("helion", "triton"),
    jit_cache_env=("HELION_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"),
    shown_config=("chunk", "num_items", "merges", "block_n"),
    # Helion's autotuner (the tune option) searches its own, wider space of Triton configs
    space=Space(Knob("block_h", (16, 32), param="BLOCK_H"),
                Knob("block_n", (16, 32, 64, 128), param="BLOCK_N"),
                Knob("num_warps", (4, 8)),
                Knob("num_stages", (2, 3, 4))),
)

# Head dims are padded to a power of two inside the kernels (masked), up to 256. fp8 caches:
# tiles converted to the query's dtype as they land, the scales applied once per program.
CAPS = Capabilities(frozenset({"dense", "paged"}), max_head_dim=256, kv_dtypes=frozenset(KV_DTYPES),
                    q_note="not implemented in its kernels yet: the tile's rows are one query "
                           "token's group",
                    mask_note="not implemented in its kernels yet")
IMPLS = [
    Impl(BACKEND, "one-pass", "impls.helion.one_pass", CAPS, options=("config", "tune"),
         summary="hl.tile over (batch, kv_heads, group); paged: per-token page gather"),
    Impl(BACKEND, "split-k", "impls.helion.split_k", CAPS, options=("num_splits", "config", "tune"),
         summary="flash-decoding over a balanced plan (impls.plan): one kernel over work items "
                 "writes (out, lse) partials of split sequences, a Helion kernel merges them"),
]
