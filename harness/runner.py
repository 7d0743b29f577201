"""Conformance, then timing, of every selected implementation on every problem.

The parent process resolves the run (problems, implementations), records provenance and the
GPU's memory bandwidth (harness.bandwidth), then an executor (harness.executors: this machine, or
GPUs of a Ray cluster) runs the cells problem by problem, each backend's in a worker process of
its own that lives for the run (``Workers``). A kernel that crashes its process, or a worker
silent for WORKER_SILENCE_S, costs one cell: it is recorded as ERROR with the worker's last
words and a fresh worker goes on with the backend's remaining cells; one that leaves the CUDA
context unusable costs the backend's cells of that problem (each ERROR with CUDA's error), and a
fresh worker takes its next problem. Every other backend runs regardless. Workers append each
row to ``rows.jsonl`` as soon as it exists.

Per (implementation, problem) a worker: skips with UNAVAILABLE / UNSUPPORTED and the reason;
draws fresh seeded inputs (shared by all of the backend's variants for that problem) and the
float64 reference; runs once into poisoned outputs and compares (PASS / FAIL with the error
figures, ERROR with the exception); times only a PASS, cycling through that input set and up to
TIMING_SETS - 1 more (other seeds: other buffers, other values) where memory allows, then checks
every set again (q drawn anew, one more call and one graph replay: ``time_and_recheck``): a
kernel whose timed calls do not compute what its first call did is a FAIL, with no time.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import itertools
import json
import os
import selectors
import subprocess
import sys
import threading
import time
import traceback
from collections import deque
from pathlib import Path
from typing import Any

import torch

from conformance.checks import InputSet, check, time_and_recheck
from harness import bandwidth, cases, results, tuning
from harness.progress import CELL_MARK, Progress
from harness.timing import MODES, CpuTimer, GpuTimer, Timing, time_plan
from impls import registry
from impls.registry import Impl, Unsupported
from specs.inputs import default_device, input_bytes, make_inputs
from specs.problem import DecodeProblem, ProblemError
from specs.reference import reference

ERROR_TEXT_LIMIT = 600  # characters of an exception kept in a row
IDLE_HOLD = 1 << 30  # torch's memory a worker may keep between problems (one worker per backend)
WORKER_SILENCE_S = 900  # a worker that prints nothing this long is hung: killed, its cell ERROR
MAX_WORKER_STARTS = 50  # per backend: past that, the remaining cells are ERROR without a try
TIMING_SETS = 3  # input sets the timer cycles through on a GPU (2 on a CPU: interpreters are slow)
TIMING_SETS_CPU = 2
TIMING_SET_MEMORY = 0.5  # ... as far as their inputs fit in this share of the free GPU memory
# ... and add at most this many bytes in all: a set of this size is 20x an H100's L2, so another
# buffer changes nothing a cold call reads, while the harness's peak memory stays within its
# stated bound of 1.5 x (KV + outputs) + a fixed margin (README, "Memory")
EXTRA_SETS_BYTES = 1 << 30
SET_SEED_STRIDE = 1_000_003  # input set j draws with seed + j * this


@dataclasses.dataclass
class RunSpec:
    """Everything a worker needs, as plain data (written to JSON for the worker process).
    ``cells`` are (cell id, problem index, implementation name), run in order."""

    problems: list[dict]
    cells: list[tuple[int, int, str]]
    seed: int
    options: dict[str, Any]
    timing: bool
    quick: bool
    rows_path: str
    save_cases: str | None
    modes: tuple[str, ...] = MODES  # timing modes on a GPU (harness.timing)
    tuning_cache: bool = True  # launch configs from the tuning cache where valid (harness.tuning)


def _base_row(cell: int, impl: Impl, problem: DecodeProblem, prov: dict) -> dict:
    no_kernel = impl.no_kernel(problem.layout)
    return {"cell": cell, "impl": impl.row_name(problem.layout), "backend": impl.backend.name,
            "variant": impl.variant(problem.layout), "algorithm": impl.algorithm,
            "problem": problem.label(), "spec": problem.to_dict(),
            "no_kernel": no_kernel is not None,  # the backend has no such variant at all
            "vendor": impl.backend.vendor, "compiles": impl.backend.compiles,
            **{k: prov.get(k) for k in results.ROW_PROVENANCE},
            # a problem measured again (on another GPU: the spread; on its own: repeatability)
            **({"spread_repeat": True} if cell >= prov.get("cells_base", cell + 1) else {})}


def extra_input_sets(problem: DecodeProblem, seed: int, first) -> list[InputSet]:
    """Input sets 2.. for the timer (``TIMING_SETS``), each with its reference: only as many as
    add at most EXTRA_SETS_BYTES and, on a GPU, fit in ``TIMING_SET_MEMORY`` of the free memory
    (a set is drawn straight into its layout: it needs its own bytes and a bounded scratch)."""
    device = first.device
    count = TIMING_SETS if device.type == "cuda" else TIMING_SETS_CPU
    footprint = max(input_bytes(problem), 1)
    count = min(count, 1 + EXTRA_SETS_BYTES // footprint)
    if device.type == "cuda":
        free = torch.cuda.mem_get_info(device)[0]
        count = min(count, 1 + int(TIMING_SET_MEMORY * free // footprint))
    sets = []
    for j in range(1, count):
        try:
            inputs = make_inputs(problem, seed + j * SET_SEED_STRIDE, device)
            ref = reference(inputs)
        except torch.cuda.OutOfMemoryError:  # the estimate was short: time on the sets made
            torch.cuda.empty_cache()
            break
        sets.append(InputSet(inputs, ref))
    return sets


def evaluate(cell: int, impl: Impl, problem: DecodeProblem, inputs, ref, spec: RunSpec, timer,
             prov, extra_sets=lambda: [], first_set: InputSet | None = None) -> dict:
    """One cell: check, then (PASS only) time on ``inputs`` and ``extra_sets()``, and check the
    timed calls. Never raises."""
    row = _base_row(cell, impl, problem, prov)
    options = {k: v for k, v in spec.options.items() if k in impl.options}
    tune = bool(spec.options.get("tune"))
    # a candidate is one fixed configuration: with ``tune`` on, the backend's autotuner would
    # run again and ignore it
    fixed = {k: v for k, v in options.items() if k != "tune"}

    def measure(config: dict | None) -> tuple | None:  # a tuner's candidate (None: the rule's)
        try:
            candidate = check(impl, inputs, ref,
                              fixed if config is None else {**fixed, "config": config})
        except Exception:  # noqa: BLE001  (refused or failed to build: not a candidate)
            return None
        if not candidate.comparison.passed:
            return None
        timed = tuning_timer(inputs.device)(candidate.run.launch.run)
        median = next(iter(timed.values())).estimate.median  # cold on a GPU, wall on the CPU
        return median, tuning.in_space(impl, candidate.run.launch.config)

    try:
        options, source = tuning.choose(impl, problem, options, tune, spec.tuning_cache,
                                        inputs.device, measure)
        row.update(source)
        checked = check(impl, inputs, ref, options)
    except Unsupported as e:  # a constraint only the launcher can see (e.g. alignment)
        return {**row, "status": "UNSUPPORTED", "reason": str(e)}
    except Exception as e:  # a crash in one cell is a row, not the end of the run
        text = exception_text(e)
        if not isinstance(e, ProblemError):
            text += " | " + traceback.format_exc(limit=-3).replace("\n", " ")
        return {**row, "status": "ERROR", "reason": clip(text)}
    c = checked.comparison
    tuned = checked.run.launch.tuning_s
    row.update(kv_bytes=problem.kv_bytes, input_bytes=inputs.nbytes)
    row.update(status="PASS" if c.passed else "FAIL", reason="" if c.passed else c.summary()[:ERROR_TEXT_LIMIT],
               out_max_err=c.out_max_err, out_err_ratio=round(c.out_err_ratio, 4),
               lse_max_err=c.lse_max_err,
               lse_err_ratio=round(c.lse_err_ratio, 4) if c.lse_err_ratio is not None else None,
               config=checked.run.launch.config,
               config_summary=config_summary(impl, checked.run.launch.config,
                                             row.get("config_source")),
               first_call_ms=round((checked.run.seconds - (tuned or 0)) * 1e3, 2),
               bytes=problem.bytes_moved)
    if tuned is not None:  # the autotuner's time, apart from compile + first call
        row["tuning_s"] = round(tuned, 2)
        if c.passed:  # cached only as fast as a later run's replay of it is
            row.update(tuning.record(impl, problem, inputs.device, checked.run.launch.config,
                                     tuned, measure))
    if spec.save_cases:
        start = time.perf_counter()
        try:
            saved = cases.save(Path(spec.save_cases), row["impl"], inputs, checked.run.out, checked.run.lse,
                               {"status": row["status"], "out_err_ratio": c.out_err_ratio,
                                "lse_err_ratio": c.lse_err_ratio,
                                "lse_rounded_sum": checked.run.launch.lse_rounded_sum})
            row.update(saved_bytes=saved, save_s=round(time.perf_counter() - start, 3))
        except OSError as e:  # a full disk costs the saved case, not the cell's verdict
            row["save_error"] = clip(exception_text(e))
    if c.passed and spec.timing:
        first_set = first_set or InputSet(inputs, ref)
        try:
            sets = extra_sets()
            timings, failure = time_and_recheck(impl, checked, first_set, sets, options, timer)
            plan = checked.run.launch.plan
            plan_us = round(time_plan(plan).median, 1) if plan is not None else None
        except Exception as e:
            return {**row, "status": "ERROR", "reason": clip(f"timing: {exception_text(e)}")}
        if failure:  # its timed calls computed something else: no time is worth showing
            return {**row, "status": "FAIL", "reason": failure[:ERROR_TEXT_LIMIT]}
        row.update(timing_fields(timings), input_sets=1 + len(sets))
        if plan_us is not None:
            row["plan_us"] = plan_us
        if inputs.device.type == "cuda" and row.get("primary_mode") in ("cold", "graph"):
            gbps = problem.bytes_moved / (row["median_us"] * 1e-6) / 1e9
            row["gbps"] = round(gbps, 1)
            if limit := prov.get("bandwidth_limit_gbps"):
                row["pct_peak_bw"] = round(100 * gbps / limit, 1)
            if read_us := bandwidth.read_limit_us(prov.get("read_limits") or {}, problem.bytes_moved):
                row["read_limit_us"] = round(read_us, 2)
                row["pct_read"] = round(100 * read_us / row["median_us"], 1)
            if layout_us := bandwidth.layout_limit_us(prov.get("layout_limits") or {}, problem):
                row["layout_read_us"] = round(layout_us, 2)
                row["pct_layout_read"] = round(100 * layout_us / row["median_us"], 1)
    return row


@functools.cache
def tuning_timer(device: torch.device):
    """The tuner's timer: the rows' cold-L2 protocol at the quick size, cold mode only."""
    return GpuTimer(device, quick=True, modes=("cold",)) if device.type == "cuda" else CpuTimer()


INPUTS_SHARE = 0.9  # of the free GPU memory the inputs may take (the rest: scratch, outputs)


def does_not_fit(problem: DecodeProblem, device: torch.device) -> str | None:
    """Why ``problem``'s inputs cannot be held on this GPU, from their size alone; None: they may."""
    if device.type != "cuda":
        return None
    need, free = input_bytes(problem), torch.cuda.mem_get_info(device)[0]
    if need <= INPUTS_SHARE * free:
        return None
    what = (f"the dense layout is batch x longest ({problem.batch} x {problem.max_seq_len} tokens)"
            if problem.layout == "dense" else "the paged pool")
    return f"{what}: {need / 2**30:.1f} GiB of inputs for {problem.kv_bytes / 2**30:.1f} GiB of KV"


