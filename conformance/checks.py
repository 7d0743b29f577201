"""Running one implementation on one problem and judging it: shared by the property tests and
the harness, so a cell the harness calls PASS passed exactly the checks the suite applies.
"""

from __future__ import annotations

import json
import math
import shlex
import time
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
    lse: torch.Tensor
    launch: Launch
    seconds: float  # wall time of prepare + first run, synced: includes any JIT compilation


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def run_impl(impl: Impl, inputs: DecodeInputs, options: dict[str, Any] | None = None,
             fill: float = float("nan")) -> Run:
    """Prepare and run once into output buffers pre-filled with ``fill`` (NaN: poisoned)."""
    out, lse = inputs.new_outputs()
    out.fill_(fill)
    lse.fill_(fill)
    start = time.perf_counter()
    launch = impl.prepare(inputs, out, lse, **(options or {}))
    produced = launch.run()
    if produced is not None:  # a library that allocates its own outputs
        out, lse = produced
    sync(inputs.device)
    if launch.lse_base2:  # a library that returns log2: to the spec's natural log
        lse = lse * math.log(2.0)
    return Run(out, lse, launch, time.perf_counter() - start)


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


def identical(a: Run, b: Run) -> bool:
    """The two runs' out and lse are the same bits (NaN included)."""
    return all(bool(_same(getattr(a, n), getattr(b, n)).all()) for n in ("out", "lse"))


def assert_identical(impl: Impl, inputs: DecodeInputs, a: Run, b: Run, what: str,
                     derived: str = "") -> None:
    """Two runs of the same kernel on inputs that differ only where it must not read give the
    same bits (NaN included)."""
    for name in ("out", "lse"):
        same = _same(getattr(a, name), getattr(b, name))
        if not bool(same.all()):
            idx = (~same).nonzero()[:5].tolist()
            raise fail(f"{what}: {int((~same).sum())} {name} element(s) differ, first at {idx}",
                       impl, inputs, derived=derived, kind=PropertyViolation)
