"""Timing of a prepared launch. The only place in the project that times anything.

GPU: CUDA events around each call, after a warm-up. Before every repetition a buffer twice the
L2 is *read* (clean lines: nothing of it is written back during the timed call), so each call
reads its K/V from HBM as a decode step does (one layer's cache is long gone from L2 when that
layer runs again); then the GPU spins for ~250 us while the host enqueues the start event and
the launches, so host launch overhead never leaves the GPU idle inside the timed window.
Median with p20/p80.
CPU (interpreters): host wall-clock of a few calls, labelled as no performance figure.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Callable

import torch

WARMUP_CALLS = 5  # after the correctness check already compiled everything
GPU_REPS = 100  # repetitions per cell (each one event pair)
GPU_REPS_QUICK = 20
GPU_TIME_CAP_S = 2.0  # a cell stops repeating after this much measured time
CPU_REPS = 1  # interpreter/simulator calls are slow (seconds) and not a performance figure anyway
FLUSH_FACTOR = 2  # the L2-eviction buffer is this many times the L2
SPIN_CYCLES = 500_000  # ~250 us at ~2 GHz: longer than any backend's host launch path


@dataclass
class Timing:
    method: str
    median_us: float
    p20_us: float
    p80_us: float
    reps: int


def _quantile(sorted_us: list[float], q: float) -> float:
    idx = min(len(sorted_us) - 1, max(0, round(q * (len(sorted_us) - 1))))
    return sorted_us[idx]


def _summarise(method: str, samples_us: list[float]) -> Timing:
    s = sorted(samples_us)
    return Timing(method, statistics.median(s), _quantile(s, 0.2), _quantile(s, 0.8), len(s))


class GpuTimer:
    """Event timing with an L2 flush before each repetition (one flush buffer per process)."""

    method = "cuda-events, L2 flushed (by reads) before each call"

    def __init__(self, device: torch.device, reps: int = GPU_REPS):
        l2 = torch.cuda.get_device_properties(device).L2_cache_size
        self.flush = torch.ones(FLUSH_FACTOR * l2 // 4, dtype=torch.float32, device=device)
        self.reps = reps

    def __call__(self, run: Callable[[], object]) -> Timing:
        for _ in range(WARMUP_CALLS):
            run()
        samples: list[float] = []
        spent_ms = 0.0
        while len(samples) < self.reps and spent_ms < GPU_TIME_CAP_S * 1e3:
            batch = min(10, self.reps - len(samples))
            events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                      for _ in range(batch)]
            for start, end in events:
                self.flush.sum()
                torch.cuda._sleep(SPIN_CYCLES)
                start.record()
                run()
                end.record()
            torch.cuda.synchronize()
            for start, end in events:
                ms = start.elapsed_time(end)
                samples.append(ms * 1e3)
                spent_ms += ms
        return _summarise(self.method, samples)


class CpuTimer:
    method = "cpu wall-clock (interpreter/simulator: not a performance figure)"

    def __init__(self, reps: int = CPU_REPS):
        self.reps = reps

    def __call__(self, run: Callable[[], object]) -> Timing:
        samples = []
        for _ in range(self.reps):
            start = time.perf_counter()
            run()
            samples.append((time.perf_counter() - start) * 1e6)
        return _summarise(self.method, samples)


def copy_bandwidth_gbps(device: torch.device, nbytes: int = 4 << 30, reps: int = 20) -> float:
    """Device-to-device copy bandwidth, bytes read + written per second (the roofline's
    denominator, measured in the same run as the kernels). GB/s, median of ``reps``."""
    src = torch.empty(nbytes // 2, dtype=torch.int8, device=device).random_()
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        dst.copy_(src)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e-3)
    return 2 * src.numel() / statistics.median(times) / 1e9