def peak_memory(device: torch.device) -> int | None:
    """The most bytes torch held on the GPU since the last call (inputs, reference, outputs, the
    backends' torch workspaces; a DSL's own pool is not seen), then a fresh count; None on a CPU."""
    if device.type != "cuda":
        return None
    peak = torch.cuda.max_memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    return peak


def config_summary(impl: Impl, config: dict, source: str | None = None) -> str:
    """The launch choices the backend declares worth showing (``Backend.shown_config``), marked
    where they were tuned or read from the tuning cache."""
    shown = ", ".join(f"{k}={config[k]}" for k in impl.backend.shown_config if k in config)
    return f"{source}: {shown}" if source in ("tuned", "cache") else shown


def timing_fields(timings: dict[str, Timing | str]) -> dict:
    """Row fields of every mode (``<mode>_us``, ``<mode>_ci_us``, ``<mode>_stop``, notes), plus
    the primary figure (the first mode of MODES that has one: ``cold`` on a GPU) as
    ``median_us`` with its interval, p20/p80 and repetitions."""
    row: dict = {}
    primary = None
    for mode, t in timings.items():
        if isinstance(t, str):
            row[f"{mode}_note"] = t
            continue
        e = t.estimate
        row.update({f"{mode}_us": round(e.median, 2), f"{mode}_ci_us": [round(e.ci_lo, 2), round(e.ci_hi, 2)],
                    f"{mode}_stop": t.stop, f"{mode}_reps": e.reps})
        if t.note:
            row[f"{mode}_note"] = t.note
        if primary is None:
            primary = mode
            row.update(primary_mode=mode, timing=t.method, median_us=round(e.median, 2),
                       ci_lo_us=round(e.ci_lo, 2), ci_hi_us=round(e.ci_hi, 2),
                       p20_us=round(e.p20, 2), p80_us=round(e.p80, 2), reps=e.reps)
    return row


