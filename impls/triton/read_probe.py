"""Read-only Triton kernels for the harness's bandwidth probes (``Backend.read_probe``): decode
attention only reads, and a read-only stream runs faster than a copy, whose writes share the bus.
``read_probe``: each program loads READ_BLOCK contiguous elements (16-byte vectors) and stores one
partial sum. ``layout_read``: a problem's K and V rows in its own layout (a diagnostic).
"""

import torch
import triton
import triton.language as tl

from impls.triton._common import kv_coords

READ_BLOCK = 16384  # bf16 elements per program: 32 KiB of loads in flight
MIN_BLOCK = 1024  # the smallest block ``fill`` shrinks to (2 KiB a program)
WAVES = 4  # ``fill``: blocks small enough that the programs make this many waves of the SMs
NUM_WARPS = 8


@triton.jit
def read_kernel(x_ptr, partial_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(partial_ptr + pid, tl.sum(v.to(tl.float32)))


def read_probe(x: torch.Tensor, fill: bool = False):
    """A call that reads every element of ``x`` once; ``fill``: blocks shrunk (to MIN_BLOCK at
    least) until the grid makes WAVES waves of 4 programs per SM, so a small ``x`` still keeps
    every SM reading."""
    block = READ_BLOCK
    if fill:
        programs = WAVES * 4 * torch.cuda.get_device_properties(x.device).multi_processor_count
        while block > MIN_BLOCK and triton.cdiv(x.numel(), block) < programs:
            block //= 2
    grid = (triton.cdiv(x.numel(), block),)
    warps = NUM_WARPS if block >= 4096 else 4
    partial = torch.empty(grid[0], dtype=torch.float32, device=x.device)
    return lambda: read_kernel[grid](x, partial, x.numel(), BLOCK=block, num_warps=warps)


LAYOUT_BLOCK_N = 64  # tokens a step of ``layout_read``'s programs (a row block of K and of V)
LAYOUT_PROGRAMS_PER_SM = 4  # its plan's items fill the SMs this many deep


@triton.jit
def layout_read_kernel(k_ptr, v_ptr, items_ptr, table_ptr, first_ptr, partial_ptr, stride_kp,
                       stride_kt, stride_kh, stride_btb, page_size, num_kv_heads,
                       HEAD_DIM: tl.constexpr, HEAD_DIM_PAD: tl.constexpr, BLOCK_N: tl.constexpr,
                       IS_PAGED: tl.constexpr):
    h = tl.program_id(0)
    item = tl.program_id(1)
    b = tl.load(items_ptr + item * 4).to(tl.int64)
    start = tl.load(items_ptr + item * 4 + 1)
    end = tl.load(items_ptr + item * 4 + 2)
    first = tl.load(first_ptr + b)  # the sequence's first attended row (a window's start)
    d = tl.arange(0, HEAD_DIM_PAD)
    acc = tl.zeros([HEAD_DIM_PAD], dtype=tl.float32)
    for t0 in range(start, end, BLOCK_N):
        t = t0 + tl.arange(0, BLOCK_N)
        inside = (t >= first) & (t < end)
        # each row through the block table, as a kernel over any page size reads it (PAGE_SIZE 0)
        page, row = kv_coords(b, t0, t, inside, end, table_ptr, stride_btb, page_size,
                              BLOCK_N, IS_PAGED, 0)
        offs = (page * stride_kp + row * stride_kt)[:, None] + h * stride_kh + d[None, :]
        mask = inside[:, None] & (d[None, :] < HEAD_DIM)
        k = tl.load(k_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        v = tl.load(v_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        acc += tl.sum(k + v, axis=0)
    tl.store(partial_ptr + item * num_kv_heads + h, tl.sum(acc))


def layout_read(inputs):
    """A call that reads every attended K and V row of ``inputs`` once, in the problem's layout
    (dense rows of one KV head strided over the others, or rows gathered through the block table
    at any page size), as a decode kernel's loads do, and nothing else: the read limit of that
    layout. Work items of the shared split planner (``impls.plan.for_launch``: a window's span
    only, rows before its start masked as past a sequence's end), LAYOUT_PROGRAMS_PER_SM deep, a
    program per (item, KV head); each stores one sum (``partials``, so the loads are not
    optimised away). Returns (call, partials)."""
    from impls import plan as planner
    from impls.common import cache_args

    p = inputs.problem
    split_plan = planner.for_launch(inputs, LAYOUT_PROGRAMS_PER_SM, LAYOUT_BLOCK_N, None)
    items = torch.as_tensor(split_plan.items, device=inputs.device)
    table, stride_btb, page_size = cache_args(inputs)
    firsts = torch.as_tensor(p.window_starts, dtype=torch.int32, device=inputs.device)
    partials = torch.empty(split_plan.num_items, p.num_kv_heads, dtype=torch.float32,
                           device=inputs.device)
    k, v = inputs.k, inputs.v
    grid = (p.num_kv_heads, split_plan.num_items)
    args = (k, v, items, table, firsts, partials, k.stride(0), k.stride(1), k.stride(2), stride_btb,
            page_size, p.num_kv_heads)
    meta = dict(HEAD_DIM=p.head_dim, HEAD_DIM_PAD=triton.next_power_of_2(p.head_dim),
                BLOCK_N=LAYOUT_BLOCK_N, IS_PAGED=p.layout == "paged", num_warps=4)
    return (lambda: layout_read_kernel[grid](*args, **meta)), partials
