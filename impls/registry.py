"""The implementation registry: who implements which algorithm on which layout, what each
supports, what runs here.

The registry's unit is an ``Impl``: one backend's kernel(s) of one algorithm, ``one-pass`` or
``split-k``, serving the KV layouts its ``Capabilities`` name. Users name the cells of the
results by *variant*: ``dense`` (one pass over the dense layout), ``paged`` (one pass over the
paged layout), ``split-k`` (on either layout); ``Impl.variant(layout)`` maps one to the other.

Every implementation fills one entry-point signature, in a module of its own:

    prepare(inputs: DecodeInputs, out: Tensor, lse: Tensor, **options) -> Launch

``prepare`` does the set-up (workspace, compiled kernel, launch grid) and returns a ``Launch``
whose ``run()`` only launches kernels that write ``out [B * q_len, Hq, D]`` and
``lse [B * q_len, Hq]`` on the current stream; nothing in it syncs. The harness times ``run()``. A vendor library that
allocates its own outputs (no ``out=`` argument) returns them from ``run()`` as ``(out, lse)``
instead of copying, so its time is the library's alone; DSL kernels write the given buffers and
return None.

A backend is a folder ``impls/<name>/`` whose ``__init__.py`` declares, without importing its
DSL, ``BACKEND = Backend(...)`` and ``IMPLS = [Impl(...), ...]`` (a module outside the tree can
do the same and be named in ``DECODE_BENCH_PLUGINS``). Everything the harness and the suite need
to know about a backend is in those declarations. ``Impl.prepare`` wraps the module's ``prepare``
with what every backend needs, in this order, before any kernel launch: availability
("unavailable: <why>"), the declared capabilities ("unsupported: <why>"), the launch options it
accepts, and ``specs.validate_inputs`` (``ProblemError`` naming the parameter).
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
import importlib.util
import os
import json
import pkgutil
import subprocess
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Callable, Mapping

import torch

from impls.launch import Space
from specs.inputs import DecodeInputs, validate_inputs
from specs.problem import DTYPES, LAYOUTS, DecodeProblem, ProblemError

ALGORITHMS = ("one-pass", "split-k")
VARIANTS = ("dense", "paged", "split-k")  # what users name: one pass on each layout, or split-k


def variant_of(algorithm: str, layout: str) -> str:
    """The user-facing variant of ``algorithm`` run on ``layout``."""
    return "split-k" if algorithm == "split-k" else layout


class Unsupported(Exception):
    """The implementation does not handle this problem (declared, not a failure)."""


class Unavailable(Exception):
    """The implementation cannot run on this machine (no GPU, package missing)."""


@dataclass
class Launch:
    run: Callable[[], Any]  # launches the kernels; returns None, or (out, lse) it allocated
    config: dict[str, Any] = field(default_factory=dict)  # choices made (num_splits, block_n, ...)
    # The library returns its LSE in base 2 (log2 of the sum of 2^(scores * log2 e)): the check
    # converts it to the spec's natural log, outside the timed call.
    lse_base2: bool = False
    # The softmax normaliser is summed from probabilities rounded to the input dtype (an MMA row
    # sum of P), so the LSE is good to the dtype's roundoff, not float32's: the check allows that
    # (specs.tolerance) and the harness reports it.
    lse_rounded_sum: bool = False
    # Host work a serving loop redoes for every batch (a split plan from the host lengths, and
    # its device tensors), apart from run(): the harness times it in its own column.
    plan: Callable[[], Any] | None = None
    # Seconds the DSL's autotuner spent in prepare (the ``tune`` launch option), which the
    # harness reports apart from the first call's time; None when nothing was tuned.
    tuning_s: float | None = None


@dataclass(frozen=True)
class Capabilities:
    """What an implementation handles, as data; ``unsupported(problem)`` says why not.

    ``no_kernel_for`` gives the reason for a layout the backend has no kernel for (else a generic
    one); ``per_layout`` overrides fields on one layout (a library whose paged kernel takes fewer
    head dims than its dense one)."""

    layouts: frozenset[str]
    dtypes: frozenset[str] = frozenset(DTYPES)
    max_head_dim: int = 256
    min_head_dim: int = 1
    head_dim_multiple: int = 1
    head_dims: frozenset[int] | None = None  # an explicit set (a library's compiled head dims)
    page_size_multiple: int = 1
    kv_dtypes: frozenset[str] = frozenset()  # quantised cache dtypes it reads (specs KV_DTYPES)
    kv_scales: frozenset[str] = frozenset({"tensor", "head"})  # their scales' granularities
    kv_note: str = ""  # why the quantised caches are what they are (the vendor's API, the DSL)
    max_q_len: int = 1  # query tokens per sequence a kernel takes (specs Query.q_len)
    q_note: str = ""  # why max_q_len is what it is (the DSL's kernel, the vendor's API)
    windows: bool = False  # a left window of the last ``window`` tokens (specs Mask)
    softcaps: bool = False  # logits soft-capped at ``softcap`` (specs Mask)
    mask_note: str = ""  # why windows and soft-capping are taken or not
    uniform_lengths_only: bool = False
    max_group_size: int | None = None  # the most query heads per KV head a kernel takes
    max_splits: int | None = None  # split-k: the most splits a num_splits option may ask for
    max_seq_len: int | None = None  # the longest sequence a kernel takes (a library's limit)
    max_batch: int | None = None  # the most sequences a kernel takes in one call
    note: str = ""  # why the limits are what they are
    no_kernel_for: Mapping[str, str] = field(default_factory=dict, hash=False)
    per_layout: Mapping[str, Mapping[str, Any]] = field(default_factory=dict, hash=False)

    def on(self, layout: str) -> "Capabilities":
        """The capabilities that hold on ``layout`` (``per_layout`` applied)."""
        changes = self.per_layout.get(layout)
        return dataclasses.replace(self, per_layout={}, **changes) if changes else self

    def no_kernel(self, layout: str) -> str | None:
        """Why there is no kernel for ``layout`` at all, or None when it is served."""
        if layout in self.layouts:
            return None
        return self.no_kernel_for.get(layout) or \
            f"{layout} layout (handles: {', '.join(sorted(self.layouts))})"

    def too_many_splits(self, num_splits) -> str | None:
        """Why a ``num_splits`` option beyond ``max_splits`` is refused (other values are the
        launcher's to check)."""
        if self.max_splits and isinstance(num_splits, int) and not isinstance(num_splits, bool) \
                and num_splits > self.max_splits:
            return f"num_splits={num_splits} (at most {self.max_splits}){f' ({self.note})' if self.note else ''}"
        return None

    def unsupported(self, p: DecodeProblem) -> str | None:
        """Why not ``p``: the layout first, then each axis of the problem in turn (AXIS_CHECKS),
        the first refusal with the declared note."""
        if why := self.no_kernel(p.layout):
            return why
        c = self.on(p.layout)
        for _, check in AXIS_CHECKS:
            if reason := check(c, p):
                return reason + (f" ({c.note})" if c.note else "")
        return None


def _query(c: Capabilities, p: DecodeProblem) -> str | None:
    if p.dtype not in c.dtypes:
        return f"dtype {p.dtype} (handles: {', '.join(sorted(c.dtypes))})"
    if c.head_dims is not None and p.head_dim not in c.head_dims:
        return f"head_dim {p.head_dim} (handles: {', '.join(map(str, sorted(c.head_dims)))})"
    if not c.min_head_dim <= p.head_dim <= c.max_head_dim or p.head_dim % c.head_dim_multiple:
        return (f"head_dim {p.head_dim} (handles multiples of {c.head_dim_multiple} from "
                f"{c.min_head_dim} to {c.max_head_dim})")
    if c.max_group_size and p.group_size > c.max_group_size:
        return f"GQA group of {p.group_size} query heads (at most {c.max_group_size})"
    if p.q_len > c.max_q_len:
        return f"q_len {p.q_len} query tokens per sequence (at most {c.max_q_len}" + \
            (f"; {c.q_note})" if c.q_note else ")")
    return None


def _cache(c: Capabilities, p: DecodeProblem) -> str | None:
    if p.layout == "paged" and p.page_size % c.page_size_multiple:
        return f"page_size {p.page_size} (needs a multiple of {c.page_size_multiple})"
    why = f"; {c.kv_note}" if c.kv_note else ""
    if p.cache.quantised and p.kv_dtype not in c.kv_dtypes:
        return f"kv_dtype {p.kv_dtype} (quantised caches it reads: " \
            f"{', '.join(sorted(c.kv_dtypes)) or 'none'}{why})"
    if p.cache.quantised and p.kv_scale not in c.kv_scales:
        return f"kv_scale {p.kv_scale} (scales it takes: {', '.join(sorted(c.kv_scales))}{why})"
    return None


def _lengths(c: Capabilities, p: DecodeProblem) -> str | None:
    if c.uniform_lengths_only and not p.uniform:
        return "ragged seq_lens (uniform lengths only)"
    if c.max_seq_len and p.max_seq_len > c.max_seq_len:
        return f"a sequence of {p.max_seq_len} tokens (at most {c.max_seq_len})"
    if c.max_batch and p.batch > c.max_batch:
        return f"a batch of {p.batch} sequences (at most {c.max_batch})"
    return None


def _mask(c: Capabilities, p: DecodeProblem) -> str | None:
    why = f"; {c.mask_note}" if c.mask_note else ""
    if p.window is not None and not c.windows:
        return f"a window (attends every token below the length only{why})"
    if p.softcap is not None and not c.softcaps:
        return f"soft-capped logits (takes the scaled scores as they are{why})"
    return None


# One check per part of the problem (specs.problem: Query, Cache, Mask, and the lengths), each
# reading the Capabilities fields of its axis: a new axis adds its fields and one entry here.
AXIS_CHECKS: tuple[tuple[str, Callable[[Capabilities, DecodeProblem], str | None]], ...] = (
    ("query", _query), ("cache", _cache), ("lengths", _lengths), ("mask", _mask))


@dataclass(frozen=True)
class ProblemLimit:
    """The largest problem a CPU mode (interpreter, simulator) runs in the suite's CI profile."""

    max_batch: int
    max_seq_len: int
    max_q_heads: int
    max_examples: int | None = None  # drawn examples a property at most (the pinned ones run too)


@dataclass(frozen=True)
class Backend:
    """A DSL or vendor library. ``mode()`` imports what it needs and returns the run mode
    ("gpu", or a CPU mode such as "interpreter"), or raises ``Unavailable`` with the reason."""

    name: str
    summary: str
    requires: tuple[str, ...]  # importable module names
    install: str = ""  # the command that installs what ``requires`` names (said where it is missing)
    cpu_mode: str | None = None  # how it runs without a GPU, if it can ("interpreter", ...)
    probe_module: str | None = None  # module with probe() -> None for extra checks
    vendor: bool = False  # a library's own kernels (the baselines), not a DSL written here
    compiles: str = ""  # when it compiles at run time: "" (never: prebuilt), or what and when
    packages: tuple[str, ...] = ()  # distributions whose versions the provenance records
    versions: Callable[[], dict[str, str]] | None = None  # versions that no distribution names
    jit_cache_env: tuple[str, ...] = ()  # variables naming its JIT disk caches (--fresh-caches)
    shown_config: tuple[str, ...] = ()  # Launch.config keys the result tables show
    cpu_limit: ProblemLimit | None = None  # a CPU mode slower than the suite's ci sizes allow
    read_probe: str | None = None  # module with read_probe(x) -> call reading x (bandwidth)
    # The launch knobs the ``config`` option sets and the tuner searches (impls.launch: one
    # vocabulary across DSLs, translated to the kernel's own names at ``Impl.prepare``).
    space: Space = Space()
    # Triton's CPU interpreter multiplies bf16 wrongly in tl.dot (triton-lang/triton#11584): an
    # interpreter backend runs bf16 there only if it declares that its kernels work around it.
    interpreter_bf16_ok: bool = False
    # The name of the Python environment its worker may run in, apart from the harness's own
    # (a DSL whose pins conflict with another backend's): see ``worker_env``.
    environment: str | None = None

    def mode(self) -> str:
        return _mode(self)

    def not_installed(self) -> str | None:
        """Why it cannot run here when the reason is its packages missing (``install`` says how);
        None when it runs, or cannot for another reason (no GPU, a broken install)."""
        try:
            self.mode()
        except Unavailable as e:
            return str(e) if "not installed" in str(e) else None
        return None

    def package_versions(self) -> dict[str, str]:
        """Versions of its ``packages`` (and ``versions()``) in the environment it runs in; none
        where its ``DECODE_BENCH_ENV_<NAME>`` names nothing (a run that selects it refuses that
        before it starts; one that does not goes on)."""
        try:
            env = worker_env(self)
        except ProblemError:
            return {}
        if env is not None:
            try:
                return _probe(self)["versions"]
            except Unavailable:
                return {}
        found = {p: v for p in self.packages if (v := _version(p))}
        try:
            found.update(self.versions() if self.versions else {})
        except ImportError:  # not installed here: nothing to record
            pass
        return found

    def mode_unsupported(self, problem: DecodeProblem) -> str | None:
        """Why this machine's run mode cannot judge ``problem`` (None: it can)."""
        if problem.dtype == "bfloat16" and self.cpu_mode == "interpreter" \
                and not self.interpreter_bf16_ok and self.mode() == "interpreter":
            return ("bfloat16 in the CPU interpreter, whose tl.dot multiplies bf16 wrongly "
                    "(upstream issue 11584); the backend declares no workaround "
                    "(Backend.interpreter_bf16_ok)")
        return None


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


ENV_PREFIX = "DECODE_BENCH_ENV_"  # DECODE_BENCH_ENV_<ENVIRONMENT>: where such a worker runs
IN_ENV = "DECODE_BENCH_IN_ENV"  # set in a worker's process: the environment it runs in
ROOT = Path(__file__).resolve().parent.parent
PROBE_TIMEOUT_S = 600  # importing a DSL the first time may compile or unpack a lot


@dataclass(frozen=True)
class WorkerEnv:
    """How to start a process in a backend's own environment: the interpreter and its
    environment variables."""

    python: str
    variables: Mapping[str, str] = field(hash=False)
    setting: str  # NAME=value, as the user set it (for messages)


def worker_env(backend: Backend) -> WorkerEnv | None:
    """The environment ``backend``'s worker runs in, or None for the harness's own (no
    ``environment`` declared, its variable unset, or this process already runs in it).

    ``DECODE_BENCH_ENV_<NAME>`` (NAME: the backend's ``environment``, upper case) names either a
    Python interpreter (a virtual environment's ``bin/python``), which then runs with this
    repository alone on its path, or a folder of packages (``pip install --target``), which goes
    first on this interpreter's path. The backend's packages then need not be installable beside
    the others' (TileLang pins an apache-tvm-ffi that FlashInfer and FA4 cannot use)."""
    if not backend.environment or os.environ.get(IN_ENV) == backend.environment:
        return None
    var = ENV_PREFIX + backend.environment.upper().replace("-", "_")
    value = os.environ.get(var)
    if not value:
        return None
    path = Path(value).expanduser()
    variables = {**os.environ, IN_ENV: backend.environment}
    if path.is_dir():
        python = sys.executable
        inherited = os.environ.get("PYTHONPATH", "")
        variables["PYTHONPATH"] = os.pathsep.join(filter(None, [str(path.resolve()), str(ROOT), inherited]))
    elif path.is_file() and os.access(path, os.X_OK):
        python = str(path)  # its own site-packages; the harness's extra paths stay out
        variables["PYTHONPATH"] = str(ROOT)
    else:
        raise ProblemError(f"{var}={value}: must be a Python interpreter or a folder of packages "
                           f"(the environment the {backend.name} worker runs in)")
    return WorkerEnv(python, variables, f"{var}={value}")


@cache
def _probe(backend: Backend) -> dict:
    """``backend``'s run mode and package versions, asked of its own environment (a process
    there runs ``python -m harness _probe``); ``Unavailable`` with that process's reason."""
    env = worker_env(backend)
    try:
        done = subprocess.run([env.python, "-m", "harness", "_probe", backend.name], cwd=ROOT,
                              env=dict(env.variables), capture_output=True, text=True,
                              timeout=PROBE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise Unavailable(f"{env.setting}: {type(e).__name__}: {e}") from None
    lines = done.stdout.strip().splitlines()
    try:
        answer = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        tail = " / ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
        raise Unavailable(f"{env.setting}: the probe failed (exit {done.returncode}): {tail}") from None
    if answer.get("unavailable"):
        raise Unavailable(f"{answer['unavailable']} (in {env.setting})")
    return answer


def probe_answer(name: str) -> dict:
    """What ``python -m harness _probe NAME`` prints, run in the backend's environment."""
    found = backend(name)
    try:
        mode = found.mode()
    except Unavailable as e:
        return {"unavailable": str(e)}
    return {"mode": mode, "versions": found.package_versions()}


@cache
def _mode(backend: Backend) -> str:
    try:
        env = worker_env(backend)
    except ProblemError as e:  # the CLI refuses it before a run; elsewhere it is the reason
        raise Unavailable(str(e)) from None
    if env is not None:
        return _probe(backend)["mode"]
    if not torch.cuda.is_available() and backend.cpu_mode is None:
        raise Unavailable("no CUDA GPU")
    for module in backend.requires:
        if importlib.util.find_spec(module.split(".")[0]) is None:
            how = f": {backend.install}" if backend.install else ""
            raise Unavailable(f"package {module.split('.')[0]!r} not installed{how}")
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
    """One backend's ``algorithm`` (``one-pass`` or ``split-k``) on the layouts of ``caps``."""

    backend: Backend
    algorithm: str
    module: str | None  # module holding prepare(); None when the backend lacks the algorithm
    caps: Capabilities | None = None
    lacks: str = ""  # module None: why the backend has no such algorithm
    options: tuple[str, ...] = ()  # launch options prepare() accepts
    summary: str = ""
    allocates_outputs: bool = False  # run() returns (out, lse) of its own (vendor libraries)
    # The kernel writes no LSE (many production kernels write only the output): the check and
    # every property compare ``out`` alone, and the tables show ``-`` for its LSE.
    returns_lse: bool = True
    entry: str = "prepare"  # name of the module's entry point

    @property
    def name(self) -> str:
        return f"{self.backend.name}/{self.algorithm}"

    def variant(self, layout: str) -> str:
        return variant_of(self.algorithm, layout)

    def variants(self) -> tuple[tuple[str, frozenset[str]], ...]:
        """The user-facing variants it serves, each with the layouts it covers: one-pass gives
        one per layout (``dense``, ``paged``), split-k one for all its layouts."""
        if self.algorithm == "one-pass":
            return tuple((lay, frozenset({lay})) for lay in sorted(self.layouts))
        return (("split-k", self.layouts),) if self.layouts else ()

    def row_name(self, layout: str) -> str:
        """What the results call this implementation on ``layout``: ``backend/variant``."""
        return f"{self.backend.name}/{self.variant(layout)}"

    @property
    def layouts(self) -> frozenset[str]:
        """The layouts it has a kernel for."""
        return self.caps.layouts if self.module else frozenset()

    def availability(self) -> str | None:
        """None when it can run here, else the reason."""
        try:
            self.backend.mode()
        except Unavailable as e:
            return str(e)
        return None

    def no_kernel(self, layout: str) -> str | None:
        """Why the backend has no kernel of this algorithm for ``layout`` at all, or None."""
        return self.lacks if self.module is None else self.caps.no_kernel(layout)

    def unsupported(self, problem: DecodeProblem) -> str | None:
        if self.module is None:
            return self.lacks
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
        space = self.backend.space
        if "config" in options:
            check_config(options["config"], self.backend)
            options = {**options, "config": space.to_kernel(options["config"])}
        if reason := self.caps.too_many_splits(options.get("num_splits")):
            raise Unsupported(reason)
        validate_inputs(inputs, out, lse)
        prepare = getattr(importlib.import_module(self.module), self.entry)
        launch = prepare(inputs, out, lse, **options)
        launch.config = space.from_kernel(launch.config)  # reported in the vocabulary
        return launch


def check_config(config, backend: Backend) -> None:
    """The ``config`` launch option: a mapping of the backend's knobs (``Backend.space``), or a
    ``ProblemError`` naming what is not (the values are the backend's to check)."""
    backend.space.check(config, backend.name)


PLUGINS_ENV = "DECODE_BENCH_PLUGINS"  # comma-separated modules with IMPLS, for out-of-tree backends


def check_declaration(impl: Impl) -> None:
    """A declaration the registry can serve, or a ``ProblemError`` saying what to change."""
    if impl.algorithm not in ALGORITHMS:
        hint = (f"; a {impl.algorithm} variant is the one-pass algorithm on that layout: "
                f"Impl(backend, 'one-pass', ..., Capabilities(layouts=...))"
                if impl.algorithm in LAYOUTS else "")
        raise ProblemError(f"{impl.name}: algorithm must be one of {ALGORITHMS}{hint}")
    if impl.module is not None:
        if not isinstance(impl.caps, Capabilities):
            raise ProblemError(f"{impl.name}: a module needs its Capabilities (caps=...)")
        bad = set(impl.caps.layouts) - set(LAYOUTS)
        if bad or not impl.caps.layouts or set(impl.caps.no_kernel_for) & set(impl.caps.layouts):
            raise ProblemError(f"{impl.name}: layouts {sorted(impl.caps.layouts)} must be a "
                               f"non-empty subset of {LAYOUTS}, no_kernel_for the others")
        fields = {f.name for f in dataclasses.fields(Capabilities)} - {"layouts", "per_layout"}
        for layout, changes in impl.caps.per_layout.items():
            if layout not in impl.caps.layouts or set(changes) - fields:
                raise ProblemError(f"{impl.name}: per_layout[{layout!r}] must name a served layout "
                                   f"and fields of Capabilities ({sorted(set(changes) - fields)})")
    elif not impl.lacks:
        raise ProblemError(f"{impl.name}: no module, so 'lacks' must say why")


def _discover() -> list[Impl]:
    import impls

    found: list[Impl] = []
    for info in sorted(pkgutil.iter_modules(impls.__path__), key=lambda m: m.name):
        if info.ispkg:
            found += importlib.import_module(f"impls.{info.name}").IMPLS
    for module in filter(None, os.environ.get(PLUGINS_ENV, "").split(",")):
        found += importlib.import_module(module.strip()).IMPLS
    seen = set()
    for impl in found:
        check_declaration(impl)
        if impl.name in seen:
            raise ProblemError(f"{impl.name} is declared twice (one Impl per backend and algorithm)")
        seen.add(impl.name)
    return found


@cache
def all_impls() -> tuple[Impl, ...]:
    """Every registered (backend, algorithm)."""
    return tuple(_discover())


def backends() -> list[Backend]:
    """Every registered backend, once each, in registry order."""
    return list(dict.fromkeys(i.backend for i in all_impls()))


def backend(name: str) -> Backend | None:
    """The registered backend of that name, or None."""
    return next((b for b in backends() if b.name == name), None)


DRIVER_CACHE = "CUDA_CACHE_PATH"  # the CUDA driver's PTX-to-SASS cache (kernels loaded as PTX)


def jit_cache_variables() -> list[str]:
    """The variables naming the JIT disk caches a run may meet: the driver's, and every
    backend's declared ``jit_cache_env``, once each."""
    return list(dict.fromkeys([DRIVER_CACHE] + [v for b in backends() for v in b.jit_cache_env]))


def select(backends=None, variants=None) -> list[Impl]:
    """Registered implementations of the named backends that can serve one of the named
    variants; unknown names are errors."""
    impls = list(all_impls())
    known_b = sorted({i.backend.name for i in impls})
    for name in backends or ():
        if name not in known_b:
            raise ProblemError(f"--backends: unknown backend {name!r}; known: {known_b}")
    for name in variants or ():
        if name not in VARIANTS:
            raise ProblemError(f"--variants: unknown variant {name!r}; known: {list(VARIANTS)}")
    return [i for i in impls if (not backends or i.backend.name in backends)
            and (not variants or any(v in variants for v, _ in i.variants()))]


def wanted(impl: Impl, layout: str, variants=None) -> bool:
    """Whether a run asked for ``variants`` (None: all) has a cell for ``impl`` on ``layout``."""
    return not variants or impl.variant(layout) in variants


def get(name: str) -> Impl:
    """An implementation by ``backend/algorithm`` or ``backend/variant`` (``triton/paged`` is
    Triton's one-pass implementation)."""
    backend, _, which = name.partition("/")
    algorithm = "one-pass" if which in LAYOUTS else which
    for impl in all_impls():
        if impl.backend.name == backend and impl.algorithm == algorithm:
            return impl
    served = {f"{i.backend.name}/{v}" for i in all_impls() for v, _ in i.variants()}
    raise ProblemError(f"no implementation {name!r}; known: {sorted(served)}")
