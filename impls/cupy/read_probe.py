"""Read-only CuPy kernels for the harness's bandwidth probes (``Backend.read_probe``,
``read_probe.cu``): 16-byte loads, UNROLL of a thread's in flight before any is used.
``read_probe``: contiguous, a block of vectors a CTA. ``layout_read``: a problem's attended K and
V rows where its layout keeps them, a token's KV heads read as one row (what a kernel reading a
page's heads together would read), work items of the shared planner over whole token rows: how
fast the layout itself can be read, beside the contiguous read every row's ``pct_read`` is over.
Each call's sum (``partials``, words summed mod 2**32) is what ``expected_sum`` computes with
torch from the same rows: a probe that read other bytes, or fewer, would not match it."""

from __future__ import annotations

import numpy as np
import torch

from impls.cupy._build import current_stream, get_kernel, view

THREADS = 256
UNROLL = 8  # loads a thread has in flight (K and V each, in layout_read)
READ_BLOCK = 1 << 16  # 16-byte vectors a CTA (1 MiB), shrunk by ``fill`` as Triton's probe is
MIN_BLOCK = 1 << 11  # ... to at least this (32 KiB a CTA)
WAVES = 4  # ``fill``: blocks small enough that the CTAs make this many waves of READ_CTAS_PER_SM
READ_CTAS_PER_SM = 8  # read_kernel's resident CTAs (32 registers a thread)
PROGRAMS_PER_SM = 3  # CTAs a plan of ``layout_read`` fills each SM with: its 16 loads in flight
# take 78 registers a thread (ptxas, sm_90), 3 CTAs of 256 an SM (forcing 4 spills)
TOKEN_GRANULE = 16  # its items start on whole 16-token steps


def _kernel(name: str, **defines: int):
    return get_kernel("read_probe.cu", name, dict(THREADS=THREADS, UNROLL=UNROLL, **defines))


def _vectors(x: torch.Tensor, what: str) -> torch.Tensor:
    """``x``'s bytes as 16-byte vectors (int32 quadruples), refused where they are not that."""
    if x.data_ptr() % 16 or x.numel() * x.element_size() % 16:
        raise ValueError(f"{what}: not a whole number of 16-byte-aligned vectors")
    return x.view(torch.int32)


def read_probe(x: torch.Tensor, fill: bool = False):
    """A call that reads every byte of the contiguous ``x`` once (``contiguous_read``'s)."""
    return contiguous_read(x, fill)[0]


def contiguous_read(x: torch.Tensor, fill: bool = False):
    """(call, partials): a call that reads every byte of the contiguous ``x`` once; ``fill``:
    blocks shrunk (to MIN_BLOCK at least) until the CTAs make WAVES waves of READ_CTAS_PER_SM an
    SM."""
    words = _vectors(x.reshape(-1), "read_probe: x")
    n = words.numel() // 4
    block = READ_BLOCK
    if fill:
        ctas = WAVES * READ_CTAS_PER_SM * torch.cuda.get_device_properties(x.device).multi_processor_count
        while block > MIN_BLOCK and -(-n // block) < ctas:
            block //= 2
    grid = (-(-n // block),)
    partial = torch.empty(grid[0] * THREADS // 32, dtype=torch.int32, device=x.device)
    kernel = _kernel("read_kernel")
    args = (view(words), view(partial), np.int64(n), np.int32(block))

    def call():
        with current_stream():
            kernel(grid, (THREADS,), args)
    return call, partial


def row_vectors(inputs) -> int:
    """16-byte vectors in a token's row of K (its KV heads side by side), or ValueError where a
    token's heads are not one contiguous run of whole vectors."""
    p, k = inputs.problem, inputs.k
    if k.stride(-1) != 1 or k.stride(-2) != p.head_dim or k.stride(-3) != p.num_kv_heads * p.head_dim \
            or inputs.v.stride() != k.stride():
        raise ValueError("layout_read: a token's KV heads are not one contiguous row in K and V")
    row_bytes = p.num_kv_heads * p.head_dim * k.element_size()
    if row_bytes % 16 or any(s * k.element_size() % 16 for s in k.stride()[:-1]):
        raise ValueError(f"layout_read: a token's row ({row_bytes} bytes) is no whole number of "
                         "16-byte vectors")
    return row_bytes // 16


def attended(inputs) -> tuple[np.ndarray, np.ndarray]:
    """Each sequence's first attended token (a window's start, else 0) and its length."""
    p = inputs.problem
    return np.asarray(p.window_starts, np.int64), np.asarray(p.seq_lens, np.int64)


def layout_read(inputs):
    """A call that reads every attended K and V row of ``inputs`` once, where the problem's
    layout keeps it (dense: strided by sequence and token; paged: gathered through the block
    table at any page size), a token's KV heads as one row; work items of the shared planner
    (``impls.plan.plan``, one head: a row is all of them) filling PROGRAMS_PER_SM CTAs an SM.
    Returns (call, partials)."""
    from impls import plan as planner
    from impls.common import cache_args

    p = inputs.problem
    row_vecs = row_vectors(inputs)
    firsts, lens = attended(inputs)
    starts = firsts // TOKEN_GRANULE * TOKEN_GRANULE  # the spans' items on whole steps
    programs = PROGRAMS_PER_SM * torch.cuda.get_device_properties(inputs.device).multi_processor_count
    split_plan = planner.plan(lens - starts, 1, programs, TOKEN_GRANULE)
    items = split_plan.items.copy()
    items[:, 1:3] += starts[items[:, 0]].astype(np.int32)[:, None]
    table, stride_btb, page_size = cache_args(inputs)
    k, v = _vectors(inputs.k, "layout_read: K"), _vectors(inputs.v, "layout_read: V")
    vec = 16 // inputs.k.element_size()  # elements a vector
    partials = torch.empty(len(items) * THREADS // 32, dtype=torch.int32, device=inputs.device)
    items_t = torch.as_tensor(items, device=inputs.device)
    firsts_t = torch.as_tensor(firsts, dtype=torch.int32, device=inputs.device)
    kernel = _kernel("layout_read_kernel", IS_PAGED=int(p.layout == "paged"))
    args = (view(k), view(v), view(items_t), view(table), view(firsts_t), view(partials),
            np.int64(inputs.k.stride(0) // vec), np.int64(inputs.k.stride(1) // vec),
            np.int64(stride_btb), np.int32(page_size), np.int32(row_vecs))
    grid = (len(items),)

    def call():
        with current_stream():
            kernel(grid, (THREADS,), args)
    return call, partials


def expected_sum(inputs) -> int:
    """The words of every attended K and V row summed mod 2**32, by torch (what ``layout_read``'s
    partials must add up to)."""
    p = inputs.problem
    firsts, lens = attended(inputs)
    total = 0
    for b in range(p.batch):
        for rows in inputs.rows(b, int(firsts[b]), int(lens[b])):
            total += int(rows.contiguous().reshape(-1).view(torch.int32).to(torch.int64).sum())
    return total % (1 << 32)


def partial_sum(partials: torch.Tensor) -> int:
    """A probe's partials added mod 2**32 (as the kernels' wrapping sums)."""
    return int(partials.to(torch.int64).sum()) % (1 << 32)
