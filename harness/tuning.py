"""Tuning for every DSL backend, and the cache later runs read.

``--tune`` picks each cell's launch configuration by measurement: a backend with an autotuner
of its own (the ``tune`` launch option) runs it (its pick cached only where its knobs, replayed,
beat the rule: ``record``); any other backend with a declared search space
(``Backend.space``, impls.launch) is searched here from its rule's choice, one knob at a time
(``search``), every configuration checked against the reference first (a wrong one is never
chosen, one the problem cannot take is skipped) and timed with the harness's own cold-L2
protocol at ``quick`` size, so a configuration wins on what the tables will measure. The choice
is stored in a JSON cache under a key of

    (GPU, backend, variant, shape class)

the shape class being what a configuration depends on (layout, dtype, head dim, GQA group, KV
heads, page size, batch and longest length rounded up to powers of two, uniform or ragged), so
one tuned shape serves its neighbours. Each entry records the digest of the backend's kernel
sources (its folder and the shared launch code) and the GPU it was measured on; a later run
uses an entry only when both still match, else the backend's rule decides. Rows say where their
configuration came from (``config_source``: rule, cache, tuned or given) and ``tuning_s``.

The cache lives at ``DECODE_BENCH_TUNING_CACHE`` (default ``~/.cache/decode-bench/tuning.json``);
``--no-tuning-cache`` runs on the rules alone. Writers lock the file and replace it whole.
"""

from __future__ import annotations

import datetime
import fcntl
import hashlib
import importlib.util
import json
import os
import tempfile
import time
from functools import cache
from pathlib import Path
from typing import Callable, NamedTuple

import torch

from specs.problem import DecodeProblem, ProblemError

CACHE_ENV = "DECODE_BENCH_TUNING_CACHE"
DEFAULT_CACHE = Path("~/.cache/decode-bench/tuning.json")
SHARED_SOURCES = ("impls/plan.py", "impls/common.py", "impls/launch.py")
ROOT = Path(__file__).resolve().parent.parent


def cache_path() -> Path:
    return Path(os.environ.get(CACHE_ENV) or DEFAULT_CACHE).expanduser()


def _pow2(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


def shape_class(problem: DecodeProblem) -> str:
    """What a launch configuration depends on, coarse where it varies smoothly (batch, length)."""
    page = f"p{problem.page_size}" if problem.layout == "paged" else "dense"
    if problem.cache.quantised:
        page += f"/{problem.kv_dtype}/{problem.kv_scale}"
    lengths = "uniform" if problem.uniform else "ragged"
    # the query's tokens and the mask change which configurations apply (a fused merge refuses a
    # window or a draft; a draft's rows change the tile): each keys its own entries
    mask = "".join(f"/{w}" for w in (f"q{problem.q_len}" if problem.q_len > 1 else "",
                                      "win" if problem.window is not None else "",
                                      "cap" if problem.softcap is not None else "") if w)
    return (f"{problem.layout}/{problem.dtype}/d{problem.head_dim}/g{problem.group_size}/"
            f"kv{problem.num_kv_heads}/{page}/b{_pow2(problem.batch)}/"
            f"L{_pow2(problem.max_seq_len)}/{lengths}{mask}")


def gpu_name(device: torch.device) -> str:
    if device.type != "cuda":
        return "cpu"
    props = torch.cuda.get_device_properties(device)
    return f"{props.name} ({props.multi_processor_count} SMs)"


def key(gpu: str, backend: str, variant: str, problem: DecodeProblem) -> str:
    return f"{gpu} | {backend} | {variant} | {shape_class(problem)}"


@cache
def source_digest(impl_module: str) -> str:
    """SHA-256 of the backend's kernel sources: every file of its folder, and the launch code
    all backends share (a change to either makes its cache entries stale)."""
    spec = importlib.util.find_spec(impl_module)
    folder = Path(spec.origin).parent
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in
                   (".py", ".cu", ".cuh") and "__pycache__" not in p.parts)
    files += [ROOT / f for f in SHARED_SOURCES]
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def load(path: Path | None = None) -> dict:
    path = path or cache_path()
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, json.JSONDecodeError) as e:
        raise ProblemError(f"{CACHE_ENV}={path}: not a tuning cache ({e}); move it aside") from None


