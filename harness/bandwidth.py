"""The roofline's denominator: the GPU's memory bandwidth, measured in the same run.

Decode attention reads (K, V) and writes almost nothing, and a read-only stream runs faster
than a copy, whose writes share the bus. So the limit is the fastest of three probes over 4 GiB
(far past the L2):

* ``copy``: ``dst.copy_(src)``, bytes read + written;
* ``read (torch sum)``: a float32-accumulated sum of bf16, bytes read;
* ``read (triton)``: a Triton kernel that only loads (16-byte vectors, one partial sum per
  program), bytes read; skipped when Triton is not installed.

Each probe is timed exactly as every row is (``harness.timing``'s ``cold`` mode: L2 flushed, a
GPU spin before each call, the launch phase cycled, repeated to a 1 % interval), so numerator
and denominator come from one method. Timed back to back instead, the same Triton read gave
4.33-4.49 TB/s on the H200 from one call to the next; this way 4.60 TB/s within +-0.1 %. Every
row's % of bandwidth is over ``limit_gbps``, and the probes are kept in the provenance. The best
decode kernels reach 98 % of the read probe; a row above 100 % would say the probes missed the
ceiling, not that it beat physics.
"""

from __future__ import annotations

import torch

from harness.timing import GpuTimer

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


def _gbps(timer: GpuTimer, call, nbytes: int) -> float:
    return nbytes / timer(call)["cold"].estimate.median / 1e3  # bytes per us -> GB/s


def _copy_gbps(timer: GpuTimer, x: torch.Tensor) -> float:
    y = torch.empty_like(x)
    return _gbps(timer, lambda: y.copy_(x), 2 * x.numel() * x.element_size())  # read + written


def _probes(device: torch.device) -> dict[str, float | str]:
    timer = GpuTimer(device, modes=("cold",))
    x = torch.ones(NBYTES // 2, dtype=torch.bfloat16, device=device)
    probes: dict[str, float | str] = {"copy": _copy_gbps(timer, x)}
    probes["read (torch sum)"] = _gbps(timer, lambda: x.sum(dtype=torch.float32), NBYTES)
    try:
        probes["read (triton)"] = _gbps(timer, _triton_read(x), NBYTES)
    except Exception as e:  # noqa: BLE001  (no Triton, or it failed: the other probes stand)
        probes["read (triton)"] = f"not measured: {type(e).__name__}: {str(e)[:120]}"
    return probes


def measure(device: torch.device) -> dict:
    """GB/s of each probe and the limit (the fastest); probe failures are recorded, not raised."""
    probes = _probes(device)
    torch.cuda.empty_cache()
    numbers = {k: round(v, 1) for k, v in probes.items() if isinstance(v, float)}
    best = max(numbers, key=numbers.get)
    return {"probes": {**probes, **numbers}, "limit_gbps": numbers[best], "limit_probe": best}
