"""CuPy backend: one-pass and split-K decode kernels in CUDA C++ (NVRTC via cupy.RawModule)."""

from impls.launch import Knob, Space
from impls.registry import Backend, Capabilities, Impl
from specs.problem import KV_DTYPES, MAX_Q_LEN

BACKEND = Backend(
    name="cupy",
    summary="raw CUDA C++ compiled by NVRTC through cupy.RawModule, launched on torch's stream",
    requires=("cupy",),
    install="pip install -e .[cuda13]",
    compiles="NVRTC on the first use of each kernel specialisation; cached on disk (CUPY_CACHE_DIR)",
    packages=("cupy-cuda13x", "cupy-cuda12x"),
    jit_cache_env=("CUPY_CACHE_DIR",),
    read_probe="impls.cupy.read_probe",
    shown_config=("chunk", "num_items", "merges", "merge", "tensor_cores", "block_h", "tpr"),
    # the ring's knobs with the tensor-core loop, the thread mapping's with the CUDA-core one
    # (each refused where the problem cannot take it: pick_launch_config says why)
    space=Space(Knob("tensor_cores", (1, 0), param="TENSOR_CORES"),
                Knob("num_warps", (2, 4, 8), param="NUM_WARPS", when={"tensor_cores": 1}),
                Knob("num_stages", (2, 3, 4), param="STAGES", when={"tensor_cores": 1}),
                Knob("block_h", (16, 32, 64), param="BLOCK_H", when={"tensor_cores": 1}),
                Knob("tpr", (4, 8, 16), param="TPR", when={"tensor_cores": 0}),
                Knob("unroll", (2, 4), param="UNROLL", when={"tensor_cores": 0}),
                Knob("prefetch", (0, 1), param="PREFETCH", when={"tensor_cores": 0}),
                Knob("items_first", (0, 1), param="ITEMS_FIRST", variants=("split-k",)),
                Knob("merge", ("kernel", "fused"), param="MERGE", variants=("split-k",))),
)

# 16-byte vector loads: head_dim a multiple of 8 (16-bit) elements; up to 256. Tensor cores
# (mma.sync, cp.async ring) for fp16/bf16 with head_dim % 16 == 0; CUDA cores otherwise.
# fp8 caches: converted in registers, scales folded into the score scale and the output
# (head_dim % 16 == 0: the launchers refuse others as Unsupported)
CAPS = Capabilities(frozenset({"dense", "paged"}), max_head_dim=256, head_dim_multiple=8,
                    kv_dtypes=frozenset(KV_DTYPES),
                    note="16-byte vector loads need head_dim % 8 == 0, % 16 with an fp8 cache",
                    max_q_len=MAX_Q_LEN, windows=True, softcaps=True)
IMPLS = [
    Impl(BACKEND, "one-pass", "impls.cupy.one_pass", CAPS, options=("config",),
         summary="CTA per (kv head, block of its query rows, sequence): mma.sync on up to 64 "
                 "rows (a warp per 16-row tile) fed by cp.async rings (fp16/bf16), else 16 B loads "
                 "and FMAs; paged: per-row page lookup; a draft's tokens x the GQA group are the "
                 "rows, each masked to its own span"),
    Impl(BACKEND, "split-k", "impls.cupy.split_k", CAPS, options=("num_splits", "config"),
         summary="flash-decoding over a balanced plan (impls.plan), the one-pass loop per work "
                 "item; split sequences write (out, lse) partials that a combine kernel merges "
                 "(or, MERGE=fused, the CTA that finishes last)"),
]
