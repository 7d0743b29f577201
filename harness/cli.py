"""``python -m harness``: run (conformance, then timing), list (capability matrix), report
(tables and plots of a saved run), compare (two saved runs, regressions beyond the noise),
replay (saved cases re-checked without the implementations)."""

from __future__ import annotations

import argparse
import atexit
import datetime
import json
import os
import shutil
import signal
import sys
import time
import tempfile
import textwrap
from contextlib import contextmanager
from pathlib import Path

import torch

from harness import executors, html, provenance, results, scorecard
from harness.progress import Progress
from harness.runner import RunSpec, worker_main
from harness.timing import MODES
from impls import common, registry
from specs import workloads
from specs.problem import DTYPE_SHORT, LAYOUTS, DecodeProblem, ProblemError


UNAVAILABLE_EXIT = 3  # a backend asked for by name cannot run on this machine
# Signals that end a run as Ctrl-C does (exit 128 + the signal: 130, 143): SIGTERM is what
# timeout, Slurm and Ray send to stop a job
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Stopped(KeyboardInterrupt):
    """A run ended by one of STOP_SIGNALS (a KeyboardInterrupt, so every cleanup Ctrl-C runs
    runs: workers killed, rows kept, tables written)."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextmanager
def stopped_by_signals():
    """While the block runs, SIGINT and SIGTERM raise ``Stopped`` in the main thread, whatever
    the process inherited (a job started in a script's background has SIGINT ignored); the
    handlers it had come back after."""
    def stop(signum, frame):
        raise Stopped(signum)

    previous = {s: signal.signal(s, stop) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
MAX_SEED = 2**62  # input sets draw with seed + j * runner.SET_SEED_STRIDE: kept below 2^63


def _csv(value: str) -> list[str]:
    names = [v.strip() for v in value.split(",") if v.strip()]
    if not names:
        raise argparse.ArgumentTypeError("empty: name at least one, or leave the option out")
    return names


def _json_object(value: str) -> dict:
    try:
        data = json.loads(value)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"not JSON ({e})") from None
    if not isinstance(data, dict):
        raise argparse.ArgumentTypeError("must be a JSON object of launch parameters")
    return data


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m harness", description=__doc__)
    sub = parser.add_subparsers(dest="command", metavar="{run,list,report,compare,replay,profile}")
    run = sub.add_parser("run", help="conformance check, then timing, of every backend's variants "
                                     "on every problem (default on a CPU: the small 'cpu' "
                                     "workload; on a GPU: 'grid' and 'ragged')")
    run.add_argument("--backends", type=_csv, help="comma-separated backend names (default: all)")
    run.add_argument("--variants", type=_csv, help="comma-separated: dense, paged, split-k")
    run.add_argument("--workloads", type=_csv,
                     help="comma-separated named workloads: " + ", ".join(
                         f"{n} ({d})" for n, (d, _) in workloads.WORKLOADS.items()))
    run.add_argument("--workload-file", type=Path, help="JSON list of problems (see README)")
    run.add_argument("--problem", action="append", default=[], metavar="JSON",
                     help="one problem as JSON fields (repeatable); replaces the default workloads")
    run.add_argument("--dtype", help="override every problem's dtype: float16, bfloat16, float32")
    run.add_argument("--kv-dtype", help="store every problem's KV cache as float8_e4m3fn or "
                                        "float8_e5m2 (float32 scales), or 'none' (the query's dtype)")
    run.add_argument("--kv-scale", choices=("tensor", "head"),
                     help="an fp8 cache's scales: one per tensor (default) or one per KV head")
    run.add_argument("--q-len", type=int, help="N query tokens a sequence in every problem, causal "
                                               "among themselves (speculative decoding's "
                                               "verification; default: each problem's, 1)")
    run.add_argument("--window", type=int, help="attend only each sequence's last N tokens (a left "
                                                "window) in every problem")
    run.add_argument("--softcap", type=float, help="soft-cap every problem's logits at C: "
                                                   "C * tanh(score / C)")
    run.add_argument("--quick", action="store_true", help="smaller grid, fewer repetitions")
    run.add_argument("--seed", type=int, default=0, help="input seed (default 0)")
    run.add_argument("--num-splits", type=int, help="force split-k's split count")
    run.add_argument("--config", type=_json_object, metavar="JSON",
                     help="launch-config overrides for the backends that take them (tuning), "
                          "e.g. '{\"block_n\": 64}' (impls/launch.py); a key a backend does not "
                          "know is an error")
    run.add_argument("--tune", action="store_true",
                     help="tune every problem's launch config before its check: the backend's own "
                          "autotuner where it has one, else a checked, timed search of its "
                          "declared space; the choice goes to the tuning cache, the rows report "
                          "the tuning time apart from the first call's")
    run.add_argument("--no-tuning-cache", action="store_true",
                     help="ignore the tuning cache (DECODE_BENCH_TUNING_CACHE, default "
                          "~/.cache/decode-bench/tuning.json): every config by the backend's rule")
    run.add_argument("--no-timing", action="store_true", help="conformance check only")
    run.add_argument("--timing", type=_csv, default=list(MODES), metavar="MODES",
                     help="timing modes on a GPU, comma-separated (default: all): cold (events, "
                          "cold L2; the primary figure), graph (CUDA-graph replay), wall (host "
                          "wall-clock + sync), launch (host dispatch + launch overhead)")
    run.add_argument("--out", type=Path, help="output folder (default runs/<UTC time>)")
    run.add_argument("--save-cases", type=Path, metavar="DIR",
                     help="save every problem's inputs (once) and each implementation's out/lse "
                          "under DIR, for 'python -m harness replay DIR'")
    run.add_argument("--fresh-caches", action="store_true",
                     help="start every JIT disk cache the backends declare empty, so each "
                          "configuration's first call includes its compilation")
    run.add_argument("--allow-unavailable", action="store_true",
                     help="a backend named in --backends that cannot run here is reported "
                          "UNAVAILABLE instead of stopping the run (exit 3)")
    run.add_argument("--overwrite", action="store_true",
                     help="replace the run already in --out (its rows, tables and plots)")
    run.add_argument("--gpus", type=int, default=None, metavar="N",
                     help="run on N GPUs at once through Ray (a local Ray on this machine, or the "
                          "cluster of --ray-address): problems sharded over the GPUs, each "
                          "problem's rows measured on one of them (needs .[ray])")
    run.add_argument("--ray-address", default=None, metavar="ADDR",
                     help="join the Ray cluster at ADDR and use its GPUs (all of them, or --gpus "
                          "N), across machines; the nodes run this checkout from the same path")
    run.add_argument("--no-isolate", action="store_true",
                     help="run backends in this process (debugging; a crash ends the run)")
    sub.add_parser("list", help="capability matrix: backend x algorithm, the variant on each "
                                "layout, available or why not")
    rep = sub.add_parser("report", help="tables and PNG plots of a saved run")
    rep.add_argument("results", type=Path, help="a run folder or its results.json")
    rep.add_argument("--out", type=Path, help="where to write (default: the run's folder)")
    rep.add_argument("--no-plots", action="store_true", help="tables only (no matplotlib needed)")
    rep.add_argument("--html", action="store_true",
                     help="also report.html: one self-contained page (a run writes it too)")
    cmp = sub.add_parser("compare", help="per-row changes between two saved runs; exit 1 on a "
                                         "regression beyond the noise")
    cmp.add_argument("old", type=Path)
    cmp.add_argument("new", type=Path)
    cmp.add_argument("--threshold", type=float, default=0.02,
                     help="relative change that counts, with the 95%% intervals apart (default 0.02)")
    cmp.add_argument("--any-gpu", action="store_true", help="compare runs of different devices")
    cmp.add_argument("--html", type=Path, metavar="FILE", help="also write the comparison as a page")
    cmp.add_argument("--again", type=Path, nargs=2, metavar=("OLD", "NEW"),
                     help="a second pair of runs of the same code, measured in the other order "
                          "(new first): a row moves only where both pairs say so, so a drift "
                          "between consecutive runs cannot pass for a change")
    rpl = sub.add_parser("replay", help="re-check the cases saved by 'run --save-cases DIR' against "
                                        "a fresh float64 reference, without the implementations; "
                                        "exit 1 when a verdict differs from the run's")
    rpl.add_argument("cases", type=Path, help="the folder given to --save-cases")
    prof = sub.add_parser("profile", help="one implementation on one problem for a profiler: "
                                          "Nsight Compute's sections (--ncu), else its config and "
                                          "the time of a call")
    prof.add_argument("impl", help="backend/variant, as python -m harness list names them")
    prof.add_argument("--problem", required=True, metavar="JSON", help="the problem's fields")
    prof.add_argument("--config", type=_json_object, metavar="JSON", help="launch-config overrides")
    prof.add_argument("--num-splits", type=int, default=None, metavar="N")
    prof.add_argument("--seed", type=int, default=0)
    prof.add_argument("--calls", type=int, default=3, metavar="N", help="calls profiled (default 3)")
    prof.add_argument("--ncu", action="store_true", help="under Nsight Compute (ncu on PATH, a GPU)")
    prof.add_argument("--sections", type=_csv, metavar="A,B", help="ncu sections (default: "
                      "SpeedOfLight, Occupancy, LaunchStats, MemoryWorkloadAnalysis, WarpStateStats)")
    prof.add_argument("--metrics", type=_csv, metavar="A,B", default=[],
                      help="ncu metrics beside the sections, e.g. dram__bytes_read.sum: the raw "
                           "counters a section leaves out (bytes read and written per level)")
    prof.add_argument("--under-ncu", action="store_true", help=argparse.SUPPRESS)
    ins = sub.add_parser("install", help="install the packages of the backends missing here, "
                                         "each by the command it declares, where a package index "
                                         "is reached (scripts/run.sh does, on a GPU machine)")
    ins.add_argument("--dry-run", action="store_true", help="print the commands, run none")
    worker = sub.add_parser("_worker")  # no help=: not listed (the harness's own worker)
    worker.add_argument("spec_path")
    probe = sub.add_parser("_probe")  # a backend's mode and versions, in its own environment
    probe.add_argument("backend")
    return parser


def resolve_problems(args) -> tuple[list[DecodeProblem], dict[DecodeProblem, str]]:
    """The run's problems, in order, each once, and the workloads each came from (a workload's
    name, the workload file's, or --problem; several, comma-separated, where they share one)."""
    sources: list[tuple[str, list[DecodeProblem]]] = []
    for name in args.workloads or ():
        sources.append((name, workloads.named([name], args.quick)))
    if args.workload_file:
        sources.append((f"file:{Path(args.workload_file).stem}", workloads.load_file(args.workload_file)))
    for i, text in enumerate(args.problem):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ProblemError(f"--problem #{i + 1}: not JSON ({e})") from None
        sources.append(("--problem", [DecodeProblem.from_dict(data, where=f"--problem #{i + 1}")]))
    if not sources:
        default = workloads.DEFAULT_GPU if torch.cuda.is_available() else workloads.DEFAULT_CPU
        sources = [(name, workloads.named([name], args.quick)) for name in default]
    origin: dict[DecodeProblem, list[str]] = {}
    for name, problems in sources:
        problems = workloads.with_kv_dtype(workloads.with_dtype(problems, args.dtype), args.kv_dtype,
                                           args.kv_scale)
        problems = workloads.with_mask(problems, args.window, args.softcap)
        # a problem two workloads share (batch 1 at 4k is in grid and sched) runs once
        for p in workloads.with_q_len(problems, args.q_len):
            origin.setdefault(p, []).append(name)
    return list(origin), {p: ",".join(dict.fromkeys(names)) for p, names in origin.items()}


def cmd_run(args, argv) -> int:
    problems, origin = resolve_problems(args)
    impls = registry.select(args.backends, args.variants)
    if unknown := sorted(set(args.timing) - set(MODES)) or (not args.timing and ["(none)"]):
        raise ProblemError(f"--timing: unknown mode(s) {unknown}; known: {list(MODES)}")
    if args.num_splits is not None:
        common.check_num_splits(args.num_splits)  # the launchers' rule, before anything runs
    if not 0 <= args.seed < MAX_SEED:
        raise ProblemError(f"--seed={args.seed}: must be in [0, 2**62)")
    if args.config is not None:
        _check_config(args.config, impls)
    for backend in dict.fromkeys(i.backend for i in impls):
        registry.worker_env(backend)  # a DECODE_BENCH_ENV_<NAME> that names nothing: an error now
    # on a cluster the nodes say what they have (UNAVAILABLE rows): this machine may have no GPU
    if args.backends and not args.allow_unavailable and not args.ray_address:  # asked for by name
        missing = {i.backend.name: why for i in impls if (why := i.availability())}
        if missing:
            print("error: --backends: " + "; ".join(f"{b} is unavailable here ({why})"
                                                    for b, why in missing.items())
                  + " (--allow-unavailable reports it and goes on)", file=sys.stderr)
            return UNAVAILABLE_EXIT
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out_dir = args.out or Path("runs") / stamp
    _check_folder(out_dir, "--out")
    on_ray = args.gpus is not None or args.ray_address
    # refused here, before any work, if it cannot be
    if on_ray and args.no_isolate:  # a shard's backends run in worker processes
        raise ProblemError("--no-isolate: not with --gpus or --ray-address (a local run only)")
    if args.fresh_caches and args.ray_address:  # other nodes have their own caches
        raise ProblemError("--fresh-caches: not with --ray-address (the cache folders are "
                           "this machine's; --gpus on one machine takes it)")
    # before any worker or Ray starts: they inherit the environment
    caches = _fresh_caches() if args.fresh_caches else CONFIGURED_CACHES
    executor = executors.ray_executor(args.gpus, args.ray_address) if on_ray else \
        executors.LocalExecutor(isolate=not args.no_isolate)
    try:
        return _run(args, argv, problems, origin, impls, out_dir, executor, caches)
    finally:
        executor.close()


def _run(args, argv, problems, origin, impls, out_dir, executor, caches: str) -> int:
    if args.save_cases:
        _check_folder(args.save_cases, "--save-cases")
    leftovers = _run_files(out_dir)
    if leftovers and not args.overwrite:
        raise ProblemError(f"--out {out_dir}: holds a run already ({', '.join(sorted(p.name for p in leftovers)[:4])}"
                           "...); name another folder, or add --overwrite to replace it")
    for path in leftovers:
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    out_dir.mkdir(parents=True, exist_ok=True)
    rows_path = (out_dir / "rows.jsonl").resolve()  # workers may start elsewhere (their env)

    prov = provenance.collect(argv)
    prov["compile_caches"] = caches
    prov.update(executor.describe(),
                **executor.device_fields(problems, not args.no_timing, args.seed))
    if not torch.cuda.is_available() and isinstance(executor, executors.LocalExecutor):
        print(_cpu_notice(impls))
    elif torch.cuda.is_available() and (note := _missing_notice(impls)):
        print(note)
    results.write_whole(out_dir / "provenance.json", json.dumps(prov, indent=1))
    print("\n".join(results.provenance_lines(prov)))

    options = {k: v for k, v in (("num_splits", args.num_splits), ("config", args.config),
                                 ("tune", args.tune)) if v}
    all_cells = [(p_index, impl.name) for p_index, p in enumerate(problems) for impl in impls
                 if registry.wanted(impl, p.layout, args.variants)]
    if note := _cellless_notice(problems, all_cells, args.variants):
        print(note)
    spec = RunSpec([p.to_dict() for p in problems], [], args.seed, options, not args.no_timing,
                   args.quick, str(rows_path), str(args.save_cases.resolve()) if args.save_cases else None,
                   tuple(args.timing), tuning_cache=not args.no_tuning_cache)
    # the order the user named them in (a plugin named first is not the first cut by a time
    # limit; on several GPUs, the first GPU's order), else alphabetical
    order = {name: n for n, name in enumerate(args.backends or ())}
    # timing on one GPU: two problems measured twice, the run's repeatability (ranks, ties; over
    # several, the spread is measured whatever this says and is the repeatability, except with
    # --tune: plan() then measures each problem once, as a copy would rerun its search);
    # not in --quick runs, nor with --tune (a second search would be tuning, not remeasuring)
    remeasure = spec.timing and (torch.cuda.is_available() or executor.slots > 1) and not args.quick \
        and not args.tune
    plan = executors.plan(spec, problems, all_cells, order, executor.slots, remeasure)
    total = plan.total()
    where = f" on {executor.slots} GPUs" if executor.slots > 1 else ""
    print(f"{len(problems)} problem(s), {total} cell(s){where}; rows -> {rows_path}")
    prov["workloads_of"] = results.workloads_of((p.label(), origin[p]) for p in problems)
    prov["cells_total"] = total  # a run is complete when it has them all (report, compare)
    prov["cells_base"] = len(all_cells)  # cells past these measure a problem again (spread, repeatability)
    prov["code"] = scorecard.code_facts(dict.fromkeys(i.backend.name for i in impls))  # as it ran
    results.write_whole(out_dir / "provenance.json", json.dumps(prov, indent=1))
    progress = Progress(total, rows_path)
    stopped_by = began = None
    try:
        with stopped_by_signals():
            executor.start(plan, prov)  # what precedes the cells: a Ray run's GPUs measure themselves
            began = time.monotonic()
            executor.run(plan, prov, out_dir, progress)
        prov["complete"] = True
    except KeyboardInterrupt as e:  # Ctrl-C, SIGTERM (Stopped), or Python's own SIGINT
        prov["complete"] = False
        stopped_by = getattr(e, "signum", signal.SIGINT)
    finally:
        progress.close()
        # the cells' wall time, workers' start-up and compiles included: what --gpus N shortens
        prov["wall_s"] = round(time.monotonic() - began, 1) if began is not None else 0.0

    # the provenance as the run ended (complete, wall time, a Ray run's GPUs), for a reader of
    # rows.jsonl + provenance.json as for one of results.json
    results.write_whole(out_dir / "provenance.json", json.dumps(prov, indent=1))
    rows = results.read_rows(rows_path)
    results.tag_workloads(prov, rows)
    if executor.slots > 1:  # the tables in cell order, not in the order rows arrived
        rows.sort(key=lambda r: r["cell"])
    results.annotate(rows)
    results.write_all(out_dir, prov, rows)
    html.write(out_dir, prov, rows)
    print(results.render_text(prov, rows))
    print(f"\n{_save_note(rows)}{results.summary_counts(rows)}. Files: {out_dir}/results.{{md,csv,json}}")
    if not prov["complete"]:
        print(f"interrupted ({signal.Signals(stopped_by).name}): "
              f"{results.incomplete(prov, rows)}", file=sys.stderr)
        return 128 + stopped_by
    return 1 if any(r["status"] in ("FAIL", "ERROR") for r in rows) else 0


RUN_FILES = ("rows.jsonl", "provenance.json", "results.json", "results.csv", "results.md", "report.html",
             "plots")


def _run_files(folder: Path) -> list[Path]:
    """What an earlier run left in ``folder`` (its rows, tables, plots, worker files)."""
    if not folder.is_dir():
        return []
    return [p for p in folder.iterdir() if p.name in RUN_FILES or p.name.startswith(".worker-")]


def _check_folder(path: Path, option: str) -> None:
    """``path`` can be made a folder and written (ProblemError naming ``option`` if not),
    checked before anything runs or is written."""
    if path.exists() and not path.is_dir():
        raise ProblemError(f"{option} {path}: exists and is not a folder")
    parent = path
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise ProblemError(f"{option} {path}: {parent} is a file, not a folder")
    try:  # a real write: os.access says yes to root on a read-only mount
        tempfile.TemporaryFile(dir=parent).close()
    except OSError as e:
        raise ProblemError(f"{option} {path}: cannot write in {parent} ({e.strerror})") from None


def cmd_replay(folder: Path) -> int:
    from harness import cases

    found, disagree, refused = cases.replay(folder)
    ratio = lambda x: "-" if x is None else f"{x:.2f}"  # noqa: E731
    print(results.columns(("problem", "implementation", "run", "replay", "out err/tol", "lse err/tol"),
                          [(f["problem"], f["impl"], f["run"], f["replay"], ratio(f["out_err_ratio"]),
                            ratio(f["lse_err_ratio"])) for f in found]))
    print(f"\n{len(found)} saved output(s); {disagree} verdict(s) differ from the run's")
    for reason in refused:
        print(f"refused: {reason}", file=sys.stderr)
    if refused:
        print(f"{len(refused)} saved case(s) refused (above); exit code 4", file=sys.stderr)
    return 1 if disagree else 4 if refused else 0


def _save_note(rows: list[dict]) -> str:
    saved = [r for r in rows if "saved_bytes" in r]
    if not saved:
        return ""
    total, seconds = sum(r["saved_bytes"] for r in saved), sum(r["save_s"] for r in saved)
    return (f"Saved cases: {total / 1e6:.1f} MB in {seconds:.1f} s "
            f"({total / 1e6 / max(seconds, 1e-9):.0f} MB/s, device-to-host copies included)\n")


def _check_config(config: dict, impls) -> None:
    """--config goes to every selected backend that takes a launch config: each must know
    every key (checked before anything runs)."""
    takers = {i.backend.name: i.backend for i in impls if "config" in i.options}
    if not takers:
        raise ProblemError("--config: none of the selected backends takes a launch config")
    for backend in takers.values():
        try:
            registry.check_config(config, backend)
        except ProblemError as e:
            raise ProblemError(f"--{e} (select the backends it applies to with --backends)") from None


def _cpu_notice(impls) -> str:
    modes = sorted({f"{i.backend.name} runs in its CPU {i.backend.cpu_mode}" for i in impls
                    if i.backend.cpu_mode})
    return (f"No CUDA GPU: {', '.join(modes) or 'no backend runs without one'}. Their timings "
            "below measure Python, not kernels: they are no performance figures.")


def _cellless_notice(problems, cells, variants) -> str | None:
    """A line naming the problems the chosen variants leave without a cell (a paged problem under
    ``--variants dense`` runs nowhere), so a set does not shrink unnoticed."""
    served = {p_index for p_index, _ in cells}
    left = [p for i, p in enumerate(problems) if i not in served]
    if not left:
        return None
    layouts = sorted({p.layout for p in left})
    # the slip this names: one pass asked as 'dense' alone, its paged problems dropped
    hint = "; one pass on a paged cache is the 'paged' variant" \
        if "paged" in layouts and variants and "dense" in variants else ""
    return (f"note: {len(left)} of {len(problems)} problem(s) have no cell among the backends and "
            f"--variants {','.join(variants or ('all',))} (layouts: {', '.join(layouts)}{hint}), "
            f"e.g. {left[0].label()}: not run")


def _missing_notice(impls) -> str | None:
    """One line naming the backends not installed on this GPU machine and how to install each
    (their rows say UNAVAILABLE with the same command); None when none is missing."""
    missing = {b.name: why for b in dict.fromkeys(i.backend for i in impls) if (why := b.not_installed())}
    if not missing:
        return None
    return ("Not installed here (their rows are UNAVAILABLE): "
            + "; ".join(f"{b} ({why})" for b, why in missing.items()))


CONFIGURED_CACHES = "as configured (may hold kernels compiled by earlier runs: first calls can be cache loads)"


def _fresh_caches() -> str:
    """Point every JIT disk cache the backends declare (and the driver's) at a new empty
    temporary folder (the workers inherit the environment)."""
    root = Path(tempfile.mkdtemp(prefix="decode-bench-jit-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    for var in registry.jit_cache_variables():
        (root / var.lower()).mkdir(parents=True)
        os.environ[var] = str((root / var.lower()).resolve())
    none = [b.name for b in registry.backends() if b.compiles and not b.jit_cache_env]
    return (f"fresh: empty at the start of the run ({root}); "
            f"no disk cache declared by: {', '.join(none) or 'none'}")


def cmd_list() -> int:
    """The capability matrix: one line per backend and algorithm, one column per layout with
    the variant it serves there."""
    header = ("backend", "algorithm", "dense", "paged", "status", "dtypes", "head_dim")
    body, notes = [], []
    for impl in registry.all_impls():
        why = impl.availability()
        cells = [impl.variant(lay) if lay in impl.layouts else "-" for lay in LAYOUTS]
        if impl.module is None:
            body.append((impl.backend.name, impl.algorithm, *cells, "no kernel", "", ""))
            notes.append((impl.name, impl.lacks))
            continue
        status = f"unavailable: {why}" if why else f"available ({impl.backend.mode()})"
        missing = [f"no {lay}: {impl.no_kernel(lay)}" for lay in LAYOUTS if lay not in impl.layouts]
        per_layout = bool(impl.caps.per_layout)  # head dims that differ between the layouts: below
        dims = "; ".join(f"head_dim {lay}: {_head_dims(impl.caps.on(lay))}" for lay in sorted(impl.layouts)) \
            if per_layout else ""
        body.append((impl.backend.name, impl.algorithm, *cells, status.split(":")[0],
                     ",".join(DTYPE_SHORT[d] for d in sorted(impl.caps.dtypes)),
                     "per layout" if per_layout else _head_dims(impl.caps.on(min(impl.layouts)))))
        notes.append((impl.name, "; ".join(filter(None, [impl.summary, dims, *missing,
                                                         why and f"unavailable: {why}"]))))
    width = results.terminal_width()
    print(results.columns(header, body))
    print()
    for name, text in notes:  # the long texts under the table, wrapped to the terminal
        print(textwrap.fill(text, width, initial_indent=f"{name}: ", subsequent_indent="    "))
    return 0


def _head_dims(caps) -> str:
    if caps.head_dims:
        return ",".join(map(str, sorted(caps.head_dims)))
    return f"<= {caps.max_head_dim}" + (f", % {caps.head_dim_multiple}"
                                        if caps.head_dim_multiple > 1 else "")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "run":
            return cmd_run(args, argv)
        if args.command == "list":
            return cmd_list()
        if args.command == "report":
            from harness import report
            print(report.report(args.results, args.out, plots=not args.no_plots, page=args.html))
            return 0
        if args.command == "compare":
            from harness import report
            text, regressed = report.compare(args.old, args.new, args.threshold, args.any_gpu, args.html,
                                             again=args.again)
            print(text)
            return 1 if regressed else 0
        if args.command == "replay":
            return cmd_replay(args.cases)
        if args.command == "profile":
            from harness import profile
            if args.metrics and not args.ncu and not args.under_ncu:
                raise ProblemError("--metrics: ncu's counters, with --ncu (a plain profile times "
                                   "a call and reads no counter)")
            args.sections = args.sections or profile.NCU_SECTIONS
            print(profile.profiled_calls(args) if args.under_ncu else profile.profile(args))
            return 0
        if args.command == "install":
            from harness import install
            return install.install(args.dry_run)
        if args.command == "_worker":
            return worker_main(args.spec_path)
        if args.command == "_probe":
            print(json.dumps(registry.probe_answer(args.backend)))
            return 0
    except ProblemError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    parser.print_help()
    return 2
