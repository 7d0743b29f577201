"""CuPy on fp8 caches, on the host (the sm_90 builds are tests/test_cupy_sm90.py's): a head dim
its 16-byte vectors cannot read is refused before anything is built, the tensor-core rings are
sized by the cache's bytes, and the CUDA-core loop's head block by the registers its 16-element
vectors take."""

import importlib

import pytest

import impls  # noqa: F401  (first: CPU modes before any DSL import)
from impls.cupy import _build
from impls.registry import Unsupported
from specs.inputs import make_inputs
from specs.problem import DecodeProblem

E4M3 = dict(kv_dtype="float8_e4m3fn", kv_scale="head")


@pytest.mark.parametrize("module", ["impls.cupy.one_pass", "impls.cupy.split_k"])
def test_fp8_head_dims_off_the_16_byte_vectors_are_unsupported(module):
    inputs = make_inputs(DecodeProblem(8, 2, 72, (40,), **E4M3), 0, device="cpu")
    out, lse = inputs.new_outputs()
    with pytest.raises(Unsupported, match=r"head_dim 72: float8_e4m3fn rows .* 16 elements"):
        importlib.import_module(module).prepare(inputs, out, lse)


def test_fp8_rings_are_sized_by_the_cache_bytes():
    bf16 = DecodeProblem(16, 8, 256, (100,))
    assert _build.pick_launch_config(bf16)["NUM_WARPS"] == 4  # 8 warps' 16-bit rings do not fit
    fp8 = _build.pick_launch_config(bf16.replace(**E4M3))
    assert fp8["NUM_WARPS"] == 8 and fp8["KV_DTYPE_ID"] == _build.DTYPE_IDS["float8_e4m3fn"]


def test_fp8_cuda_core_head_block_keeps_its_state_in_registers():
    gqa8 = DecodeProblem(32, 4, 128, (100,))
    assert _build.pick_launch_config(gqa8, {"TENSOR_CORES": 0})["BLOCK_H"] == 8
    assert _build.pick_launch_config(gqa8.replace(**E4M3), {"TENSOR_CORES": 0})["BLOCK_H"] == 4
