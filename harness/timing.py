"""Timing of a prepared launch. The only place in the project that times anything.

Four modes on a GPU, each its own column (``MODES``; ``--timing`` selects):

* ``cold``: CUDA events around one call with a cold L2. Before each repetition a buffer twice the
  L2 is *read* (clean lines: nothing of it is written back during the timed call), so the call
  reads its K/V from HBM as a decode step does (one layer's cache is long gone from L2 when that
  layer runs again); then the GPU spins ~250 us while the host enqueues the start event and the
  launches, so host launch overhead never leaves the GPU idle inside the window. The primary
  figure: bandwidth, % of the limit and the ratios use it.
* ``graph``: the same, with the call captured once in a CUDA graph and replayed: the gaps between
  a call's kernels (split-K's combine, a library's helper kernels) shrink to what the graph
  leaves. A call that cannot be captured gets the reason instead of a figure.
* ``wall``: host wall-clock of one call plus ``torch.cuda.synchronize()``, L2 cold: what a Python
  caller waiting for the result pays (dispatch, launch latency, kernels, the sync).
* ``launch``: host time for ``run()`` to return while the GPU is busy (a long spin queued first):
  each DSL's and library's dispatch and launch overhead alone. If the spin has ended when
  ``run()`` returns, the call waited for the GPU (a hidden sync); the row says so.

Launch phase. With a cold L2, how long a short call takes depends on how many kernels the GPU
launched before it, modulo a small period (on the H200 used for ``results/``: a split-K call of
~13 us takes 12.6 to 14.3 us depending on the launch count modulo 8 before it; a long
single-CTA-per-head kernel barely moves). A measurement whose repetitions all launch the same
number of kernels sits in one phase for good: its interval is tight, yet another run (another
count of launches before it) lands in another phase, and whole-run medians moved by up to 13 %
between two runs. So before each repetition the device modes launch 0 to 7 empty kernels,
cycling (``LAUNCH_PHASES``): whatever a call launches itself, every 16 repetitions visit each
phase of any period dividing 8 equally often, and the median is that of the phase mixture, the
same in every run (``scripts/noise_probe.py`` measures both ways: round-to-round spread of
the medians 1.2-2.4 us without the cycling, 0.1-0.4 us with it, within the intervals).

Host modes run with Python's garbage collector off and the timing thread pinned to one CPU.

Every mode repeats in batches until the median's 95 % bootstrap interval is within
``TARGET_REL_CI`` of it (``harness.stats``; 1 % for the device figures, 3 % for the host ones,
whose tails are the host's scheduling), or a cap on repetitions or measured time is hit; the
figure carries its interval and why it stopped. CPU (interpreters): host wall-clock of one call, labelled as no
performance figure.
"""

from __future__ import annotations

import gc
import itertools
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator

import torch

from harness.stats import Estimate, estimate, precise_enough

MODES = ("cold", "graph", "wall", "launch")
TARGET_REL_CI = {"cold": 0.01, "graph": 0.01, "wall": 0.03, "launch": 0.03}
WARMUP_CALLS = 5  # after the correctness check already compiled everything
BATCH = 16  # repetitions between checks of the interval (a multiple of 2 x LAUNCH_PHASES)
LAUNCH_PHASES = 8  # empty launches before a repetition cycle through 0..LAUNCH_PHASES-1
MAX_REPS = 400
MAX_REPS_QUICK = 64
TIME_CAP_S = 1.0  # per mode and cell: host time spent repeating (flushes and spins included)
TIME_CAP_S_QUICK = 0.3
CPU_REPS = 1  # interpreter/simulator calls are slow (seconds) and not a performance figure anyway
FLUSH_FACTOR = 2  # the L2-eviction buffer is this many times the L2
SPIN_CYCLES = 500_000  # ~250 us at ~2 GHz: longer than any backend's host launch path
LAUNCH_SPIN_CYCLES = 20_000_000  # ~10 ms: the GPU stays busy while BATCH calls are issued

METHODS = {
    "cold": "cuda-events, L2 flushed (by reads) before each call, host launch hidden behind a spin, launch phase cycled",
    "graph": "cuda-graph replay of one call, L2 flushed before each replay, launch phase cycled",
    "wall": "host wall-clock of run() + synchronize, L2 flushed before each call, launch phase cycled",
    "launch": "host time for run() to return while the GPU is busy (dispatch + launch overhead)",
}


@dataclass
class Timing:
    method: str
    estimate: Estimate  # microseconds
    stop: str  # why repetition stopped: "ci" (interval within target), "reps cap", "time cap"
    note: str = ""  # e.g. the call waited for the GPU


def phase_shifts(phases: int = LAUNCH_PHASES) -> Iterator[int]:
    """Empty launches before repetitions 0, 1, 2, ...: i mod ``phases`` (module docstring)."""
    return (i % phases for i in itertools.count())


def _repeat(method: str, batch: Callable[[int], list[float]], max_reps: int,
            time_cap_s: float, target: float) -> Timing:
    """Call ``batch(n)`` (n new samples, microseconds) until the median is known to ``target``."""
    samples: list[float] = []
    start = time.perf_counter()
    while True:
        samples += batch(min(BATCH, max_reps - len(samples)))
        if precise_enough(samples, target):
            stop = "ci"
        elif len(samples) >= max_reps:
            stop = "reps cap"
        elif time.perf_counter() - start >= time_cap_s:
            stop = "time cap"
        else:
            continue
        return Timing(method, estimate(samples), stop)


