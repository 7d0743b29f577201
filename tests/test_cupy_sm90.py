"""Every CuPy kernel source compiles for sm_90 with nvcc (no GPU needed), for each kind of
specialisation the launchers ask for (fp8 caches included), on both inner loops (tensor cores
and, where those are the default, the CUDA-core loop forced), with no local-memory stack frame
(a register array that spilled or was indexed at run time would show there)."""

import re
import shutil

import pytest

from impls.cupy import _build
from specs.problem import DecodeProblem
from tests.sm90_tools import nvcc_cubin

NVCC = shutil.which("nvcc")
pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc not on PATH")

PROBLEMS = [DecodeProblem(32, 8, 128, (100,), layout=layout, dtype=dtype)
            for dtype in ("bfloat16", "float16", "float32") for layout in ("dense", "paged")]
PROBLEMS += [DecodeProblem(hq, hkv, d, (100,), dtype=dtype) for hq, hkv, d, dtype in [
    (28, 4, 64, "bfloat16"),  # GQA 7, head_dim 64
    (32, 32, 96, "float16"),  # MHA, head_dim 96: 12 vectors on 16 lanes
    (16, 8, 256, "bfloat16"),  # head_dim 256: 4 warps, Q re-read from shared memory
    (56, 4, 208, "float16"),  # head_dim 208: 4 warps (8 do not fit), 2 in split-K's shared ring
    (16, 1, 256, "float32"),  # MQA 16 (two chunks of 8), fp32 head_dim 256: 2 vectors a lane
    (40, 8, 80, "bfloat16"),  # head_dim 80: 10 16-byte vectors per row (padded to 16)
    (64, 2, 128, "float16"),  # GQA 32: two tensor-core head blocks
    (32, 8, 72, "bfloat16"),  # head_dim 72: not a multiple of the mma's k (CUDA cores)
]]
PROBLEMS += [DecodeProblem(32, 8, 128, (100,) * 64, layout="paged"),  # rings of 2 warps x 2 stages
             DecodeProblem(64, 2, 80, (100,) * 16, layout="paged", page_size=12),  # GQA 32, 12-token pages
             DecodeProblem(8, 4, 256, (40, 50) * 150, layout="paged", page_size=2)]  # short: 2 x 2 at 256
# fp8 caches: fp8 rings and per-lane fragment loads on tensor cores, 16 fp8 a vector on CUDA cores
E4M3, E5M2 = dict(kv_dtype="float8_e4m3fn", kv_scale="head"), dict(kv_dtype="float8_e5m2")
PROBLEMS += [DecodeProblem(32, 8, 128, (100,), layout=layout, dtype=dtype, **kv)
             for dtype, kv in (("bfloat16", E4M3), ("float16", E5M2)) for layout in ("dense", "paged")]
PROBLEMS += [DecodeProblem(hq, hkv, d, (100,), dtype=dtype, **kv) for hq, hkv, d, dtype, kv in [
    (28, 4, 64, "bfloat16", E4M3),  # GQA 7, head_dim 64: 64-byte rows padded to a line
    (32, 32, 96, "float16", E4M3),  # head_dim 96: V read a word a row
    (16, 8, 256, "bfloat16", E5M2),  # head_dim 256: Q's fp8-order fragments re-read per tile
    (16, 1, 128, "float16", E5M2),  # MQA 16 on tensor cores
]]
PROBLEMS += [DecodeProblem(32, 8, 128, (100,) * 64, layout="paged", **E4M3),  # fp8 rings, 2 x 2
             DecodeProblem(64, 2, 80, (100,) * 16, layout="paged", page_size=12, dtype="float16",
                           **E5M2)]  # head_dim 80: V read 2 bytes a row
# soft-capped scores (SOFTCAP builds) on both loops, fp8 included; a window is a runtime argument
PROBLEMS += [DecodeProblem(32, 8, 128, (100,), layout="paged", softcap=30.0, window=50),
             DecodeProblem(28, 4, 64, (100,), softcap=50.0, **E4M3)]
# drafts (MULTI_TOKEN builds: each row masked to its token's span) on both loops: tokens x the group
# in one tile, a block split across tokens (GQA 12 x 2 on tensor cores), with a window, fp8, fp32
PROBLEMS += [DecodeProblem(32, 8, 128, (100,), layout="paged", q_len=4, window=50, softcap=30.0),
             DecodeProblem(24, 2, 128, (100,), q_len=2),
             DecodeProblem(8, 1, 128, (100,), q_len=8, **E4M3),
             DecodeProblem(12, 4, 64, (100,), q_len=3, dtype="float32")]
