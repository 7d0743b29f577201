"""CuPy's bandwidth probes (impls.cupy.read_probe) read exactly the bytes they are timed for: the
contiguous read every byte of its tensor once, the layout read every attended K and V row once
and no other (a poisoned row past a sequence's end or before a window's start, a row skipped or
read twice would change the wrapping sum of the words). Needs a GPU and CuPy."""

import pytest
import torch

from specs.problem import DecodeProblem

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")


@pytest.mark.parametrize("problem", [
    DecodeProblem(8, 2, 80, (37, 100, 5)),  # dense: a token's two heads, 20 vectors a row
    DecodeProblem(8, 2, 64, (37, 100, 5), layout="paged", page_size=3),  # rows gathered by page
    DecodeProblem(8, 2, 64, (300, 70), layout="paged", page_size=16, window=50),  # poison before
    DecodeProblem(32, 8, 128, (4097,) * 3 + (1,), layout="paged", page_size=1),  # 128 vectors a row
    DecodeProblem(16, 1, 256, (999, 17), kv_dtype="float8_e4m3fn"),  # fp8: 16 a vector
    DecodeProblem(32, 32, 128, (700, 33), layout="paged", page_size=5),  # 512 vectors a row
    DecodeProblem(12, 4, 64, (300, 70), q_len=3, window=40),  # a draft's rows, a window
], ids=["dense", "paged3", "window", "page1", "fp8", "wide-row", "draft"])
def test_layout_read_sums_exactly_the_attended_rows(problem):
    pytest.importorskip("cupy")
    from impls.cupy import read_probe
    from specs.inputs import make_inputs

    inputs = make_inputs(problem, device="cuda")
    call, partials = read_probe.layout_read(inputs)
    call()
    torch.cuda.synchronize()
    assert read_probe.partial_sum(partials) == read_probe.expected_sum(inputs)


@pytest.mark.parametrize("numel,fill", [(1 << 20, False), ((1 << 20) + 24, True), (4096, True)])
def test_read_probe_sums_every_word_once(numel, fill):
    pytest.importorskip("cupy")
    from impls.cupy import read_probe

    x = torch.randint(-1000, 1000, (numel,), dtype=torch.int16, device="cuda").view(torch.bfloat16)
    call, partials = read_probe.contiguous_read(x, fill=fill)
    call()
    torch.cuda.synchronize()
    want = int(x.view(torch.int32).to(torch.int64).sum()) % (1 << 32)
    assert read_probe.partial_sum(partials) == want
