"""Host-side choices of the Numba backend (no kernel runs here)."""

import impls  # noqa: F401  (the simulator switch before numba's import)
import pytest

from specs.problem import DecodeProblem


def test_numba_tile_choice_fits_every_supported_problem():
    """The Numba backend's compile-time choice works for every head_dim, GQA group and dtype it
    declares, for the GPU and for the simulator (shared memory of the merge, registers)."""
    pytest.importorskip("numba_cuda")
    from impls.numba import _launch
    from impls.numba._kernels import OUT_FLOAT32

    for dtype in ("bfloat16", "float16", "float32"):
        for head_dim in range(4, 257, 4):
            for group in (1, 2, 3, 4, 7, 8, 16):
                p = DecodeProblem(group, 1, head_dim, (5,), dtype=dtype)
                for simulator in (False, True):
                    for out_kind in (None, OUT_FLOAT32):
                        c = _launch.config_for(p, out_kind, simulator=simulator)
                        assert c.num_warps * c.group * head_dim * 4 <= _launch.SMEM_LIMIT
                        assert c.tpr * c.wpt * c.epw >= head_dim and c.step > 0
