"""Held-out problems a launch rule gives a chosen configuration, picked on the CPU before a run
(the problem set of a registered A/B, drawn from seeds no run has used):

    PYTHONPATH=. python scripts/pick_problems.py OUT.json IMPL --seeds 560:640 --limit 12 \\
        --q-len 8 --where BLOCK_H=128 [--where num_warps=8 ...] [--fits MODULE:FUNCTION] \\
        [--min-programs 132] [--max-programs 131] [--layout dense] [--dtype float16] \\
        [--min-kv-mb 64] [--l2-mb 60] [--sms 132]

IMPL is a backend/variant as ``python -m harness list`` names it; its module's
``pick_launch_config(problem[, l2_bytes=...])`` (or, where the module does not import it, the
one of its backend's ``_common``, ``_build`` or ``_launch``) is the rule asked (a dataclass it
returns is read as a dict); ``--fits``: a predicate
``FUNCTION(problem, l2_bytes, sms)`` that must hold too (a rule of its own, such as
``impls.gluon._ws:fits``, the warp-specialized kernel's). Problems with an fp8
cache or a sequence under 8 tokens are passed over, and so are those the rule refuses;
``--min-programs``: sequences x KV heads at least this many (a grid that fills the SMs),
``--max-programs``: at most this many (split-K's case); ``--layout``: that cache layout only;
``--dtype``: that query (and cache) dtype only; ``--min-kv-mb``: K and V of at least this many MB
(past launch-bound sizes).
Prints
each pick (seed.index and label) and the count; writes the picks as a workload
file (``--workload-file``)."""
import argparse
import dataclasses
import importlib
import inspect
import json

import impls  # noqa: F401  (first: CPU modes before any DSL import)
from impls import registry
from specs import workloads
from specs.problem import DTYPES, ProblemError


def shared_rule(package: str):
    """A backend's ``pick_launch_config`` where a variant's module calls it through another
    module (Helion's ``_common``, CuPy's ``_build``, Numba's ``_launch``)."""
    for name in ("_common", "_build", "_launch"):
        try:
            return importlib.import_module(f"{package}.{name}").pick_launch_config
        except (ModuleNotFoundError, AttributeError):
            continue
    raise SystemExit(f"{package}: no pick_launch_config in _common, _build or _launch")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("impl")
    ap.add_argument("--seeds", required=True, help="FIRST:LAST, LAST excluded")
    ap.add_argument("--limit", type=int, default=12)
    ap.add_argument("--q-len", type=int, default=None)
    ap.add_argument("--where", action="append", default=[], help="KEY=VALUE of the rule's config")
    ap.add_argument("--min-programs", type=int, default=0)
    ap.add_argument("--max-programs", type=int, default=None)
    ap.add_argument("--l2-mb", type=int, default=60, help="the GPU's L2 (an H200's: 60)")
    ap.add_argument("--sms", type=int, default=132, help="the GPU's SMs (an H200's: 132)")
    ap.add_argument("--fits", default=None, help="MODULE:FUNCTION(problem, l2_bytes, sms)")
    ap.add_argument("--layout", choices=("dense", "paged"), default=None,
                    help="only problems of this cache layout")
    ap.add_argument("--dtype", choices=DTYPES, default=None,
                    help="only problems of this query and cache dtype")
    ap.add_argument("--min-kv-mb", type=float, default=0, help="only problems of K and V this big")
    args = ap.parse_args()
    variant = importlib.import_module(registry.get(args.impl).module)
    rule = getattr(variant, "pick_launch_config", None) or shared_rule(variant.__package__)
    # Triton's, Gluon's and CuPy's rules weigh the GPU's L2; the others do not ask for it
    rule_args = {"l2_bytes": args.l2_mb << 20} if "l2_bytes" in inspect.signature(rule).parameters else {}
    fits = lambda p, l2_bytes, sms: True  # noqa: E731  (no predicate asked: every problem)
    if args.fits:
        module, name = args.fits.split(":")
        fits = getattr(importlib.import_module(module), name)
    wanted = {key: json.loads(value) for key, value in (w.split("=", 1) for w in args.where)}
    first, last = (int(s) for s in args.seeds.split(":"))
    chosen = []
    for seed in range(first, last):
        for i, problem in enumerate(workloads.heldout_problems(seed)):
            if len(chosen) >= args.limit:
                break
            if min(problem.seq_lens) < 8 or problem.kv_dtype is not None or \
                    args.layout not in (None, problem.layout) or args.dtype not in (None, problem.dtype):
                continue
            p = workloads.with_q_len([problem], args.q_len)[0]
            programs = p.batch * p.num_kv_heads
            if p.kv_bytes < args.min_kv_mb * 2**20:
                continue
            if programs < args.min_programs or programs > (args.max_programs or programs):
                continue
            try:
                config = rule(p, **rule_args)
            except ProblemError:  # a problem the rule refuses
                continue
            if dataclasses.is_dataclass(config):
                config = dataclasses.asdict(config)
            if all(config.get(key) == value for key, value in wanted.items()) and \
                    fits(p, args.l2_mb << 20, args.sms):
                print(f"{seed}.{i} {p.label()[:70]}")
                chosen.append(p.to_dict())
    with open(args.out, "w") as f:
        json.dump(chosen, f)
    print(len(chosen))


if __name__ == "__main__":
    main()
