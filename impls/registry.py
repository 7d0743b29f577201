"""The implementation registry: who implements which variant, what each supports, what runs here.

Every implementation fills one entry-point signature, in a module of its own:

    prepare(inputs: DecodeInputs, out: Tensor, lse: Tensor, **options) -> Launch

``prepare`` does the set-up (workspace, compiled kernel, launch grid) and returns a ``Launch``
whose ``run()`` only launches kernels that write ``out [B, Hq, D]`` and ``lse [B, Hq]`` on the
current stream; nothing in it syncs. The harness times ``run()``. A vendor library that
allocates its own outputs (no ``out=`` argument) returns them from ``run()`` as ``(out, lse)``
instead of copying, so its time is the library's alone; DSL kernels write the given buffers and
return None.

A backend is a folder ``impls/<name>/`` whose ``__init__.py`` declares, without importing its
DSL, ``BACKEND = Backend(...)`` and ``IMPLS = [Impl(...), ...]`` (a module outside the tree can
do the same and be named in ``DECODE_BENCH_PLUGINS``). ``Impl.prepare`` wraps the
module's ``prepare`` with what every backend needs, in this order, before any kernel launch:
availability ("unavailable: <why>"), the declared capabilities ("unsupported: <why>"), the
launch options it accepts, and ``specs.validate_inputs`` (``ProblemError`` naming the parameter).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import pkgutil
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Callable

import torch

from specs.inputs import DecodeInputs, validate_inputs
from specs.problem import DTYPES, LAYOUTS, DecodeProblem, ProblemError

VARIANTS = ("dense", "paged", "split-k")


class Unsupported(Exception):
    """The implementation does not handle this problem (declared, not a failure)."""


class Unavailable(Exception):
    """The implementation cannot run on this machine (no GPU, package missing)."""


@dataclass
class Launch:
    run: Callable[[], Any]  # launches the kernels; returns None, or (out, lse) it allocated
    config: dict[str, Any] = field(default_factory=dict)  # choices made (num_splits, BLOCK_N, ...)
    # The library returns its LSE in base 2 (log2 of the sum of 2^(scores * log2 e)), as
    # FlashInfer does: the check converts it to the spec's natural log, outside the timed call.
    lse_base2: bool = False
    # The softmax normaliser is summed from probabilities rounded to the input dtype (FlashInfer's
    # tensor-core path), so the LSE is good to the dtype's roundoff, not float32's: the check
    # allows that (specs.tolerance) and the harness reports it.
    lse_rounded_sum: bool = False


@dataclass(frozen=True)
class Capabilities:
    """What an implementation handles, as data; ``unsupported(problem)`` says why not."""

    layouts: frozenset[str]
    dtypes: frozenset[str] = frozenset(DTYPES)
    max_head_dim: int = 256
    head_dim_multiple: int = 1
    head_dims: frozenset[int] | None = None  # an explicit set (a library's compiled head dims)
    page_size_multiple: int = 1
    uniform_lengths_only: bool = False
    note: str = ""  # why the limits are what they are

    def unsupported(self, p: DecodeProblem) -> str | None:
        why = f" ({self.note})" if self.note else ""
        if p.layout not in self.layouts:
            return f"{p.layout} layout (handles: {', '.join(sorted(self.layouts))}){why}"
        if p.dtype not in self.dtypes:
            return f"dtype {p.dtype} (handles: {', '.join(sorted(self.dtypes))}){why}"
        if self.head_dims is not None and p.head_dim not in self.head_dims:
            return f"head_dim {p.head_dim} (handles: {', '.join(map(str, sorted(self.head_dims)))}){why}"
        if p.head_dim > self.max_head_dim or p.head_dim % self.head_dim_multiple:
            return (f"head_dim {p.head_dim} (handles multiples of {self.head_dim_multiple} up to "
                    f"{self.max_head_dim}){why}")
        if p.layout == "paged" and p.page_size % self.page_size_multiple:
            return f"page_size {p.page_size} (needs a multiple of {self.page_size_multiple}){why}"
        if self.uniform_lengths_only and not p.uniform:
            return f"ragged seq_lens (uniform lengths only){why}"
        return None


@dataclass(frozen=True)
class Backend:
    """A DSL or vendor library. ``probe()`` imports what it needs and returns the run mode
    ("gpu", or a CPU mode such as "interpreter"), or raises ``Unavailable`` with the reason."""

    name: str
    summary: str
    requires: tuple[str, ...]  # importable module names
    cpu_mode: str | None = None  # how it runs without a GPU, if it can ("interpreter", ...)
    probe_module: str | None = None  # module with probe() -> None for extra checks
    vendor: bool = False  # a library's own kernels (the baselines), not a DSL written here
    compiles: str = ""  # when it compiles at run time: "" (never: prebuilt), or what and when

    def mode(self) -> str:
        return _mode(self)


@cache
def _mode(backend: Backend) -> str:
    if not torch.cuda.is_available() and backend.cpu_mode is None:
        raise Unavailable("no CUDA GPU")
    for module in backend.requires:
        if importlib.util.find_spec(module.split(".")[0]) is None:
            raise Unavailable(f"package {module.split('.')[0]!r} not installed")
    for module in backend.requires:
        try:
            importlib.import_module(module)
        except Exception as e:  # a broken install says so, it does not crash the run
            raise Unavailable(f"import {module} failed: {type(e).__name__}: {e}") from None
    if backend.probe_module:
        importlib.import_module(backend.probe_module).probe()
    return "gpu" if torch.cuda.is_available() else backend.cpu_mode


@dataclass(frozen=True)
class Impl:
    backend: Backend
    variant: str
    module: str | None  # module holding prepare(); None when the whole cell is unsupported
    caps: Capabilities | None = None
    cell_unsupported: str = ""  # why the backend has no such variant
    options: tuple[str, ...] = ()  # launch options prepare() accepts
    summary: str = ""
    allocates_outputs: bool = False  # run() returns (out, lse) of its own (vendor libraries)
    entry: str = "prepare"  # name of the module's entry point
    negative_control: bool = False  # a deliberately wrong kernel the suite must reject
    caught_by: tuple[str, ...] = ()  # negative controls: the properties that must reject it

    @property
    def name(self) -> str:
        return f"{self.backend.name}/{self.variant}"

    def availability(self) -> str | None:
        """None when it can run here, else the reason."""
        try:
            self.backend.mode()
        except Unavailable as e:
            return str(e)
        return None

    def unsupported(self, problem: DecodeProblem) -> str | None:
        if self.module is None:
            return self.cell_unsupported
        return self.caps.unsupported(problem)

    def prepare(self, inputs: DecodeInputs, out: torch.Tensor, lse: torch.Tensor,
                **options: Any) -> Launch:
        self.backend.mode()  # raises Unavailable
        reason = self.unsupported(inputs.problem)
        if reason:
            raise Unsupported(reason)
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            raise ProblemError(f"launch option(s) {unknown}: not accepted by {self.name} "
                               f"(accepts: {list(self.options) or 'none'})")
        validate_inputs(inputs, out, lse)
        prepare = getattr(importlib.import_module(self.module), self.entry)
        return prepare(inputs, out, lse, **options)


PLUGINS_ENV = "DECODE_BENCH_PLUGINS"  # comma-separated modules with IMPLS, for out-of-tree backends


def _discover() -> list[Impl]:
    import impls

    found: list[Impl] = []
    for info in sorted(pkgutil.iter_modules(impls.__path__), key=lambda m: m.name):
        if info.ispkg:
            found += importlib.import_module(f"impls.{info.name}").IMPLS
    for module in filter(None, os.environ.get(PLUGINS_ENV, "").split(",")):
        found += importlib.import_module(module.strip()).IMPLS
    for impl in found:
        assert impl.variant in VARIANTS, f"{impl.name}: variant must be one of {VARIANTS}"
        assert not impl.negative_control, f"{impl.name}: negative controls live in conformance/"
        assert impl.module is None or impl.caps.layouts <= set(LAYOUTS), impl.name
    return found


@cache
def all_impls() -> tuple[Impl, ...]:
    """Every registered cell (backend x variant), negative controls excluded."""
    return tuple(_discover())


def select(backends=None, variants=None) -> list[Impl]:
    """Registered cells filtered by backend and variant names; unknown names are errors."""
    impls = list(all_impls())
    known_b = sorted({i.backend.name for i in impls})
    for name in backends or ():
        if name not in known_b:
            raise ProblemError(f"--backends: unknown backend {name!r}; known: {known_b}")
    for name in variants or ():
        if name not in VARIANTS:
            raise ProblemError(f"--variants: unknown variant {name!r}; known: {list(VARIANTS)}")
    return [i for i in impls if (not backends or i.backend.name in backends)
            and (not variants or i.variant in variants)]


def get(name: str) -> Impl:
    """An implementation by ``backend/variant``."""
    for impl in all_impls():
        if impl.name == name:
            return impl
    raise ProblemError(f"no implementation {name!r}; known: {[i.name for i in all_impls()]}")


def sm_count(device: torch.device) -> int:
    """Multiprocessors of the GPU; on the CPU a nominal 4 so split heuristics still split."""
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 4