def lookup(entries: dict, impl, variant: str, problem: DecodeProblem, gpu: str) -> dict | None:
    """The cached entry for this cell, or None when there is none or it is stale (the kernel
    sources or the GPU changed since it was tuned)."""
    entry = entries.get(key(gpu, impl.backend.name, variant, problem))
    if not entry or entry.get("gpu") != gpu or entry.get("source") != source_digest(impl.module):
        return None
    return entry


def store(impl, variant: str, problem: DecodeProblem, gpu: str, config: dict, median_us,
          tuning_s: float, tried: int, path: Path | None = None, rule_us: float | None = None) -> None:
    """Add (or replace) one entry, under a lock, the file replaced whole (no reader sees half);
    ``rule_us``: the rule's configuration timed the same way, where the search timed it."""
    path = path or cache_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    entry = {"config": config, "gpu": gpu, "source": source_digest(impl.module),
             "median_us": median_us, "rule_us": rule_us, "tuned_on": problem.label(),
             "tuning_s": round(tuning_s, 2), "tried": tried,
             "date": datetime.datetime.now(datetime.timezone.utc).isoformat()}
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        entries = load(path)
        entries[key(gpu, impl.backend.name, variant, problem)] = entry
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tuning-")
        with os.fdopen(fd, "w") as f:
            json.dump(entries, f, indent=1, sort_keys=True)
        os.replace(tmp, path)


def in_space(impl, config: dict) -> dict:
    """The part of a launch's reported config that the backend's knobs set."""
    return {k: v for k, v in config.items() if k in impl.backend.space.names}


# A neighbour replaces the current configuration only when faster by more than this share: the
# quick cold-L2 medians scatter by about 1 %, and a move on noise costs another round of builds.
MIN_GAIN = 0.02


def neighbours(space, config: dict, candidates: list[dict]) -> list[dict]:
    """The configurations of ``candidates`` one free knob away from ``config`` (the knobs bound to
    a value of another by ``when`` go along with it)."""
    free = [k.name for k in space.knobs if not k.when]
    return [c for c in candidates if c != config and
            sum(c.get(name) != config.get(name) for name in free) <= 1]


def nearest(config: dict, candidates: list[dict]) -> dict:
    """The candidate sharing most knob values with ``config`` (the first such)."""
    return max(candidates, key=lambda c: sum(config.get(k) == v for k, v in c.items()))


class Search(NamedTuple):
    """What ``search`` found: the best configuration and its median (us), how many it timed,
    the rule's own median (None where the rule's configuration did not run correctly), and each
    configuration timed with its median (None: wrong or could not run), in the order timed, the
    rule's first where it ran (a rule that failed has no knobs to list, so ``tried`` counts one
    more): the landscape around the rule, which says which knob the rule gets wrong and by how
    much."""
    best: dict | None
    best_us: float | None
    tried: int
    rule_us: float | None
    trace: list


def search(impl, variant: str, layout: str, measure: Callable[[dict | None], tuple | None]) -> Search:
    """A steepest-descent search of the backend's space on this cell, from its rule's choice:
    ``measure(config)`` gives (median in us, the launch's knobs) for a configuration (None: the
    rule's own), or None where it is wrong or cannot run. Each round times the neighbours of the
    best so far (one knob changed) and moves to the fastest if it gains more than MIN_GAIN; it
    stops where none does, or after as many moves as the space has free knobs (enough to reach,
    one knob a move, an optimum that differs from the rule's in every knob). A rule that already
    sits in the best basin costs one round (the space's knob count, not its product); the rule's
    own configuration stays a candidate, so a tuned cell is never slower than the rule by more
    than the timing's noise."""
    space = impl.backend.space
    candidates = space.configs(variant, layout)
    timed: dict[str, float | None] = {}
    trace: list[tuple[dict, float | None]] = []

    def time_of(config: dict | None) -> float | None:
        key = json.dumps(config, sort_keys=True)
        if key not in timed:
            found = measure(config)
            timed[key] = found[0] if found else None
            trace.append((config, timed[key]))
        return timed[key]

    rule = measure(None)
    best, best_us = (rule[1], rule[0]) if rule else (None, None)
    if rule:  # the rule's knobs are usually a candidate: not timed a second time
        timed[json.dumps(rule[1], sort_keys=True)] = rule[0]
        trace.append((rule[1], rule[0]))
    current = nearest(rule[1], candidates) if rule else candidates[0]
    current_us = time_of(current)
    for _ in range(sum(not k.when for k in space.knobs)):
        around = [(us, c) for c in neighbours(space, current, candidates)
                  if (us := time_of(c)) is not None]
        if not around:
            break
        us, config = min(around, key=lambda t: t[0])
        if current_us is not None and us >= current_us * (1 - MIN_GAIN):
            break
        current, current_us = config, us
    if current_us is not None and (best_us is None or current_us < best_us):
        best, best_us = current, current_us
    # the rule's failed call is not in ``timed``
    return Search(best, best_us, len(timed) + (not rule), rule[0] if rule else None, trace)


