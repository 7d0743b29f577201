"""Timing of a prepared launch. The only place in the project that times anything.

Four modes on a GPU (``MODES``; ``--timing`` selects), each its own column:
``cold``, CUDA events around one call after the L2 was flushed by reads and with the host's
launch hidden behind a GPU spin (the primary figure); ``graph``, the same call replayed from a
CUDA graph; ``wall``, host wall-clock of a call plus a sync; ``launch``, the host time for the
call to return while the GPU is busy (a call that waited for the GPU is flagged). The device
modes launch 0-7 empty kernels before each repetition, cycling (``phase_shifts``): a short
call's time depends on the launch count modulo 8 before it, so one fixed count would make a
tight interval that another run does not repeat (results/nvidia-h200/2026-11-21-grid/README.md).
Host modes run with the garbage collector off and the thread on one CPU. Given several launches
(one per input set: other buffers, other values), every mode cycles through them, so no timed
call repeats the one before it on the same memory (``conformance.checks.time_and_recheck``
then re-checks each). Every mode repeats
until the median's 95 % bootstrap interval is within ``TARGET_REL_CI`` of it, or a cap
(``harness.stats``). On a CPU (interpreters): host wall-clock of one call, no performance figure.
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
SPIN_CYCLES = 500_000  # ~250 us at ~2 GHz: longer than most backends' host launch path
MAX_SPIN_CYCLES = 8 * SPIN_CYCLES  # a call whose launch outlasts the spin gets a longer one, to this
LAUNCH_SPIN_CYCLES = 20_000_000  # ~10 ms: the GPU stays busy while BATCH calls are issued

METHODS = {
    "cold": "cuda-events, L2 flushed (by reads) before each call, host launch hidden behind a spin, "
            "launch phase cycled",
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

    def __call__(self, runs) -> dict[str, Timing | str]:
        """Mode -> Timing, or the reason a mode has no figure, for one launch or a list of
        launches timed in turn (one per input set). ``self.graphs`` then holds the graph mode's
        (graph, what the captured call returned) per launch, for a check of the replays."""
        runs = _as_list(runs)
        self.graphs = None
        for run in runs:
            for _ in range(WARMUP_CALLS):
                run()
        torch.cuda.synchronize()
        out: dict[str, Timing | str] = {}
        with quiet_host():
            for mode in self.modes:
                try:
                    out[mode] = getattr(self, mode)(runs)
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

    def _events(self, calls: list[Callable[[], object]]):
        before = self._cold_l2()
        turn = itertools.cycle(calls)
        exposed: list[bool] = []
        spin = SPIN_CYCLES

        def batch(n: int) -> list[float]:
            nonlocal spin
            events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                      for _ in range(n)]
            for begin, end in events:
                call = next(turn)
                before()
                torch.cuda._sleep(spin)
                begin.record()
                call()
                # the GPU already past `begin` while call() was still enqueuing: it may have waited
                # for the host, so this sample can hold host time (a slow launch path, a busy CPU:
                # a DSL's two launches on a loaded host read 3x its GPU time), and the next
                # samples get twice the spin
                exposed.append(begin.query())
                if exposed[-1]:
                    spin = min(2 * spin, MAX_SPIN_CYCLES)
                end.record()
            torch.cuda.synchronize()
            return [begin.elapsed_time(end) * 1e3 for begin, end in events]
        return batch, exposed

    def _timed(self, mode: str, calls) -> Timing:
        batch, exposed = self._events(calls)
        t = self._repeat(mode, batch)
        if any(exposed):
            t.note = (f"host launch not hidden behind the spin in {sum(exposed)} of {len(exposed)} "
                      "calls: those samples can hold host time (the spin doubled after each, up "
                      f"to {MAX_SPIN_CYCLES // SPIN_CYCLES}x)")
        return t

    def cold(self, runs) -> Timing:
        return self._timed("cold", runs)

    def graph(self, runs) -> Timing:
        # kept (with what each captured call returned) so the replays can be checked afterwards
        self.graphs = [capture(run) for run in runs]
        return self._timed("graph", [g.replay for g, _ in self.graphs])

    def wall(self, runs) -> Timing:
        before = self._cold_l2()
        turn = itertools.cycle(runs)

        def batch(n: int) -> list[float]:
            samples = []
            for _ in range(n):
                run = next(turn)
                before()
                torch.cuda.synchronize()
                start = time.perf_counter()
                run()
                torch.cuda.synchronize()
                samples.append((time.perf_counter() - start) * 1e6)
            return samples
        return self._repeat("wall", batch)

    def launch(self, runs) -> Timing:
        waited = []
        turn = itertools.cycle(runs)

        def batch(n: int) -> list[float]:
            samples = []
            torch.cuda._sleep(LAUNCH_SPIN_CYCLES)
            spun = torch.cuda.Event()
            spun.record()
            for _ in range(n):
                run = next(turn)
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


def timing_cpu(allowed: set[int]) -> int:
    """The CPU the timing thread runs on: one per GPU of the host (by the physical index that
    CUDA_VISIBLE_DEVICES names), so processes timing different GPUs at once (a run over several
    GPUs, two runs side by side) do not queue their launches on one core."""
    first = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    cpus = sorted(allowed)
    return cpus[int(first) % len(cpus) if first.isdigit() else 0]


@contextmanager
def quiet_host():
    """No garbage collection, and the calling thread on one CPU (``timing_cpu``), for the
    duration."""
    gc_was_on = gc.isenabled()
    gc.disable()
    allowed = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    if allowed:
        os.sched_setaffinity(0, {timing_cpu(allowed)})
    try:
        yield
    finally:
        if allowed:
            os.sched_setaffinity(0, allowed)
        if gc_was_on:
            gc.enable()


class GraphUnsupported(Exception):
    """The call cannot be captured in a CUDA graph (host syncs, host-side work per call, ...)."""


def capture(run: Callable[[], object]) -> tuple["torch.cuda.CUDAGraph", object]:
    """One call captured in a CUDA graph (warmed up on a side stream first, as torch advises),
    and what the captured call returned (a library's outputs, which each replay rewrites)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    try:
        with torch.cuda.stream(side):
            for _ in range(3):
                run()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            produced = run()
    except Exception as e:  # noqa: BLE001  (a library that cannot be captured is a finding)
        torch.cuda.synchronize()
        raise GraphUnsupported(f"capture failed: {type(e).__name__}: {str(e)[:200]}") from None
    return graph, produced


PLAN_REPS = 30  # host planning is microseconds: a fixed count, the median of it


def time_plan(plan: Callable[[], object], reps: int = PLAN_REPS) -> Estimate:
    """Host time of a launch's ``plan`` (what a serving loop redoes per batch: a split plan from
    the host lengths and its device tensors), with the device idle before each call; on a CPU
    as on a GPU, since it is host work."""
    samples = []
    with quiet_host():
        for _ in range(reps):
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            start = time.perf_counter()
            plan()
            samples.append((time.perf_counter() - start) * 1e6)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return estimate(samples)


class CpuTimer:
    method = "cpu wall-clock (interpreter/simulator: not a performance figure)"

    def __init__(self, reps: int = CPU_REPS):
        self.reps = reps

    def __call__(self, runs) -> dict[str, Timing | str]:
        """``reps`` calls of each launch given (one per input set)."""
        samples = []
        for run in _as_list(runs) * self.reps:
            start = time.perf_counter()
            run()
            samples.append((time.perf_counter() - start) * 1e6)
        return {"wall": Timing(self.method, estimate(samples), "reps cap")}


def _as_list(runs) -> list[Callable[[], object]]:
    """A timer's argument: one launch's run, or a list of them (one per input set)."""
    return [runs] if callable(runs) else list(runs)