def progress_text(row: dict) -> str:
    extra = row.get("reason", "") if row["status"] != "PASS" else \
        (f"{row['median_us']:.1f} us" + (f", {row['gbps']:.0f} GB/s" if row.get("gbps") else "")
         if row.get("median_us") else "")
    return f"  {row['impl']:<22} {row['problem']:<58} {row['status']:<11} {extra}"


def make_timer(spec: RunSpec):
    """The timer of ``spec``'s cells on this process's device (None: not timing)."""
    if not spec.timing:
        return None
    device = default_device()
    return GpuTimer(device, spec.quick, spec.modes) if device.type == "cuda" else CpuTimer()


def work(spec: RunSpec, prov: dict, worker: bool = False, timer=None,
         announced: set | None = None) -> None:
    """Worker body: the cells of ``spec`` in order, rows appended as they finish. Consecutive
    cells of one problem share its inputs and reference. A ``worker`` announces each cell to the
    parent's progress line before it starts (``harness.progress``). ``timer``: one kept from an
    earlier call (a serving worker's), else made here; ``announced``: the UNAVAILABLE and
    no-kernel lines already printed (kept across calls: said once a run)."""
    rows_path = Path(spec.rows_path)
    device = default_device()
    timer = timer if timer is not None else make_timer(spec)
    announced = set() if announced is None else announced
    for index, group in itertools.groupby(spec.cells, key=lambda c: c[1]):
        problem = DecodeProblem.from_dict(spec.problems[index])
        runnable = []
        for cell, _, name in group:
            impl = registry.get(name)
            if reason := impl.no_kernel(problem.layout):  # whatever the machine
                status = "UNSUPPORTED"
            elif reason := impl.availability():
                status = "UNAVAILABLE"
            elif reason := impl.unsupported(problem) or impl.backend.mode_unsupported(problem):
                status = "UNSUPPORTED"
            else:
                runnable.append((cell, impl))
                continue
            row = {**_base_row(cell, impl, problem, prov), "status": status, "reason": reason}
            results.append_row(rows_path, row)
            if (status, row["impl"]) not in announced:
                print(progress_text(row), flush=True)
            if status == "UNAVAILABLE" or row["no_kernel"]:  # the same on every problem: once
                announced.add((status, row["impl"]))
        if not runnable:
            continue
        inputs = ref = out_of_memory = None
        peak_memory(device)  # from here: this problem's inputs
        if too_big := does_not_fit(problem, device):  # said before drawing anything
            out_of_memory = too_big
        else:
            try:
                inputs = make_inputs(problem, spec.seed, device)
                ref = reference(inputs)
            except torch.cuda.OutOfMemoryError as e:  # the machine's limit, not a backend's failure
                out_of_memory = str(e).splitlines()[0][:160]
        if out_of_memory is not None:  # out of the except: its traceback holds the tensors
            inputs = ref = None
            gc.collect()
            free = ""
            if device.type == "cuda":
                torch.cuda.empty_cache()
                free = f" ({torch.cuda.mem_get_info(device)[0] / 2**30:.1f} GiB free)"
            reason = (f"the problem's inputs and reference do not fit this GPU's memory{free}: "
                      f"{out_of_memory}")
            for cell, impl in runnable:
                row = {**_base_row(cell, impl, problem, prov), "status": "UNAVAILABLE",
                       "reason": reason}
                results.append_row(rows_path, row)
                print(progress_text(row), flush=True)
            continue
        setup_peak = peak_memory(device)  # drawing the inputs and the reference
        extra = functools.cache(functools.partial(extra_input_sets, problem, spec.seed, inputs))
        first_set = InputSet(inputs, ref)  # its re-check draws are shared by the variants
        for cell, impl in runnable:
            if worker:
                print(f"{CELL_MARK}{impl.row_name(problem.layout)} {problem.label()}", flush=True)
            row = evaluate(cell, impl, problem, inputs, ref, spec, timer, prov, extra, first_set)
            if (peak := peak_memory(device)) is not None:  # the inputs' and the cell's
                row["peak_mem_bytes"] = max(peak, setup_peak)
            results.append_row(rows_path, row)
            print(progress_text(row), flush=True)
        del inputs, ref, extra, first_set
        if getattr(timer, "graphs", None) is not None:  # the last cell's, checked by now
            timer.graphs = None
        release_memory()


