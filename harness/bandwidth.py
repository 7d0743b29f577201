"""The roofline's denominator: the GPU's memory bandwidth, measured in the same run.

Decode attention reads (K, V) and writes almost nothing, and a read-only stream runs faster
than a copy, whose writes share the bus. So the limit is the fastest of three probes over 4 GiB
(far past the L2), each a median of 20 event-timed calls:

* ``copy``: ``dst.copy_(src)``, bytes read + written (what earlier results used);
* ``read (torch sum)``: a float32-accumulated sum of bf16, bytes read;
* ``read (triton)``: a Triton kernel that only loads (16-byte vectors, one partial sum per
  program), bytes read; skipped when Triton is not installed.

Every row's % of bandwidth is over ``limit_gbps``, and the probes are kept in the provenance, so
a kernel above 100 % says the probes missed the ceiling, not that it beat physics.
"""

from __future__ import annotations

import torch

from harness.timing import copy_bandwidth_gbps, median_seconds

NBYTES = 4 << 30
READ_BLOCK = 16384  # bf16 elements per Triton program: 32 KiB of loads in flight


def _triton_read(x: torch.Tensor):
    import triton
    import triton.language as tl

    @triton.jit
    def read_kernel(x_ptr, partial_ptr, n, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        v = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
        tl.store(partial_ptr + pid, tl.sum(v.to(tl.float32)))

    grid = (triton.cdiv(x.numel(), READ_BLOCK),)
    partial = torch.empty(grid[0], dtype=torch.float32, device=x.device)
    return lambda: read_kernel[grid](x, partial, x.numel(), BLOCK=READ_BLOCK, num_warps=8)


def _read_probes(device: torch.device) -> dict[str, float | str]:
    x = torch.ones(NBYTES // 2, dtype=torch.bfloat16, device=device)
    probes: dict[str, float | str] = {
        "read (torch sum)": NBYTES / median_seconds(lambda: x.sum(dtype=torch.float32)) / 1e9}
    try:
        probes["read (triton)"] = NBYTES / median_seconds(_triton_read(x)) / 1e9
    except Exception as e:  # noqa: BLE001  (no Triton, or it failed: the other probes stand)
        probes["read (triton)"] = f"not measured: {type(e).__name__}: {str(e)[:120]}"
    return probes


def measure(device: torch.device) -> dict:
    """GB/s of each probe and the limit (the fastest); probe failures are recorded, not raised."""
    probes = {"copy": copy_bandwidth_gbps(device, NBYTES), **_read_probes(device)}
    torch.cuda.empty_cache()
    numbers = {k: round(v, 1) for k, v in probes.items() if isinstance(v, float)}
    best = max(numbers, key=numbers.get)
    return {"probes": {**probes, **numbers}, "limit_gbps": numbers[best], "limit_probe": best}
