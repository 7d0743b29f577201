"""Host-side choices of the Numba backend (no kernel runs here)."""

import impls  # noqa: F401  (the simulator switch before numba's import)
import pytest
import torch

from specs.problem import DecodeProblem


def test_numba_tile_choice_fits_every_supported_problem():
    """The Numba backend's compile-time choice works for every head_dim, GQA group, dtype and
    cache dtype it declares (fp8: head_dim a multiple of 8), for the GPU and for the simulator:
    the cross-warp merge fits the static shared memory (registers and spills are checked by
    ptxas in test_numba_sm90.py)."""
    pytest.importorskip("numba_cuda")
    from impls.numba import _launch

    for dtype, kv_dtype, step in [("bfloat16", None, 4), ("float16", None, 4), ("float32", None, 4),
                                  ("bfloat16", "float8_e4m3fn", 8), ("float16", "float8_e5m2", 8)]:
        for head_dim in range(step, 257, step):
            for group in (1, 2, 3, 4, 6, 7, 8, 9, 14, 16):
                p = DecodeProblem(group, 1, head_dim, (5,), dtype=dtype, kv_dtype=kv_dtype)
                for simulator in (False, True):
                    c = _launch.pick_launch_config(p, simulator=simulator)
                    # acc, m_i and l_i of every warp and head, as the kernel declares them
                    smem = c.NUM_WARPS * c.BLOCK_H * (head_dim + 2) * 4
                    assert smem <= 48 * 1024, (c, smem)
                    assert c.TPR in (1, 2, 4, 8, 16, 32) and c.UNROLL >= 1 and c.STEP > 0
                    assert c.VECS_PER_ROW * c.VEC == head_dim, c
                    # the fewest blocks, split evenly: less than a head of padding a block
                    blocks = _launch.num_head_blocks(p)
                    assert blocks == -(-group // _launch.MAX_BLOCK_H), c
                    assert 0 <= blocks * c.BLOCK_H - group < blocks, c


def test_fp16_bits_convert_exactly():
    """half_bits_as_float (the simulator's fp16 load path; the GPU's is the hardware conversion,
    which test_numba_sm90.py finds in every fp16 kernel) on every 16-bit pattern: normals,
    subnormals, zeros, infinities and NaNs, both signs."""
    import numpy as np

    from impls.numba import _kernels

    bits = np.arange(1 << 16, dtype=np.uint16)
    want = bits.view(np.float16).astype(np.float32)
    got = np.array([_kernels.half_bits_as_float(np.int64(b)) for b in bits], dtype=np.float32)
    same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), bits[~same][:10]


@pytest.mark.parametrize("kv_dtype", ["float8_e4m3fn", "float8_e5m2"])
def test_fp8_bits_convert_exactly(kv_dtype):
    """The kernels' fp8 decoders (e4m3_as_float, e5m2_as_float) on every byte against torch's
    conversion: normals, subnormals, zeros, NaNs (and e5m2's infinities), both signs."""
    import numpy as np

    from impls.numba import _kernels

    decode = {"float8_e4m3fn": _kernels.e4m3_as_float, "float8_e5m2": _kernels.e5m2_as_float}
    bits = torch.arange(256, dtype=torch.int32).to(torch.uint8)
    want = bits.view(getattr(torch, kv_dtype)).float().numpy()
    got = np.array([decode[kv_dtype](np.int64(b)) for b in range(256)], dtype=np.float32)
    same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), np.flatnonzero(~same)[:10]


def test_bf16_store_rounds_to_nearest_even():
    """bf16_bits (the kernels' bf16 store) against torch's float32 -> bfloat16 rounding, on random
    values, halfway ties, the largest finite values, infinities and NaN."""
    import numpy as np

    from impls.numba import _kernels

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(20000, generator=gen) * torch.exp2(torch.randint(-30, 30, (20000,), generator=gen))
    ties = (torch.randint(0, 1 << 16, (2000,), generator=gen, dtype=torch.int32) << 16 | 0x8000)
    special = torch.tensor([0.0, -0.0, 3.3895314e38, -3.3895314e38, 3.4028235e38, float("inf"),
                            float("-inf"), 1e-40, -1e-40], dtype=torch.float32)
    x = torch.cat([x, ties.view(torch.float32), special])
    want = x.to(torch.bfloat16).view(torch.int16).numpy()
    got = np.array([_kernels.bf16_bits(np.float32(v)) for v in x.numpy()], dtype=np.int64)
    nan = np.isnan(x.numpy())  # random tie patterns include NaNs: any quiet NaN will do
    assert nan.sum() > 0 and ((got[nan] & 0x7FC0) == 0x7FC0).all()
    same = got[~nan] == want[~nan]
    assert same.all(), (x.numpy()[~nan][~same][:5], got[~nan][~same][:5])


