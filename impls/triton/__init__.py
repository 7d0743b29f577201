"""Triton backend: one-pass and split-K decode kernels (GPU, or the CPU interpreter)."""

from impls.launch import Knob, Space
from impls.registry import Backend, Capabilities, Impl
from specs.problem import KV_DTYPES, MAX_Q_LEN

BACKEND = Backend(
    name="triton",
    summary="Triton kernels; GQA group as a 16-row tl.dot tile, online softmax",
    requires=("triton",),
    install="pip install -e .[triton]",
    cpu_mode="interpreter",  # TRITON_INTERPRET=1, set by impls/__init__.py without a GPU
    interpreter_bf16_ok=True,  # bf16 operands upcast after rounding there (_common.attend_range)
    compiles="Triton JIT on the first launch of each specialisation; cached on disk (TRITON_CACHE_DIR)",
    packages=("triton",),
    jit_cache_env=("TRITON_CACHE_DIR",),
    shown_config=("chunk", "num_items", "merges", "block_n"),
    read_probe="impls.triton.read_probe",
    space=Space(Knob("block_n", (16, 32, 64, 128), param="BLOCK_N"),
                Knob("block_h", (16, 32, 64, 128), param="BLOCK_H"),
                Knob("num_warps", (4, 8)),
                Knob("num_stages", (2, 3, 4)),
                Knob("gather", ("page", "token"), param="GATHER", layouts=("paged",)),
                Knob("merge", ("kernel", "fused"), param="MERGE", variants=("split-k",)),
                Knob("dim_split", (0, 1), param="DIM_SPLIT"),
                Knob("min_blocks", (0, 2, 3, 4), param="MIN_BLOCKS")),
)

# Head dims are padded to a power of two inside the kernels (masked), up to 256, or (dim_split)
# cut in two tiles of powers of two.
# fp8 caches: converted to the query's dtype as tiles land, the scales folded into the score
# scale and the output
# Windows: tokens before the window's start masked, ranges cut to start at its tile (split-K:
# the plan covers each sequence from there). Soft-capped scores: tanh from one exp2.
# Multi-token queries: the tokens x the group are the tile's rows, each masked to its own span.
CAPS = Capabilities(frozenset({"dense", "paged"}), max_head_dim=256, kv_dtypes=frozenset(KV_DTYPES),
                    windows=True, softcaps=True, max_q_len=MAX_Q_LEN)
IMPLS = [
    Impl(BACKEND, "one-pass", "impls.triton.one_pass", CAPS, options=("config",),
         summary="grid (kv_heads x row blocks, batch); paged: per-token page gather (any page size)"),
    Impl(BACKEND, "split-k", "impls.triton.split_k", CAPS, options=("num_splits", "config"),
         summary="flash-decoding over a balanced plan (impls.plan): work items of whole tiles, "
                 "split sequences write (out, lse) partials a Triton kernel merges (MERGE=fused: "
                 "the last program of each sequence merges)"),
]