BATCH_DONE = "\x1ebatch done"  # a worker's line: the cells it was sent have their rows
BATCH_LAST = "\x1ebatch done, context lost"  # ... and it ends: a fresh worker takes the next


@dataclasses.dataclass
class Worker:
    """A worker process serving one backend's cells, and the spec file it read at its start."""
    proc: subprocess.Popen
    spec_path: Path
    pending: bytes = b""  # output read past the last whole line

    def send(self, cells: list[tuple[int, int, str]]) -> bool:
        """Hand it a batch of cells (one line on its stdin); False where it is gone."""
        try:
            self.proc.stdin.write((json.dumps(cells) + "\n").encode())
            self.proc.stdin.flush()
            return True
        except (BrokenPipeError, OSError, ValueError):
            return False

    def lines(self) -> list[str] | None:
        """The whole lines its output has for us now (read straight from the pipe: a buffered
        reader would hold lines a select on the pipe no longer sees); None at its end."""
        chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
        if not chunk:  # its end: what it wrote without a last newline too
            last, self.pending = self.pending, b""
            return [last.decode(errors="replace") + "\n"] if last else None
        self.pending += chunk
        done, _, self.pending = self.pending.rpartition(b"\n")
        return [line.decode(errors="replace") + "\n" for line in done.split(b"\n")] if _ else []

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.spec_path.unlink(missing_ok=True)