class GpuTimer:
    """All selected modes for one launch; one flush buffer per process."""

    def __init__(self, device: torch.device, quick: bool = False, modes=MODES,
                 cycle_phases: bool = True):
        l2 = torch.cuda.get_device_properties(device).L2_cache_size
        self.phases = LAUNCH_PHASES if cycle_phases else 1
        self.flush = torch.ones(FLUSH_FACTOR * l2 // 4, dtype=torch.float32, device=device)
        self.max_reps = MAX_REPS_QUICK if quick else MAX_REPS
        self.time_cap_s = TIME_CAP_S_QUICK if quick else TIME_CAP_S
        unknown = set(modes) - set(MODES)
        assert not unknown, unknown
        self.modes = tuple(m for m in MODES if m in modes)

    def __call__(self, run: Callable[[], object]) -> dict[str, Timing | str]:
        """Mode -> Timing, or the reason a mode has no figure for this call."""
        for _ in range(WARMUP_CALLS):
            run()
        torch.cuda.synchronize()
        out: dict[str, Timing | str] = {}
        with quiet_host():
            for mode in self.modes:
                try:
                    out[mode] = getattr(self, mode)(run)
                except GraphUnsupported as e:
                    out[mode] = f"unsupported: {e}"
        return out

    def _cold_l2(self) -> Callable[[], None]:
        """What goes before each repetition of a device mode: the launch phase moved on
        (``phase_shifts``: empty kernels), then the L2 flushed by reads."""
        shifts = phase_shifts(self.phases)

        def before() -> None:
            for _ in range(next(shifts)):
                torch.cuda._sleep(0)
            self.flush.sum()
        return before

    def _repeat(self, mode: str, batch) -> Timing:
        return _repeat(METHODS[mode], batch, self.max_reps, self.time_cap_s, TARGET_REL_CI[mode])

    def _events(self, call: Callable[[], object]):
        before = self._cold_l2()

        def batch(n: int) -> list[float]:
            events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                      for _ in range(n)]
            for begin, end in events:
                before()
                torch.cuda._sleep(SPIN_CYCLES)
                begin.record()
                call()
                end.record()
            torch.cuda.synchronize()
            return [begin.elapsed_time(end) * 1e3 for begin, end in events]
        return batch

    def cold(self, run) -> Timing:
        return self._repeat("cold", self._events(run))

    def graph(self, run) -> Timing:
        graph = capture(run)
        return self._repeat("graph", self._events(graph.replay))

    def wall(self, run) -> Timing:
        before = self._cold_l2()

        def batch(n: int) -> list[float]:
            samples = []
            for _ in range(n):
                before()
                torch.cuda.synchronize()
                start = time.perf_counter()
                run()
                torch.cuda.synchronize()
                samples.append((time.perf_counter() - start) * 1e6)
            return samples
        return self._repeat("wall", batch)

    def launch(self, run) -> Timing:
        waited = []

        def batch(n: int) -> list[float]:
            samples = []
            torch.cuda._sleep(LAUNCH_SPIN_CYCLES)
            spun = torch.cuda.Event()
            spun.record()
            for _ in range(n):
                start = time.perf_counter()
                run()
                samples.append((time.perf_counter() - start) * 1e6)
                waited.append(spun.query())  # the spin is over: run() waited for the GPU
            torch.cuda.synchronize()
            return samples
        t = self._repeat("launch", batch)
        if any(waited):
            t.note = (f"run() returned after the GPU had drained its queue in {sum(waited)} of "
                      f"{len(waited)} calls: it waits for the GPU (a host sync) or took > ~10 ms")
        return t


@contextmanager
def quiet_host():
    """No garbage collection, and the calling thread on one CPU, for the duration."""
    gc_was_on = gc.isenabled()
    gc.disable()
    allowed = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    if allowed:
        os.sched_setaffinity(0, {min(allowed)})
    try:
        yield
    finally:
        if allowed:
            os.sched_setaffinity(0, allowed)
        if gc_was_on:
            gc.enable()


class GraphUnsupported(Exception):
    """The call cannot be captured in a CUDA graph (host syncs, host-side work per call, ...)."""


def capture(run: Callable[[], object]) -> "torch.cuda.CUDAGraph":
    """One call captured in a CUDA graph (warmed up on a side stream first, as torch advises)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    try:
        with torch.cuda.stream(side):
            for _ in range(3):
                run()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            run()
    except Exception as e:  # noqa: BLE001  (a library that cannot be captured is a finding)
        torch.cuda.synchronize()
        raise GraphUnsupported(f"capture failed: {type(e).__name__}: {str(e)[:200]}") from None
    return graph


class CpuTimer:
    method = "cpu wall-clock (interpreter/simulator: not a performance figure)"

    def __init__(self, reps: int = CPU_REPS):
        self.reps = reps

    def __call__(self, run: Callable[[], object]) -> dict[str, Timing | str]:
        samples = []
        for _ in range(self.reps):
            start = time.perf_counter()
            run()
            samples.append((time.perf_counter() - start) * 1e6)
        return {"wall": Timing(self.method, estimate(samples), "reps cap")}