# CTAs of 2 and 4 row tiles (a warp each per token slice, named barriers): 32 rows (Llama-3-8B,
# q_len 8), 64 (MQA 8 x q_len 8), 48 in 64 (padded tiles), paged, fp8, head_dim 256, two slices
PROBLEMS += [DecodeProblem(32, 8, 128, (100,) * 16, layout="paged", q_len=8),
             DecodeProblem(8, 1, 128, (100,) * 128, q_len=8, window=50, softcap=30.0),
             DecodeProblem(8, 1, 64, (100,), q_len=6, layout="paged", page_size=12),
             DecodeProblem(8, 1, 128, (100,), q_len=8, layout="paged", **E4M3),
             DecodeProblem(16, 8, 256, (100,), q_len=16)]


def _loops(problem):
    """The launch configs to build: the default, a CTA of the KV head's fewest row tiles, and
    the CUDA-core loop where tensor cores are the default (up to GQA 4 and 16 query rows: a
    block of 8 heads at head_dim 128 spills on CUDA cores, and so does a draft of 8 tokens x
    GQA 4, one reason they go to the tensor cores)."""
    yield "default", None
    if _build.tensor_cores_fit(problem) and _build.rows_block(problem) > _build.MMA_ROWS:
        # the fewest row tiles: what the rule picks for K/V beyond L2 (these problems fit it)
        yield "rows", {"BLOCK_H": _build.rows_block(problem)}
    if _build.tensor_cores_fit(problem) and problem.q_len == 1 and \
            _build.fitting_warps(problem, 2, _build.MMA_ROWS, 8) != 8:
        # split-K's shared ring where 8 warps do not fit (alone_sharers): 2 warps x 2 stages
        yield "shared", dict(zip(("NUM_WARPS", "STAGES"), _build.shared_ring(_build.MMA_ROWS)))
    if _build.tensor_cores_fit(problem) and problem.q_len * problem.group_size <= 16 and \
            (problem.group_size <= 4 or problem.head_dim <= 64):
        yield "cuda-cores", {"TENSOR_CORES": 0}


def _cases():
    for p in PROBLEMS:
        for loop, config in _loops(p):
            for src, fused in (("one_pass.cu", None), ("split_k.cu", 0), ("split_k.cu", 1)):
                merge = "" if fused is None else ("-fused" if fused else "-kernel")
                yield pytest.param(src, p, config, fused, id=f"{src}-{p.label()}-{loop}{merge}")


@pytest.mark.parametrize("src,problem,config,fused", list(_cases()))
def test_cupy_kernel_compiles_for_sm90(src, problem, config, fused, tmp_path):
    defines = _build.pick_launch_config(problem, config, split=fused is not None)
    if fused is not None:  # the split kernels, with either merge (_build.split_merge)
        defines["FUSED_MERGE"] = fused
    # what NVRTC is given: the source as _build.source() composes it
    res = nvcc_cubin(_build.source(src), defines, tmp_path / "k.cubin")
    assert res.returncode == 0, res.stderr[-3000:]
    frames = [int(n) for n in re.findall(r"(\d+) bytes stack frame", res.stderr)]
    assert frames and all(n == 0 for n in frames), res.stderr


@pytest.mark.parametrize("paged", [0, 1])
def test_cupy_read_probe_compiles_for_sm90(paged, tmp_path):
    """impls/cupy/read_probe.cu (the bandwidth probes' kernels) compiles for sm_90 as NVRTC is
    given it, with no local-memory stack frame (its loads in flight are registers)."""
    from impls.cupy import read_probe

    res = nvcc_cubin(_build.source("read_probe.cu"),
                     dict(THREADS=read_probe.THREADS, UNROLL=read_probe.UNROLL, IS_PAGED=paged),
                     tmp_path / "k.cubin")
    assert res.returncode == 0, res.stderr[-3000:]
    frames = [int(n) for n in re.findall(r"(\d+) bytes stack frame", res.stderr)]
    assert len(frames) == 2 and all(n == 0 for n in frames), res.stderr