def test_unaligned_rows_are_unsupported_before_launch():
    """q whose rows do not start on 8 bytes cannot be read as int64 words: "unsupported: ...",
    raised by prepare, not a wrong answer."""
    import dataclasses

    from impls import registry
    from impls.registry import Unsupported
    from specs.inputs import make_inputs

    p = DecodeProblem(4, 2, 64, (5,), dtype="bfloat16")
    inputs = make_inputs(p, 0)
    shifted = torch.empty(inputs.q.numel() + 1, dtype=inputs.q.dtype)[1:].view_as(inputs.q)
    shifted.copy_(inputs.q)
    bad = dataclasses.replace(inputs, q=shifted)
    out = torch.empty_like(inputs.q)
    lse = torch.empty(p.batch, p.num_q_heads, dtype=torch.float32)
    for variant in ("dense", "split-k"):
        with pytest.raises(Unsupported, match="8-byte aligned"):
            registry.get(f"numba/{variant}").prepare(bad, out, lse)


def test_fp8_rows_of_partial_words_are_unsupported_before_launch():
    """An fp8 row of head_dim 4 mod 8 is half an 8-byte word: "unsupported: ..." naming the
    head_dim, raised by prepare (the declared multiple, 4, is the 16-bit one)."""
    from impls import registry
    from impls.registry import Unsupported
    from specs.inputs import make_inputs

    p = DecodeProblem(4, 2, 60, (5,), layout="paged", page_size=4, kv_dtype="float8_e5m2")
    inputs = make_inputs(p, 0)
    out = torch.empty_like(inputs.q)
    lse = torch.empty(p.batch, p.num_q_heads, dtype=torch.float32)
    for variant in ("paged", "split-k"):
        with pytest.raises(Unsupported, match="head_dim 60 with a float8_e5m2 cache"):
            registry.get(f"numba/{variant}").prepare(inputs, out, lse)


@pytest.mark.parametrize("variant", ["paged", "split-k"])
def test_a_group_past_a_block_split_evenly_matches_the_reference(variant):
    """GQA 9 as blocks of 5 and 4 heads (a block's last head is padding): the simulator's
    kernels against the float64 reference, the split sequence merged."""
    from impls import registry
    from specs.inputs import make_inputs
    from specs.reference import reference
    from specs.tolerance import compare

    impl = registry.get(f"numba/{variant}")
    if impl.availability():
        pytest.skip(impl.availability())
    device = "cpu" if impl.backend.mode() != "gpu" else "cuda"
    problem = DecodeProblem(9, 1, 32, (21, 9), dtype="float16", layout="paged", page_size=4)
    inputs = make_inputs(problem, seed=3, device=device)
    out, lse = inputs.new_outputs()
    launch = impl.prepare(inputs, out, lse, **({"num_splits": 2} if variant == "split-k" else {}))
    assert launch.config["block_h"] == 5
    launch.run()
    result = compare(problem, out, lse, reference(inputs))
    assert result.passed, result.summary()


def test_score_sums_take_fewer_shuffles_than_a_butterfly_per_value():
    """sum_exchange: never more shuffles than summing every value over every lane bit, and a
    reduce-scatter on the GPU's rows of 8-32 lanes wherever no padding is needed."""
    pytest.importorskip("numba_cuda")
    from impls.numba._kernels import sum_exchange

    for lanes in (1, 2, 4, 8, 16, 32):
        bits = lanes.bit_length() - 1
        for values in range(1, 33):
            levels, slots = sum_exchange(values, lanes)
            assert levels <= bits and slots >= values
            held = slots >> levels
            shuffles = (2 * (slots - held) + (bits - levels) * held) if levels else values * bits
            assert shuffles <= values * bits, (values, lanes)
            if lanes >= 8 and values >= 2 and values & (values - 1) == 0:  # no padding
                assert levels >= 1, (values, lanes)
    assert sum_exchange(12, 32) == (4, 16)  # 31 shuffles, not 60
    assert sum_exchange(8, 16) == (3, 8)  # 15, not 32


@pytest.mark.parametrize("tpr, unroll, group", [(8, 1, 3), (16, 2, 6), (32, 2, 5), (32, 4, 1)])
def test_score_sums_over_the_gpus_lane_counts_match_the_reference(tpr, unroll, group):
    """The reduce-scatter and all-gather of the row's scores at the lane counts the GPU runs
    (the simulator's own choice is 4 lanes a row): the simulator's kernel, forced to them,
    against the float64 reference, on a whole sequence and on a split one."""
    from impls import registry
    from specs.inputs import make_inputs
    from specs.reference import reference
    from specs.tolerance import compare

    impl = registry.get("numba/split-k")
    if impl.availability():
        pytest.skip(impl.availability())
    device = "cpu" if impl.backend.mode() != "gpu" else "cuda"
    problem = DecodeProblem(group * 2, 2, 128, (19, 6), dtype="bfloat16")
    inputs = make_inputs(problem, seed=5, device=device)
    out, lse = inputs.new_outputs()
    launch = impl.prepare(inputs, out, lse, num_splits=2, config={"tpr": tpr, "unroll": unroll})
    assert launch.config["tpr"] == tpr
    launch.run()
    result = compare(problem, out, lse, reference(inputs))
    assert result.passed, result.summary()
