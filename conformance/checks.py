"""Running one implementation on one problem and judging it: shared by the property tests and
the harness, so a cell the harness calls PASS passed exactly the checks the suite applies.
"""

from __future__ import annotations

import json
import math
import shlex
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch

from impls import registry
from impls.registry import Impl, Launch
from specs.inputs import DecodeInputs
from specs.reference import Reference, reference
from specs.tolerance import Comparison, compare


class ConformanceFailure(AssertionError):
    """An implementation computed something other than decode attention (or left output unwritten)."""


class PropertyViolation(ConformanceFailure):
    """Two runs that must agree (a property of decode attention) do not."""


@dataclass
class Run:
    out: torch.Tensor
    lse: torch.Tensor | None  # None: the implementation declared it returns no LSE
    launch: Launch
    seconds: float  # wall time of prepare + first run, synced: includes any JIT compilation
    buffers: tuple[torch.Tensor, torch.Tensor] | None = None  # the out, lse given to prepare


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def call(impl: Impl, launch: Launch, out: torch.Tensor, lse: torch.Tensor,
         device: torch.device, run=None, produced=None) -> tuple[torch.Tensor, torch.Tensor | None]:
    """One ``launch.run()`` (or ``run()``: a graph replay, whose outputs are ``produced`` at
    capture), synced, and what it computed in the spec's terms: (out, lse), the library's own
    tensors when it allocates them, lse in natural log, None when not returned."""
    if run is None:
        produced = launch.run()
    else:
        run()
    if produced is not None:  # a library that allocates its own outputs
        out, lse = produced
    sync(device)
    if not impl.returns_lse:  # declared: out alone is judged, whatever is in the buffer
        return out, None
    return out, lse * math.log(2.0) if launch.lse_base2 else lse  # log2 from the library: to ln


def run_impl(impl: Impl, inputs: DecodeInputs, options: dict[str, Any] | None = None,
             fill: float = float("nan")) -> Run:
    """Prepare and run once into output buffers pre-filled with ``fill`` (NaN: poisoned)."""
    out, lse = inputs.new_outputs()
    out.fill_(fill)
    lse.fill_(fill)
    start = time.perf_counter()
    launch = impl.prepare(inputs, out, lse, **(options or {}))
    got_out, got_lse = call(impl, launch, out, lse, inputs.device)
    return Run(got_out, got_lse, launch, time.perf_counter() - start, (out, lse))


def reproducer(impl: Impl, inputs: DecodeInputs, options: dict[str, Any] | None = None) -> str:
    """A command that replays this exact case (problem, seed, options) through the harness."""
    cmd = ["python", "-m", "harness", "run", "--backends", impl.backend.name, "--variants",
           impl.variant(inputs.problem.layout), "--problem", json.dumps(inputs.problem.to_dict()),
           "--seed", str(inputs.seed), "--no-timing"]
    for key, value in (options or {}).items():
        text = json.dumps(value) if isinstance(value, dict) else str(value)
        cmd += [f"--{key.replace('_', '-')}", text]
    line = " ".join(shlex.quote(c) for c in cmd)
    if impl not in registry.all_impls():  # a negative control, or an Impl made by a test
        return f"# not registered, replay with conformance.checks.run_impl: {line}"
    return line


def fail(message: str, impl: Impl, inputs: DecodeInputs, options=None, derived: str = "",
         kind: type[ConformanceFailure] = ConformanceFailure) -> ConformanceFailure:
    """The failure, with a command that replays the case (for a derived case: its base case,
    and what was derived from it)."""
    note = f" (the check ran on inputs derived from this case: {derived})" if derived else ""
    return kind(f"{impl.name} on {inputs.problem.label()} (seed {inputs.seed}): {message}\n"
                f"  replay: {reproducer(impl, inputs, options)}{note}")


@dataclass
class Checked:
    run: Run
    comparison: Comparison
    ref: Reference = field(repr=False)


def check(impl: Impl, inputs: DecodeInputs, ref: Reference | None = None,
          options: dict[str, Any] | None = None) -> Checked:
    """Run on poisoned outputs and compare with the float64 oracle (no assertion)."""
    ref = ref if ref is not None else reference(inputs)
    run = run_impl(impl, inputs, options)
    return Checked(run, compare(inputs.problem, run.out, run.lse, ref,
                                lse_rounded_sum=run.launch.lse_rounded_sum), ref)


def assert_conforms(impl: Impl, inputs: DecodeInputs, ref: Reference | None = None,
                    options: dict[str, Any] | None = None, what: str = "") -> Checked:
    checked = check(impl, inputs, ref, options)
    if not checked.comparison.passed:
        raise fail(f"{what + ': ' if what else ''}does not match the reference: "
                   f"{checked.comparison.summary()}", impl, inputs, options)
    return checked


