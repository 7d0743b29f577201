"""The TileLang kernels built for sm_90a without a GPU: each prim_func lowered to CUDA source and
compiled by nvcc (``tilelang.compile`` with an explicit arch needs no device), at GQA groups of 4
and 8, head dims 128 and 64, dense and paged (pages of 16: a token gather; of 64: a tile per
page). Runs where TileLang is installed (its own environment: the ``tilelang`` extra)."""

import shutil

import pytest

from specs.problem import DecodeProblem, ProblemError

tilelang = pytest.importorskip("tilelang")
if shutil.which("nvcc") is None:
    pytest.skip("nvcc not found (tilelang.compile builds the kernels with it)",
                allow_module_level=True)

from impls.tilelang import one_pass, split_k  # noqa: E402
from impls.tilelang._common import compile_key, pick_launch_config  # noqa: E402

SM90 = {"kind": "cuda", "arch": "sm_90a"}  # setmaxnreg (warp specialisation) needs the "a"
# (group_size, head_dim, layout, page_size, how the K/V tiles load: instruction in the source)
SHAPES = [
    (4, 128, "dense", 16, "tma_load"),
    (8, 64, "paged", 16, "cp_async"),
    (4, 128, "paged", 64, "tma_load"),
]


def problem(group_size, head_dim, layout, page_size):
    return DecodeProblem(num_q_heads=8 * group_size, num_kv_heads=8, head_dim=head_dim,
                         seq_lens=(1000, 37), layout=layout, page_size=page_size)


def build(func):
    kernel = tilelang.compile(func, target=SM90)
    return kernel.get_kernel_source()


@pytest.mark.parametrize("builder", [one_pass.decode_kernel, split_k.split_kernel],
                         ids=["one-pass", "split"])
@pytest.mark.parametrize("group_size,head_dim,layout,page_size,load", SHAPES,
                         ids=[f"g{g}-d{d}-{lay}{ps if lay == 'paged' else ''}"
                              for g, d, lay, ps, _ in SHAPES])
def test_attention_kernel_builds(builder, group_size, head_dim, layout, page_size, load):
    cfg = pick_launch_config(problem(group_size, head_dim, layout, page_size))
    source = build(builder(**dict(compile_key(cfg))))
    assert load in source, f"K/V tiles not loaded with {load}"
    assert "mma_sync" in source, "no tensor-core MMA"
    assert "exp2" in source, "softmax not in the log2 domain"


@pytest.mark.parametrize("head_dim", [128, 64])
def test_combine_kernel_builds(head_dim):
    source = build(split_k.combine_kernel(head_dim, 32, "bfloat16"))
    assert "expf" in source and "logf" in source  # natural-log partial LSEs merged


def test_token_gather_is_one_stage():
    """Pages smaller than the tile: a one-stage pipeline (TileLang 0.1.15 crashes on more)."""
    p = problem(4, 128, "paged", 16)
    assert pick_launch_config(p)["GATHER"] == "token"
    assert pick_launch_config(p)["num_stages"] == 1
    assert pick_launch_config(p, {"BLOCK_N": 16, "num_warps": 2})["GATHER"] == "tile"
    with pytest.raises(ProblemError, match="num_stages=2"):
        pick_launch_config(p, {"num_stages": 2})
    with pytest.raises(ProblemError, match="BLOCK_N=48"):
        pick_launch_config(p, {"BLOCK_N": 48})


@pytest.mark.parametrize("head_dim", [160, 224])
def test_combine_kernel_builds_at_head_dims_no_power_of_two(head_dim):
    """A row of 160 or 224 over the combine block's threads (a divisor of the row, else layout
    inference finds no layout: held-out shapes on an H100)."""
    source = build(split_k.combine_kernel(head_dim, 8, "float16"))
    assert "expf" in source


@pytest.mark.parametrize("builder", [one_pass.decode_kernel, split_k.split_kernel],
                         ids=["one-pass", "split"])
@pytest.mark.parametrize("layout,page_size,kv_dtype,kv_scale,load", [
    ("dense", 16, "float8_e4m3fn", "head", "tma_load"),
    ("paged", 16, "float8_e5m2", "tensor", "cp_async"),
    ("paged", 128, "float8_e4m3fn", "tensor", "tma_load"),
], ids=["dense-e4m3-head", "paged16-e5m2", "paged128-e4m3"])
def test_fp8_kernel_builds(builder, layout, page_size, kv_dtype, kv_scale, load):
    """fp8 tiles land as stored (TMA or cp.async), then both products stay on the tensor cores
    in the query's dtype."""
    p = problem(4, 128, layout, page_size).replace(kv_dtype=kv_dtype, kv_scale=kv_scale)
    source = build(builder(**dict(compile_key(pick_launch_config(p)))))
    assert load in source, f"K/V tiles not loaded with {load}"
    assert "mma_sync" in source, "no tensor-core MMA"
    assert "fp8" in source, "no fp8 cache read"
