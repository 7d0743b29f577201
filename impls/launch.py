"""One launch vocabulary for every DSL backend: the knobs a launch configuration sets, named once.

A backend declares its search space as ``Space(Knob(...), ...)`` in its ``Backend`` (its own
folder's ``__init__.py``, no DSL imported). Every name is one of ``KNOBS``: ``block_n`` is the
K/V tile in Triton, Gluon, TileLang and Helion alike, ``num_stages`` the pipeline depth whether
the kernel calls it ``num_stages``, ``NUM_STAGES`` or ``STAGES``. The ``config`` launch option,
``Launch.config``, the sweep script, the tuner and its cache speak these names only; a knob's
``param`` is what the kernel itself calls it (a Triton constexpr, a ``-D`` macro), translated at
``Impl.prepare`` so kernel sources keep their DSL's idiom.

The values of a knob are its search space. A knob may apply to some variants or layouts only
(``merge`` to split-K, ``tma`` to dense tiles) or only where another knob has a value
(``when``: CuPy's ring depth only with its tensor-core loop); ``Space.configs`` crosses what
applies. Whether a crossed configuration fits the problem (shared memory, registers) stays the
backend's ``pick_launch_config``'s to say: it refuses with a ``ProblemError`` before any build.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Mapping

from specs.problem import ProblemError

# name -> what it sets, in every DSL that has it
KNOBS: dict[str, str] = {
    "block_n": "tokens per K/V tile (one step of the attention loop)",
    "block_h": "query heads per program (rows of the GQA group's tile)",
    "num_warps": "warps per program (CTA)",
    "num_stages": "K/V tiles in flight (software pipeline or cp.async ring depth)",
    "merge": "split-K: how a split sequence's partials merge, 'kernel' (a kernel of its own) or "
             "'fused' (the program finishing last merges)",
    "gather": "paged: a tile's K/V rows addressed per 'page' (one table entry per page) or per "
              "'token'",
    "tma": "dense tiles copied by TMA (1) or cp.async (0)",
    "tensor_cores": "the MMA loop (1) or the CUDA-core loop (0)",
    "items_first": "split-K grid order: work items on the fastest grid dimension (1) or KV heads (0)",
    "tpr": "threads per K/V row (CUDA-core loops)",
    "unroll": "K/V rows per thread in flight per loop step (CUDA-core loops)",
    "prefetch": "the next step's K/V rows loaded before this step's math (CUDA-core loops)",
    "min_blocks": "programs per SM the launch bounds ask the register allocator for (0: none)",
    "dim_split": "a head dim that is not a power of two in two tiles, the largest power of two "
                 "below it and the rest's (1), or in one padded to the next power of two (0)",
    "wgmma": "Hopper's warpgroup MMA, a warpgroup's 64 rows a product with operands in shared memory "
             "(1), or the per-warp mma.sync on 16-row tiles (0)",
    "warp_spec": "warp-specialized partitions, a loader warpgroup feeding consumer warpgroups through "
                 "mbarriers (1), or every warp loading and computing in turn (0)",
}


@dataclass(frozen=True)
class Knob:
    """One launch parameter: a ``KNOBS`` name, its search space, and where it applies."""

    name: str
    values: tuple
    param: str | None = None  # the kernel's own name for it, where that differs
    variants: tuple[str, ...] | None = None  # only these variants take it (None: every one)
    layouts: tuple[str, ...] | None = None  # only problems on these layouts
    when: Mapping[str, Any] = field(default_factory=dict, hash=False)  # only where these hold

    def __post_init__(self):
        if self.name not in KNOBS:
            raise ProblemError(f"Knob {self.name!r}: not in the launch vocabulary "
                               f"(impls.launch.KNOBS: {sorted(KNOBS)})")
        if not self.values:
            raise ProblemError(f"Knob {self.name!r}: an empty search space")

    @property
    def kernel_name(self) -> str:
        return self.param or self.name

    def applies(self, variant: str, layout: str) -> bool:
        return (self.variants is None or variant in self.variants) and \
            (self.layouts is None or layout in self.layouts)


@dataclass(frozen=True)
class Space:
    """A backend's launch knobs; ``configs`` is its search space on one problem."""

    knobs: tuple[Knob, ...] = ()

    def __init__(self, *knobs: Knob):
        names = [k.name for k in knobs]
        if len(set(names)) != len(names):
            raise ProblemError(f"Space: a knob named twice in {names}")
        object.__setattr__(self, "knobs", tuple(knobs))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(k.name for k in self.knobs)

    def check(self, config, backend: str) -> None:
        """A ``config`` option of this space's names, or a ``ProblemError`` naming the rule."""
        if not isinstance(config, dict):
            raise ProblemError(f"config={config!r}: must be a mapping of launch parameters")
        unknown = sorted(set(config) - set(self.names))
        if unknown:
            raise ProblemError(f"config: unknown key(s) {unknown} for {backend} "
                               f"(its knobs: {list(self.names)}; impls.launch.KNOBS)")

    def configs(self, variant: str, layout: str) -> list[dict]:
        """Every configuration of the knobs that apply to ``variant`` on ``layout``: the product
        of their values, a ``when`` knob crossed only where its condition holds."""
        knobs = [k for k in self.knobs if k.applies(variant, layout)]
        free = [k for k in knobs if not k.when]
        found = []
        for values in itertools.product(*(k.values for k in free)):
            base = dict(zip((k.name for k in free), values))
            bound = [k for k in knobs if k.when and
                     all(base.get(name) == value for name, value in k.when.items())]
            for extra in itertools.product(*(k.values for k in bound)):
                found.append({**base, **dict(zip((k.name for k in bound), extra))})
        return found

    def to_kernel(self, config: dict) -> dict:
        """A vocabulary ``config`` in the kernel's own names."""
        names = {k.name: k.kernel_name for k in self.knobs}
        return {names[key]: value for key, value in config.items()}

    def from_kernel(self, reported: dict) -> dict:
        """A ``Launch.config`` in the vocabulary: knobs by name, the rest (chunk, page_size,
        the kernel's other compile-time constants) in lower case."""
        names = {k.kernel_name: k.name for k in self.knobs}
        return {names.get(key, key.lower()): value for key, value in reported.items()}
