"""Gluon backend (Triton's lower-level dialect): one-pass and split-K decode kernels on Hopper,
with the K/V pipeline, layouts and tensor-core instruction written out (GPU only)."""

from impls.launch import Knob, Space
from impls.registry import Backend, Capabilities, Impl
from specs.problem import KV_DTYPES, MAX_Q_LEN

BACKEND = Backend(
    name="gluon",
    summary="Gluon kernels: explicit K/V ring (cp.async; TMA + mbarriers for split-K's dense "
            "tiles), mma_v2 on the 16-row GQA tile, the warpgroup MMA on a draft's 64 rows",
    requires=("triton.experimental.gluon",),
    install="pip install -e .[triton]",
    compiles="Gluon JIT (Triton's compiler) on the first launch of each specialisation; cached "
             "on disk (TRITON_CACHE_DIR)",
    packages=("triton",),
    jit_cache_env=("TRITON_CACHE_DIR",),
    shown_config=("chunk", "num_items", "merges", "block_n", "num_stages", "tma", "wgmma",
                  "warp_spec"),
    read_probe="impls.triton.read_probe",
    # rings beyond a program's shared memory are refused by pick_launch_config before a build
    space=Space(Knob("block_n", (16, 32, 64, 128), param="BLOCK_N"),
                Knob("num_stages", (2, 3, 4), param="NUM_STAGES"),
                Knob("num_warps", (4, 8)),
                Knob("tma", (1, 0), param="DENSE_TMA", layouts=("dense",)),
                Knob("dim_split", (0, 1), param="DIM_SPLIT"),
                Knob("wgmma", (0, 1), param="WGMMA"),
                Knob("min_blocks", (0, 2, 3, 4), param="MIN_BLOCKS"),
                # impls.gluon._ws: 128 rows a program (two consumers, a loader)
                Knob("warp_spec", (0, 1), param="WARP_SPEC")),
)

# Gluon has no interpreter: no CPU mode (the CPU tests compile the kernels for sm_90 instead).
# fp8 caches: tiles converted to the query's dtype as their fragments leave shared memory.
# Windows: copies and scores masked before the window's start, ranges cut to start at its tile;
# soft-capped scores: tanh from one exp2; multi-token queries: the tokens x the group are the
# tile's rows, each masked to its own span (as the Triton backend does).
CAPS = Capabilities(
    frozenset({"dense", "paged"}), dtypes=frozenset({"bfloat16", "float16"}), min_head_dim=16,
    max_head_dim=256, head_dim_multiple=8, kv_dtypes=frozenset(KV_DTYPES), windows=True, softcaps=True,
    max_q_len=MAX_Q_LEN,
    note="16-bit only: mma_v2 multiplies float32 as tf32, outside the float32 tolerance; rows "
         "are copied in 16-byte cp.async vectors, so head_dim is a multiple of 8, and at least 16 "
         "(a row of 8 does not lower for sm_90: Triton 3.6's ConvertTritonGPUToLLVM fails)")
IMPLS = [
    Impl(BACKEND, "one-pass", "impls.gluon.one_pass", CAPS, options=("config",),
         summary="grid (kv_heads x row blocks, batch); a 2-slot cp.async ring (paged: table entries "
                 "prefetched a tile ahead); warp_spec 1: a loader and two consumer warpgroups, "
                 "128 rows a program (impls.gluon._ws)"),
    Impl(BACKEND, "split-k", "impls.gluon.split_k", CAPS, options=("num_splits", "config"),
         summary="flash-decoding over the balanced plan (impls.plan); dense tiles by TMA; split "
                 "sequences write (out, lse) partials a Gluon kernel merges; warp_spec 1: the "
                 "items on impls.gluon._ws's partitions"),
]
