"""The roofline's denominator: the GPU's memory bandwidth, measured in the same run.

Decode attention reads (K, V) and writes almost nothing, and a read-only stream runs faster
than a copy, whose writes share the bus. So the limit is the fastest of the probes, each over
4 GiB (far past the L2):

* ``copy``: ``dst.copy_(src)``, bytes read + written;
* ``read (torch sum)``: a float32-accumulated sum of bf16, bytes read;
* ``read (<backend>)``: each read-only kernel a registered backend offers
  (``Backend.read_probe``), bytes read; skipped where that backend is unavailable.

Each probe is timed exactly as every row is (``harness.timing``'s ``cold`` mode), so numerator
and denominator come from one method. Every row's % of bandwidth is over ``limit_gbps``, and the
probes are kept in the provenance. A row above 100 % would say the probes missed the ceiling,
not that it beat physics.
"""

from __future__ import annotations

import importlib

import torch

from harness.timing import GpuTimer
from impls import registry

NBYTES = 4 << 30


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
    for backend in registry.backends():
        if not backend.read_probe:
            continue
        name = f"read ({backend.name})"
        try:
            backend.mode()
            call = importlib.import_module(backend.read_probe).read_probe(x)
            probes[name] = _gbps(timer, call, NBYTES)
        except Exception as e:  # noqa: BLE001  (unavailable or failed: the other probes stand)
            probes[name] = f"not measured: {type(e).__name__}: {str(e)[:120]}"
    return probes


def measure(device: torch.device) -> dict:
    """GB/s of each probe and the limit (the fastest); probe failures are recorded, not raised."""
    probes = _probes(device)
    torch.cuda.empty_cache()
    numbers = {k: round(v, 1) for k, v in probes.items() if isinstance(v, float)}
    best = max(numbers, key=numbers.get)
    return {"probes": {**probes, **numbers}, "limit_gbps": numbers[best], "limit_probe": best}
