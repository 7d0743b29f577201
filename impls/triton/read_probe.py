"""A read-only Triton kernel for the harness's bandwidth probe (``Backend.read_probe``): decode
attention only reads, and a read-only stream runs faster than a copy, whose writes share the bus.
Each program loads READ_BLOCK elements (16-byte vectors) and stores one partial sum.
"""

import torch
import triton
import triton.language as tl

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
