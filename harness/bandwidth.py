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

Far below 4 GiB that limit says little: a 10 MB problem cannot stream at the asymptote, whatever
the kernel (launch, the ramp of the first loads, the tail of the last wave). ``size_matched``
times a pure read of the same bytes (a problem's K, V, queries and outputs: ``bytes_moved``)
with the same cold-L2 protocol, by the fastest of the read probes, each launched to fill the GPU
at that size (a read probe's block shrinks until the programs make several waves), measured
once per size class (bytes rounded up to 1/8 of an octave) in the same run: what a decode
kernel could reach on that problem, the ratio every row states as ``pct_read``. Past
``NBYTES`` the asymptote holds and the class's time is its bytes over ``limit_gbps``. The read
is contiguous where a kernel's reads are rows of pages: the limit is the easier one.

``layout_limits`` times, per problem of the run, a read of exactly its attended K/V rows in its
own layout (dense rows strided by sequence, pages gathered through the block table), by the
fastest of the probes' ``layout_read``, on the run's own inputs (its seed: the same page order).
Every row states ``pct_layout_read`` beside ``pct_read``: the contiguous read says how far the
layout and the kernel together leave a problem from the memory's limit, the layout read how far
the kernel alone does (results/nvidia-h200/2026-11-29-layout-read/: the fastest layout read at
or below the best DSL kernel on 15 of 16 problems of 256 MB or more). It reads the first input
set's page order; a row's median cycles through its sets, whose pages are shuffled alike.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
from typing import Any

import torch

from harness.timing import GpuTimer
from impls import registry

NBYTES = 4 << 30
CLASS_STEPS = 8  # size classes per octave (a row's bytes are at most 1/8 below its class's)


def _gbps(timer: GpuTimer, call, nbytes: int) -> float:
    return nbytes / timer(call)["cold"].estimate.median / 1e3  # bytes per us -> GB/s


def _copy_gbps(timer: GpuTimer, x: torch.Tensor) -> float:
    y = torch.empty_like(x)
    return _gbps(timer, lambda: y.copy_(x), 2 * x.numel() * x.element_size())  # read + written


def _read_probes() -> dict[str, Any]:
    """Each registered backend's read probe module, or why it cannot be had here."""
    found: dict[str, Any] = {}
    for backend in registry.backends():
        if not backend.read_probe:
            continue
        try:
            backend.mode()
            found[backend.name] = importlib.import_module(backend.read_probe)
        except Exception as e:  # noqa: BLE001  (unavailable or failed: the other probes stand)
            found[backend.name] = f"not measured: {type(e).__name__}: {str(e)[:120]}"
    return found


def _distinct_probes() -> dict[str, Any]:
    """``_read_probes``' modules that could be had, each once under the first backend naming it
    (backends may share one probe module)."""
    found, seen = {}, set()
    for name, module in _read_probes().items():
        if not isinstance(module, str) and module.__name__ not in seen:
            seen.add(module.__name__)
            found[name] = module
    return found


def _probes(device: torch.device) -> dict[str, float | str]:
    timer = GpuTimer(device, modes=("cold",))
    x = torch.ones(NBYTES // 2, dtype=torch.bfloat16, device=device)
    probes: dict[str, float | str] = {"copy": _copy_gbps(timer, x)}
    probes["read (torch sum)"] = _gbps(timer, lambda: x.sum(dtype=torch.float32), NBYTES)
    for name, module in _read_probes().items():
        if isinstance(module, str):
            probes[f"read ({name})"] = module
            continue
        try:
            probes[f"read ({name})"] = _gbps(timer, module.read_probe(x), NBYTES)
        except Exception as e:  # noqa: BLE001  (a probe that fails: the other probes stand)
            probes[f"read ({name})"] = f"not measured: {type(e).__name__}: {str(e)[:120]}"
    return probes


def measure(device: torch.device) -> dict:
    """GB/s of each probe and the limit (the fastest); probe failures are recorded, not raised."""
    probes = _probes(device)
    torch.cuda.empty_cache()
    numbers = {k: round(v, 1) for k, v in probes.items() if isinstance(v, float)}
    best = max(numbers, key=numbers.get)
    return {"probes": {**probes, **numbers}, "limit_gbps": numbers[best], "limit_probe": best}


def size_class(nbytes: int) -> int:
    """``nbytes`` rounded up to the next of CLASS_STEPS steps per octave (whole KiB)."""
    nbytes = max(int(nbytes), 1 << 10)
    step = max(1 << 10, 1 << max(0, nbytes.bit_length() - 1 - CLASS_STEPS.bit_length() + 1))
    return -(-nbytes // step) * step


def size_matched(device: torch.device, sizes, limit_gbps: float) -> dict[int, dict]:
    """Per size class of ``sizes`` (bytes): the fastest read's median (us) and which probe."""
    timer = GpuTimer(device, quick=True, modes=("cold",))
    # read(x) -> a call reading x; one per probe kernel (backends may share one)
    reads = {"torch sum": lambda x: lambda: x.sum(dtype=torch.float32)}
    for name, module in _distinct_probes().items():
        reads[name] = functools.partial(module.read_probe, fill=True)
    found = {}
    for size in sorted({size_class(s) for s in sizes}):
        if size >= NBYTES:
            found[size] = {"us": round(size / limit_gbps / 1e3, 2), "probe": "asymptote"}
            continue
        x = torch.ones(size // 2, dtype=torch.bfloat16, device=device)
        times = {}
        for name, read in reads.items():
            try:
                times[name] = timer(read(x))["cold"].estimate.median
            except Exception:  # noqa: BLE001  (a probe that fails here: the others stand)
                continue
        best = min(times, key=times.get)
        found[size] = {"us": round(times[best], 2), "probe": best}
        del x
    torch.cuda.empty_cache()
    return found


def read_limit_us(limits: dict, nbytes: int) -> float | None:
    """The size-matched read time of ``nbytes`` (its class's, scaled to its bytes)."""
    size = size_class(nbytes)
    entry = limits.get(size) or limits.get(str(size))  # JSON keys are strings
    return None if entry is None else entry["us"] * nbytes / size


def layout_reads(inputs, timer: GpuTimer | None = None) -> dict[str, float | str]:
    """Cold-L2 median (us) of each read probe's ``layout_read`` on ``inputs``: every attended K
    and V row read once in the problem's own layout (strided by KV head, gathered through the
    block table), and nothing else, or why it could not be had. Beside ``size_matched``'s
    contiguous read of the same bytes, it says what the layout alone costs (``layout_limits``
    takes the fastest as each row's ``pct_layout_read``; ``scripts/layout_read.py`` prints all)."""
    timer = timer or GpuTimer(inputs.device, quick=True, modes=("cold",))
    found: dict[str, float | str] = {}
    for name, module in _distinct_probes().items():
        if not hasattr(module, "layout_read"):
            continue
        try:
            call, _ = module.layout_read(inputs)
            found[name] = round(timer(call)["cold"].estimate.median, 2)
        except Exception as e:  # noqa: BLE001  (a probe that fails: the others stand)
            found[name] = f"not measured: {type(e).__name__}: {str(e)[:120]}"
    return found


def problem_key(problem) -> str:
    """A problem's key in ``layout_limits``: a digest of the rows' identity of it
    (``results.problem_key``, its whole spec), short enough for a provenance of many problems."""
    from harness import results

    return hashlib.sha1(results.problem_key({"spec": problem.to_dict()}).encode()).hexdigest()[:16]


def layout_limits(device: torch.device, problems, seed: int) -> dict[str, dict]:
    """Per distinct problem (``problem_key``): the fastest probe's ``layout_read`` of the inputs
    the run draws for it (``seed``), {"us", "probe"}; or {"note"} saying why none was had (inputs
    that do not fit, no probe with a layout read, every probe refusing the layout, an error).
    Never raises: a problem that fails here costs its rows' '% layout', not the run."""
    from harness.runner import does_not_fit  # (runner imports this module)
    from specs.inputs import make_inputs

    found: dict[str, dict] = {}
    try:
        timer = GpuTimer(device, quick=True, modes=("cold",))
    except Exception as e:  # noqa: BLE001  (no limit: the rows go without '% layout')
        return {problem_key(p): {"note": f"not measured: {type(e).__name__}: {str(e)[:120]}"}
                for p in problems}
    for problem in problems:
        key = problem_key(problem)
        if key in found:
            continue
        inputs = None
        try:
            torch.cuda.empty_cache()  # the last problem's blocks count as free again
            if why := does_not_fit(problem, device):  # the cells' own test
                found[key] = {"note": f"not measured: the problem's inputs do not fit: {why}"}
                continue
            inputs = make_inputs(problem, seed, device)
            reads = layout_reads(inputs, timer)
        except Exception as e:  # noqa: BLE001  (out of memory, or a probe's fault: noted)
            found[key] = {"note": f"not measured: {type(e).__name__}: {str(e)[:120]}"}
            continue
        finally:
            del inputs
        times = {name: us for name, us in reads.items() if isinstance(us, float)}
        if times:
            best = min(times, key=times.get)
            found[key] = {"us": times[best], "probe": best}
        else:
            found[key] = {"note": "; ".join(f"{n}: {why}" for n, why in reads.items())[:240]
                          or "not measured: no read probe has a layout read"}
    del timer
    try:
        torch.cuda.empty_cache()
    except Exception:  # noqa: BLE001  (a faulted context: the notes above say so)
        pass
    return found


def layout_limit_us(limits: dict, problem) -> float | None:
    """``problem``'s layout read time (us) from a run's ``layout_limits``, or None."""
    entry = limits.get(problem_key(problem)) or {}
    return entry.get("us")


def run_fields(device: torch.device, problems, timing: bool, seed: int = 0) -> dict:
    """A run's provenance fields for the GPU it measures on: the probes and the limit every row's
    % of bandwidth is over, and, when timing, the size-matched reads of ``problems``' sizes and
    each problem's layout read (on the inputs of ``seed``)."""
    bw = measure(device)
    fields = dict(bandwidth=bw["probes"], bandwidth_limit_gbps=bw["limit_gbps"],
                  bandwidth_limit_probe=bw["limit_probe"])
    if timing:
        fields["read_limits"] = size_matched(device, [p.bytes_moved for p in problems],
                                             bw["limit_gbps"])
        fields["layout_limits"] = layout_limits(device, problems, seed)
    return fields