def start_worker(spec: RunSpec, prov: dict, spec_path: Path, backend: str,
                 env: registry.WorkerEnv | None = None) -> Worker:
    """A worker for ``backend`` (in ``env``, the backend's own environment, if it has one): it
    imports what the backend needs (off the timing CPU, nothing on the GPU), then runs each batch
    of cells it is sent (``Worker.send``) and says when a batch is done, until its stdin closes."""
    spec_path.write_text(json.dumps({"spec": dataclasses.asdict(spec), "provenance": prov,
                                     "backend": backend}))
    python, variables = (env.python, dict(env.variables)) if env else (sys.executable, None)
    proc = subprocess.Popen([python, "-m", "harness", "_worker", str(spec_path.resolve())],
                            cwd=registry.ROOT, env=variables, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, stdin=subprocess.PIPE)
    return Worker(proc, spec_path)


def _watch(worker: Worker, progress: Progress, tail: deque) -> int | str:
    """Echo the worker's lines until its batch is done ("done"; "last": and the worker ends, its
    CUDA context lost), it ends (its exit code) or it stays silent too long ("silent", killed)."""
    proc = worker.proc
    last_output = time.monotonic()
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        while True:
            if selector.select(timeout=5):
                lines = worker.lines()
                if lines is None:
                    return proc.wait()  # end of output: the worker is dead
                for n, line in enumerate(lines):
                    if line.rstrip("\n") in (BATCH_DONE, BATCH_LAST):
                        worker.pending = "".join(lines[n + 1:]).encode() + worker.pending
                        return "done" if line.rstrip("\n") == BATCH_DONE else "last"
                    progress.line(line)
                    if not line.startswith(CELL_MARK):
                        tail.append(line.rstrip())
                last_output = time.monotonic()
            elif proc.poll() is not None:  # dead, its pipe held open by a child of its own
                return proc.returncode
            elif time.monotonic() - last_output > WORKER_SILENCE_S:
                proc.kill()
                proc.wait()
                return "silent"