def assert_agree(impl: Impl, inputs: DecodeInputs, a: Run, b: Run, ref: Reference, what: str,
                 options=None, derived: str = "") -> None:
    """Two runs that must compute the same thing agree within the tolerance rule (``ref``
    supplies the tolerance, not the expected values)."""
    c = compare(inputs.problem, a.out, a.lse, ref, expected=(b.out, b.lse),
                lse_rounded_sum=a.launch.lse_rounded_sum or b.launch.lse_rounded_sum)
    if not c.passed:
        raise fail(f"{what}: {c.summary()}", impl, inputs, options, derived, PropertyViolation)


def _same(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return (x == y) | (torch.isnan(x) & torch.isnan(y))


def _returned(a: Run, b: Run) -> tuple[str, ...]:
    """The outputs both runs returned: out, and lse unless the implementation declared none."""
    return ("out", "lse") if a.lse is not None and b.lse is not None else ("out",)


def identical(a: Run, b: Run) -> bool:
    """The two runs' out and lse are the same bits (NaN included)."""
    return all(bool(_same(getattr(a, n), getattr(b, n)).all()) for n in _returned(a, b))


def assert_identical(impl: Impl, inputs: DecodeInputs, a: Run, b: Run, what: str,
                     derived: str = "") -> None:
    """Two runs of the same kernel on inputs that differ only where it must not read give the
    same bits (NaN included)."""
    for name in _returned(a, b):
        same = _same(getattr(a, name), getattr(b, name))
        if not bool(same.all()):
            idx = (~same).nonzero()[:5].tolist()
            raise fail(f"{what}: {int((~same).sum())} {name} element(s) differ, first at {idx}",
                       impl, inputs, derived=derived, kind=PropertyViolation)


# ---- timed calls --------------------------------------------------------------------------------
RECHECK_SEED = 7_777_777  # the seeds of the query vectors drawn anew for the re-check


@dataclass
class InputSet:
    """Inputs of one problem with their reference: the timer cycles through several. The
    re-check's query vectors and their references are drawn once per set and kept (a set is
    shared by a backend's variants)."""

    inputs: DecodeInputs
    ref: Reference
    rechecks: list = field(default_factory=list, repr=False)

    def recheck_case(self, k: int) -> tuple[torch.Tensor, Reference]:
        """The k-th q drawn anew for this set (same shape and dtype) and its reference."""
        while len(self.rechecks) <= k:
            q = self.inputs.q
            g = torch.Generator(device=q.device).manual_seed(RECHECK_SEED + len(self.rechecks))
            new_q = torch.randn(q.shape, generator=g, device=q.device).to(q.dtype)
            with query_swapped(self.inputs, new_q):
                self.rechecks.append((new_q, reference(self.inputs)))
        return self.rechecks[k]


@contextmanager
def query_swapped(inputs: DecodeInputs, new_q: torch.Tensor):
    """``inputs.q`` holding ``new_q`` in place (same buffer) for the block, then restored: the
    inputs are shared with other cells."""
    kept = inputs.q.clone()
    inputs.q.copy_(new_q)
    try:
        yield
    finally:
        inputs.q.copy_(kept)


def time_and_recheck(impl: Impl, checked: Checked, first: InputSet, extra: list[InputSet],
                     options: dict[str, Any] | None, timer) -> tuple[dict, str | None]:
    """Time ``checked``'s launch (a passed check on ``first``) with ``timer``, cycling through
    it and a launch prepared on each ``extra`` input set (other buffers, other values), so no
    timed call repeats the one before it on the same memory. Then re-check every set, for the
    plain call and for the graph the timer replayed: q drawn anew in place (the same buffer,
    other values), the outputs left holding the previous call's result (believable, and wrong
    for the new q), one more call, compared with the new q's reference. A kernel that memoises
    its result (by pointer or flag, copied back or not), works only on its first call, or works
    only when its output looks poisoned, is caught. q is restored afterwards (the sets are
    shared with the backend's other cells). Returns the timings and None, or the timings and
    why the timed calls did not conform."""
    sets = [(first, checked.run.launch, checked.run.buffers)]
    for s in extra:
        out, lse = s.inputs.new_outputs()
        sets.append((s, impl.prepare(s.inputs, out, lse, **(options or {})), (out, lse)))
    timings = timer([launch.run for _, launch, _ in sets])
    graphs = getattr(timer, "graphs", None) or [None] * len(sets)
    for n, ((input_set, launch, (out, lse)), graph) in enumerate(zip(sets, graphs)):
        for k, how in enumerate(("call", "graph replay") if graph else ("call",)):
            new_q, ref = input_set.recheck_case(k)
            run, produced = (graph[0].replay, graph[1]) if how == "graph replay" else (None, None)
            with query_swapped(input_set.inputs, new_q):
                got_out, got_lse = call(impl, launch, out, lse, new_q.device, run, produced)
            c = compare(input_set.inputs.problem, got_out, got_lse, ref, lse_rounded_sum=launch.lse_rounded_sum)
            if not c.passed:
                return timings, (f"after timing, input set {n + 1} of {len(sets)} with q drawn anew, "
                                 f"one more {how}: does not match the reference: {c.summary()}")
    return timings, None