def choose(impl, problem: DecodeProblem, options: dict, tune: bool, use_cache: bool,
           device: torch.device, measure: Callable[[dict | None], tuple | None]) -> tuple[dict, dict]:
    """The launch options of one cell and the row fields saying where its config came from:
    the user's ``config`` (given); ``tune``: the backend's own autotuner where it has one
    (recorded after the check by ``record``), else ``search``; else a valid cache entry; else
    the backend's rule."""
    variant = impl.variant(problem.layout)
    if "config" in options or not impl.backend.space.knobs or "config" not in impl.options:
        return options, {"config_source": "given" if "config" in options else "rule"}
    gpu = gpu_name(device)
    if tune and "tune" not in impl.options:
        start = time.perf_counter()
        found = search(impl, variant, problem.layout, measure)
        seconds = time.perf_counter() - start
        if found.best is None:
            return options, {"config_source": "rule", "tuning_s": round(seconds, 2),
                             "tuning_note": f"no configuration of {found.tried} ran correctly"}
        store(impl, variant, problem, gpu, found.best, found.best_us, seconds, found.tried,
              rule_us=found.rule_us)
        return {**options, "config": found.best}, {
            "config_source": "tuned", "tuning_s": round(seconds, 2), "tuned_configs": found.tried,
            "tuning_rule_us": _round(found.rule_us), "tuning_best_us": _round(found.best_us),
            "tuning_trace": [[config, _round(us)] for config, us in found.trace]}
    if tune:
        return options, {"config_source": "tuned"}  # the backend's autotuner; ``record`` stores
    if use_cache:
        try:
            entry = lookup(load(), impl, variant, problem, gpu)
        except ProblemError as e:
            return options, {"config_source": "rule", "tuning_note": str(e)}
        if entry:
            return {**options, "config": entry["config"]}, {"config_source": "cache",
                                                            "tuned_on": entry["tuned_on"]}
    return options, {"config_source": "rule"}


def _round(us: float | None) -> float | None:
    return None if us is None else round(us, 2)


def record(impl, problem: DecodeProblem, device: torch.device, launch_config: dict,
           tuning_s: float, measure: Callable[[dict | None], tuple | None]) -> dict:
    """Store what a backend's own autotuner chose, as a later run will replay it: the knobs of
    its launch (``in_space``), which set less than the tuner did and so may build another,
    slower kernel. ``measure`` (as in ``search``) times that replay and the rule's configuration;
    the faster is stored, a replay that loses keeps the rule's. The row's fields that say so
    (``tuning_note``), or none."""
    replay = in_space(impl, launch_config)
    if not replay:  # no knobs reported: nothing a later run could replay
        return {}
    start = time.perf_counter()
    replayed, rule = measure(replay), measure(None)
    seconds = tuning_s + time.perf_counter() - start
    pick = f"the autotuner's pick, replayed from its knobs {replay},"
    if replayed is None and rule is None:
        return {"tuning_note": f"neither {pick} nor the rule's configuration ran correctly: "
                               "nothing cached"}
    variant, gpu = impl.variant(problem.layout), gpu_name(device)
    if rule is not None and (replayed is None or rule[0] < replayed[0]):
        how = (f"measured {replayed[0]:.1f} us against the rule's {rule[0]:.1f} us" if replayed
               else f"did not run correctly (the rule's: {rule[0]:.1f} us)")
        store(impl, variant, problem, gpu, rule[1], rule[0], seconds, 2, rule_us=rule[0])
        return {"tuning_note": f"{pick} {how}, so the cache keeps the rule's"}
    store(impl, variant, problem, gpu, replay, replayed[0], seconds, 2,
          rule_us=rule[0] if rule else None)
    return {}