def env_of(backend: str) -> registry.WorkerEnv | None:
    """The environment the named backend's workers run in (``registry.worker_env``; None: the
    harness's own, where ``--no-isolate`` can run it in this process)."""
    return registry.worker_env(registry.backend(backend))


class Workers:
    """One worker per backend, each started once and kept for the run (or a Ray shard): all start
    together, importing while the first cells run, and each runs every batch of its backend's
    cells it is sent, so a problem's cells go from backend to backend at no start-up cost. A
    worker that dies or hangs costs its current cell (an ERROR row with its last words); a fresh
    one takes the batch's remaining cells, up to MAX_WORKER_STARTS per backend."""

    def __init__(self, spec: RunSpec, prov: dict, out_dir: Path, progress: Progress,
                 backends: list[str]):
        self.spec, self.prov, self.out_dir, self.progress = spec, prov, out_dir, progress
        self.starts = dict.fromkeys(backends, 0)
        self.live: dict[str, Worker] = {}
        try:
            for backend in backends:
                self._start(backend)
        except BaseException:
            self.close()
            raise

    def _start(self, backend: str) -> Worker:
        self.starts[backend] = self.starts.get(backend, 0) + 1
        self.live[backend] = start_worker(self.spec, self.prov, self.out_dir / f".worker-{backend}.json",
                                          backend, env_of(backend))
        return self.live[backend]

    def run(self, backend: str, cells: list[tuple[int, int, str]]) -> None:
        """``cells`` (one backend's) in its worker; every one of them has a row when this returns."""
        remaining = list(cells)
        while remaining:
            if backend not in self.live and self.starts.get(backend, 0) >= MAX_WORKER_STARTS:
                for cell in remaining:
                    error_row(self.spec, self.prov, cell,
                              f"not run: the worker failed {MAX_WORKER_STARTS} times", self.progress)
                return
            worker = self.live.get(backend) or self._start(backend)
            tail: deque[str] = deque(maxlen=15)
            sent = worker.send(remaining)
            code = _watch(worker, self.progress, tail)  # unsent: its last words, to its end
            if code == "done":
                return
            worker.stop()
            del self.live[backend]
            if code == "last":  # every cell has its row; the next batch gets a fresh worker
                return
            done = {r["cell"] for r in results.read_rows(Path(self.spec.rows_path))}
            remaining = [c for c in remaining if c[0] not in done]
            if not remaining:
                return
            what = "hung (no output for %d s)" % WORKER_SILENCE_S if code == "silent" else \
                f"died (exit code {code})"
            where = "in this cell" if sent else "before this cell started"
            last = " / ".join(line for line in tail if line.strip())
            error_row(self.spec, self.prov, remaining.pop(0), f"worker process {what} {where}: "
                      + last[-ERROR_TEXT_LIMIT:], self.progress)

    def close(self) -> None:
        for worker in self.live.values():
            worker.stop()
        self.live.clear()


def run_problems(spec: RunSpec, problems, prov: dict, out_dir: Path, progress: Progress,
                 backends: list[str], in_here: frozenset[str] = frozenset()) -> None:
    """Each problem's cells (``problems``: an iterable of cell lists, one problem each, taken as
    they come) backend by backend in ``backends``' order, in the backends' ``Workers``, or in
    this process for those ``in_here`` (``--no-isolate``). Problem by problem, so whichever GPU
    takes a problem measures all of it, and a run over several GPUs can hand problems out as
    GPUs come free."""
    workers = Workers(spec, prov, out_dir, progress, [b for b in backends if b not in in_here])
    announced: set = set()  # in this process (--no-isolate): said once a run
    try:
        for cells in problems:
            of: dict[str, list] = {}
            for cell in cells:
                of.setdefault(registry.get(cell[2]).backend.name, []).append(cell)
            for backend, mine in ((b, of[b]) for b in backends if b in of):
                if backend in in_here:
                    work(dataclasses.replace(spec, cells=mine), prov, announced=announced)
                else:
                    workers.run(backend, mine)
    finally:
        workers.close()


def exception_text(e: BaseException) -> str:
    """``Type: message``, led by what failed: the exception it was raised from where there is
    one, and of a message over several lines its last line. A kernel compiler's error message is
    the kernel's source up to the failing call, what failed in its last line or in its cause."""
    root, seen = e, {id(e)}
    while root.__cause__ is not None and id(root.__cause__) not in seen:
        root = root.__cause__
        seen.add(id(root))
    lines = [line for line in str(root).splitlines() if line.strip()]
    first = f"{type(root).__name__}: {lines[-1].strip() if lines else ''}"
    text = f"{type(e).__name__}: {e}"
    return text if first == text else f"{first} | raised as {text}"


def clip(text: str, limit: int = ERROR_TEXT_LIMIT) -> str:
    """``text`` within ``limit`` characters: its start and its end (where a traceback ends in
    the failing call), the middle left out."""
    gap = " [...] "
    if len(text) <= limit:
        return text
    if limit <= 2 * len(gap):
        return text[:limit]
    head = limit // 2
    return f"{text[:head]}{gap}{text[len(text) - (limit - head - len(gap)):]}"


def error_row(spec: RunSpec, prov: dict, cell: tuple[int, int, str], reason: str,
              progress: Progress) -> None:
    cell_id, index, name = cell
    row = {**_base_row(cell_id, registry.get(name), DecodeProblem.from_dict(spec.problems[index]), prov),
           "status": "ERROR", "reason": reason}
    results.append_row(Path(spec.rows_path), row)
    progress.line(progress_text(row))


def _exit_with_parent(interval_s: float = 1.0) -> None:
    """A worker whose parent is gone (killed by SIGKILL: a Ray worker cancelled or lost, where
    the parent's clean-up never runs) ends too, rather than holding the GPU for no one: on Linux
    the kernel kills it (PR_SET_PDEATHSIG, no thread of ours runs beside the timed calls);
    elsewhere a thread looks once a second."""
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            import signal
            if ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL) == 0:  # PR_SET_PDEATHSIG
                if os.getppid() != parent:  # gone before the call took effect
                    os._exit(1)
                return
        except (OSError, AttributeError):
            pass

    def watch():
        while os.getppid() == parent:
            time.sleep(interval_s)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def _imports_ahead(backend: str) -> None:
    """What a worker does first: import the packages its backend requires (the slow part of a
    start), off the CPU a running worker times on, and nothing on the GPU. An import that fails
    is left for the availability check to report on the first cell."""
    import importlib

    from harness.timing import timing_cpu
    allowed = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    if allowed and len(allowed) > 1:
        os.sched_setaffinity(0, allowed - {timing_cpu(allowed)})
    try:
        for module in registry.backend(backend).requires:
            try:
                importlib.import_module(module)
            except Exception:  # noqa: BLE001
                pass
    finally:
        if allowed and len(allowed) > 1:
            os.sched_setaffinity(0, allowed)


def worker_main(spec_path: str) -> int:
    """A worker: its backend's imports, then each batch of cells read from stdin (a JSON list
    a line), its rows written, then ``BATCH_DONE``; ends when stdin closes."""
    _exit_with_parent()
    data = json.loads(Path(spec_path).read_text())
    spec = RunSpec(**data["spec"])
    _imports_ahead(data["backend"])
    timer, announced = None, set()
    while line := sys.stdin.readline():
        cells = [tuple(c) for c in json.loads(line)]
        timer = timer if timer is not None else make_timer(spec)  # on the first batch: its GPU
        work(dataclasses.replace(spec, cells=cells), data["provenance"], worker=True, timer=timer,
             announced=announced)
        if _context_lost():  # a kernel left it unusable: no later problem of this worker's is blamed
            print(BATCH_LAST, flush=True)
            return 0
        print(BATCH_DONE, flush=True)
    return 0


def release_memory() -> None:
    """What a problem left beyond IDLE_HOLD given back before the next (another backend's worker
    may need it): the tensors and graph pools a reference cycle still holds, then torch's cached
    blocks. Only then: ``gc.collect`` takes 0.1-0.3 s once a process has compiled, and after
    every problem it was paid per problem and backend."""
    if torch.cuda.is_available() and torch.cuda.is_initialized() \
            and torch.cuda.memory_reserved() > IDLE_HOLD:
        gc.collect()
        torch.cuda.empty_cache()


def _context_lost() -> bool:
    """Whether this process's CUDA context is past use (a sticky error a kernel left: every call
    fails from then on)."""
    if not (torch.cuda.is_available() and torch.cuda.is_initialized()):
        return False
    try:
        torch.cuda.synchronize()
        return False
    except Exception:  # noqa: BLE001  (whatever CUDA raises)
        return True
