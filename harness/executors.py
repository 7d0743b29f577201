"""Where a run's cells execute. A run is one ``Plan``: a ``Task`` is one problem's cells (every
backend's), which one GPU measures whole; ``runner.run_problems`` runs a sequence of tasks, each
problem backend by backend in workers that live for the run, and ``runner.evaluate`` turns a cell
into a row wherever it runs. An executor runs every task and brings every row to the run's
``rows.jsonl``; nothing else in the harness knows which one ran.

* ``LocalExecutor`` (the default): this machine's GPU (or CPU), the problems one after the other,
  each backend's cells in a worker process of its own (a crash costs its cell), or in this
  process with ``--no-isolate``.
* ``RayExecutor`` (``--gpus N``, ``--ray-address ADDR``): the problems spread over N GPUs of a
  Ray cluster, a local one started for the run or the one at ADDR. Each GPU's slot runs as one
  Ray task holding one GPU: it starts and measures that GPU (identity, bandwidth, the size-matched
  reads of the run's problems) before the cells' clock starts, as a local run's own process does,
  then takes problems from one shared queue as it comes free (the costliest first), and streams
  each row back as it is written. A problem is measured whole on one GPU
  (never split by backend), and no GPU waits while another has problems left: what a backend's
  first compile costs lands where it lands and the queue evens it out. ``SPREAD_PROBLEMS``
  problems run on every GPU, so the report can say how far apart the GPUs are (and the ranks
  how far a row moves from one of the run's GPUs to another); a tuning run measures each problem
  once (a copy would be its whole search again). A shard whose Ray worker or node is lost runs
  again, the cells of its problems left only, on whichever GPU Ray gives it; those rows say
  which attempt measured them and why.

The nodes of a cluster run this checkout from the same path (a shared filesystem, as clusters
under Slurm have) with the same Python environments.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import socket
import tempfile
import threading
import time
from pathlib import Path

import torch

from harness import bandwidth, provenance, results
from harness.progress import Progress
from harness.runner import RunSpec, env_of, error_row, progress_text, run_problems
from impls import registry
from specs.problem import DecodeProblem, ProblemError

SPREAD_PROBLEMS = 2  # problems measured on every GPU of a run over several: the largest, the smallest
MAX_SHARD_ATTEMPTS = 3  # a shard whose Ray worker or node is lost is run again up to this often
RAY_INSTALL = "pip install -e .[ray]"


Cell = tuple[int, int, str]  # (cell id, problem index, implementation name)


@dataclasses.dataclass(frozen=True)
class Task:
    """One problem's cells, every backend's, measured on one GPU: slot ``slot``'s, or (None)
    whichever takes it."""

    cells: tuple[Cell, ...]
    slot: int | None = None

    def for_slot(self, slot: int) -> bool:
        return self.slot is None or self.slot == slot


@dataclasses.dataclass(frozen=True)
class Plan:
    """A run's tasks. ``queue``: taken in this order, each by the first slot (GPU) free that it
    is for (``Task.for_slot``); ``first``: each slot's own, before it takes any."""

    spec: RunSpec  # the run's (its ``cells`` empty: each task carries its own)
    backends: tuple[str, ...]  # every backend with cells, in the run's order
    queue: tuple[Task, ...]
    first: tuple[tuple[Task, ...], ...]  # per slot

    @property
    def slots(self) -> int:
        return len(self.first)

    def total(self) -> int:
        return sum(len(t.cells) for t in (*self.queue, *sum(self.first, ())))

    def backends_of(self, slot: int) -> list[str]:
        """The order slot s of n runs a problem's backends in: from s/n of the way into the
        run's order (``_from_own_point``)."""
        return _from_own_point(list(self.backends), slot, self.slots)


def plan(spec: RunSpec, problems: list[DecodeProblem], impls_of: list[tuple[int, str]],
         order: dict[str, int], slots: int = 1, remeasure: bool = False) -> Plan:
    """The run's plan. ``impls_of``: (problem index, implementation name) per cell, in run
    order; cell ids are their positions, and a problem measured again (the spread, the
    repeatability) gets ids after them. One slot: the problems in run order. Several: the
    problems in one queue, the costliest first (bytes moved per cell, times cells: the last ones
    taken are short, so the GPUs end together), and the spread, the largest and the smallest
    problem measured on every slot: the largest first on every slot, its own cells on slot 0
    (each slot runs a problem's backends from its own point, so one slot's compile is the next
    one's disk-cache load), the smallest before the last third of the queue, its own cells on
    slot 1 (minutes later: the spread's pairs are also the run's repeatability over its GPUs,
    ``results.repeatability``). ``remeasure`` (timing on GPUs), one slot: those two measured a
    second time at the end, the run's repeatability on its GPU; several need no more cells.
    A tuning run (the ``tune`` option) plans no spread and no second measurement, each problem's
    cells once: every copy would run the whole tuning search again on its GPU (four GPUs spent
    a run's whole time limit tuning the largest problem four times)."""
    backends = tuple(sorted({registry.get(name).backend.name for _, name in impls_of},
                            key=lambda b: (order.get(b, 0), b)))
    cells_of: dict[int, list[Cell]] = {}
    for cell, (p, name) in enumerate(impls_of):
        cells_of.setdefault(p, []).append((cell, p, name))
    by_size = sorted(cells_of, key=lambda i: problems[i].bytes_moved)
    tuning = bool(spec.options.get("tune"))
    again = list(dict.fromkeys((by_size[-1], by_size[0])))[:SPREAD_PROBLEMS] \
        if (slots > 1 or remeasure) and not tuning and by_size else []
    first: list[list[Task]] = [[] for _ in range(slots)]
    next_id = len(impls_of)

    def copy(p: int, slot: int) -> Task:  # the problem's cells under new ids
        nonlocal next_id
        cells = tuple((next_id + n, q, name) for n, (_, q, name) in enumerate(cells_of[p]))
        next_id += len(cells)
        return Task(cells, slot)

    def everywhere(p: int, home: int) -> list[Task]:  # its own cells on ``home``, copies elsewhere
        return [Task(tuple(cells_of[p]), s) if s == home else copy(p, s) for s in range(slots)]

    if slots > 1:
        cost = {p: (problems[p].bytes_moved + (1 << 20)) * len(cells_of[p]) for p in cells_of}
        queue = [Task(tuple(cells_of[p])) for p in sorted(cells_of, key=cost.get, reverse=True)
                 if p not in again]
        for s, task in enumerate(everywhere(again[0], 0) if again else []):  # (no cells: none)
            first[s].append(task)
        at = len(queue) - len(queue) // 3
        queue[at:at] = [t for n, p in enumerate(again[1:], 1) for t in everywhere(p, n % slots)]
    else:
        queue = [Task(tuple(cells)) for cells in cells_of.values()]
        queue += [copy(p, 0) for p in again]
    return Plan(dataclasses.replace(spec, cells=[]), backends, tuple(queue), tuple(map(tuple, first)))


def _from_own_point(items: list, slot: int, slots: int) -> list:
    """``items`` from slot s of n's own point on (s/n of the way in), wrapping round: GPUs of one
    machine then meet a backend, and its kernel specialisations, at different times, so one GPU's
    compile is the next one's load from the shared disk cache, not the same compile twice at once
    (in step, both compiled every kernel at once: the two-GPU run at 017fbe6)."""
    start = slot * len(items) // slots
    return items[start:] + items[:start]


class LocalExecutor:
    """This machine, one problem after the other."""

    slots = 1

    def __init__(self, isolate: bool = True):
        self.isolate = isolate

    def describe(self) -> dict:
        return {"executor": "local"}

    def device_fields(self, problems, timing: bool, seed: int = 0) -> dict:
        """The provenance of the one device this run measures on (its bandwidth and, timing, its
        size-matched and layout reads of ``problems`` as drawn with ``seed``: on a GPU)."""
        if not torch.cuda.is_available():
            return {}
        return bandwidth.run_fields(torch.device("cuda"), problems, timing, seed)

    def start(self, plan: Plan, prov: dict) -> None:
        pass  # this process has measured its GPU (device_fields); the workers start with run()

    def run(self, plan: Plan, prov: dict, out_dir: Path, progress: Progress) -> None:
        in_here = frozenset() if self.isolate else frozenset(
            b for b in plan.backends if env_of(b) is None)
        tasks = [*plan.first[0], *plan.queue]
        run_problems(plan.spec, (t.cells for t in tasks), prov, out_dir, progress,
                     plan.backends_of(0), in_here)

    def close(self) -> None:
        pass


def ray_executor(gpus: int | None, address: str | None) -> RayExecutor:
    """The Ray executor for ``--gpus``/``--ray-address``, or a ``ProblemError`` naming the flag,
    before any work: Ray missing, or fewer GPUs than asked for."""
    try:
        import ray
    except ImportError:
        flag = "--gpus" if address is None else "--ray-address"
        raise ProblemError(f"{flag}: needs Ray, which is not installed here ({RAY_INSTALL})") from None
    if gpus is not None and gpus < 1:
        raise ProblemError(f"--gpus {gpus}: must be at least 1")
    if address is None:
        found = torch.cuda.device_count()
        if gpus > found:
            raise ProblemError(f"--gpus {gpus}: this machine has {found} GPU(s) "
                               "(torch.cuda.device_count()); name at most that many, or join a "
                               "cluster with --ray-address")
        try:  # "local": a new instance, whatever RAY_ADDRESS says
            ray.init(address="local", num_gpus=gpus, include_dashboard=False, log_to_driver=False,
                     runtime_env=_runtime_env())
        except Exception as e:  # noqa: BLE001
            raise ProblemError(f"--gpus {gpus}: Ray could not start here ({e})") from None
    else:
        _reachable(address)
        try:
            ray.init(address=address, log_to_driver=False, runtime_env=_runtime_env())
        except Exception as e:  # noqa: BLE001  (no cluster there, refused, timed out)
            first = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise ProblemError(f"--ray-address {address}: cannot join a Ray cluster there "
                               f"({first})") from None
        found = int(ray.cluster_resources().get("GPU", 0))
        gpus = found if gpus is None else gpus
        if not 1 <= gpus <= found:
            ray.shutdown()
            raise ProblemError(f"--gpus {gpus}: the Ray cluster at {address} has {found} GPU(s)")
    return RayExecutor(ray, gpus, address)


def _reachable(address: str, timeout_s: float = 5.0) -> None:
    """A ``ProblemError`` at once where nothing listens at ``host:port`` (Ray's own connect
    retries for a minute or more); ``auto`` and other forms are left to Ray."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        return
    try:
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except OSError as e:
        raise ProblemError(f"--ray-address {address}: nothing answers there ({e.strerror or e}); "
                           "start a cluster with 'ray start --head' or name its head's address") from None


def _runtime_env() -> dict:
    """What Ray's workers need to import the harness: this checkout on their path (nodes run it
    from the same path), the variables that choose backends and their environments, and where
    the JIT disk caches are (a run with --fresh-caches points them at empty folders)."""
    caches = set(registry.jit_cache_variables())
    keep = {k: v for k, v in os.environ.items()
            if k.startswith("DECODE_BENCH_") or k in caches or
            k in ("TRITON_INTERPRET", "NUMBA_ENABLE_CUDASIM")}
    path = os.pathsep.join(filter(None, [str(registry.ROOT), os.environ.get("PYTHONPATH")]))
    return {"env_vars": {**keep, "PYTHONPATH": path}}


class RayExecutor:
    """The problems sharded over ``gpus`` GPUs of a Ray cluster (see the module's docstring)."""

    def __init__(self, ray, gpus: int, address: str | None):
        self.ray, self.slots, self.address = ray, gpus, address
        self.queue = None  # the run's queue (a Ray actor), made by start()
        self.started: dict[int, object] = {}  # slot -> its first shard's generator (start())
        self.first_items: dict[int, object] = {}  # ... and its first item, or what it raised

    def describe(self) -> dict:
        return {"executor": "ray", "ray_address": self.address or "local", "gpus_used": self.slots,
                "ray_version": self.ray.__version__}

    def device_fields(self, problems, timing: bool, seed: int = 0) -> dict:
        return {}  # each GPU measures itself (``start``); the rows carry their GPU's figures

    def start(self, plan: Plan, prov: dict) -> None:
        """Before the cells' clock, as a local run's own process starts and measures its GPU
        before it: each slot's shard starts (a Ray worker, its imports), measures its GPU and
        reports it, then waits for ``run`` to open the queue."""
        self.queue = self.ray.remote(num_cpus=0)(Queue).remote(plan.queue)
        shard = self.ray.remote(num_gpus=1, max_retries=0)(run_shard)
        for slot in range(plan.slots):
            gen = shard.options(num_returns="streaming").remote(plan, slot, self.queue,
                                                                list(plan.first[slot]), prov)
            self.started[slot] = gen
        for slot, gen in self.started.items():
            try:
                self.first_items[slot] = self.ray.get(next(gen))
            except Exception as e:  # noqa: BLE001  (lost or failed: run() says so, or runs it again)
                self.first_items[slot] = e

    def run(self, plan: Plan, prov: dict, out_dir: Path, progress: Progress) -> None:
        rows_path = Path(plan.spec.rows_path)
        written = {r["cell"] for r in results.read_rows(rows_path)}
        lock = threading.Lock()  # guards written, running, devices, the rows file and stopped
        devices: dict[int, dict] = {}  # the last device each slot's shard reported
        reported: list[dict] = []  # every device a shard ran on (a retry may land elsewhere)
        shard = self.ray.remote(num_gpus=1, max_retries=0)(run_shard)  # retries: drive() below
        if self.queue is None:  # not started ahead (cli starts it before the cells' clock)
            self.start(plan, prov)
        queue = self.queue
        running: dict[int, object] = dict(self.started)  # cancelled with the others if the run stops
        failures: list[BaseException] = []
        stopped = False  # the run was stopped: nothing more is submitted or written
        lost = (self.ray.exceptions.WorkerCrashedError, self.ray.exceptions.NodeDiedError,
                self.ray.exceptions.ObjectLostError, self.ray.exceptions.ActorDiedError)

        def left(tasks) -> list[Task]:
            """``tasks`` with the cells that have no row yet (under the lock)."""
            tasks = [Task(tuple(c for c in t.cells if c[0] not in written)) for t in tasks]
            return [t for t in tasks if t.cells]

        def give_up(slot: int, tasks: list[Task], why: str) -> None:
            """ERROR rows for the cells of ``tasks`` no shard will run (unless the run was
            stopped), stamped with the slot's last device."""
            with lock:
                if stopped:
                    return
                for task in tasks:
                    for cell in task.cells:
                        if cell[0] not in written:
                            written.add(cell[0])
                            error_row(plan.spec, {**prov, **devices.get(slot, {})}, cell,
                                      f"not run: the shard of GPU slot {slot} {why}", progress)

        def drive(slot: int) -> None:
            attempt, why = 1, None
            while True:
                first = None
                if attempt == 1:  # the shard start() started, and its first item
                    gen, first = self.started[slot], self.first_items[slot]
                    with lock:
                        running[slot] = gen
                else:
                    had = mine_now(slot)  # a lost shard's problems
                    with lock:
                        mine = left(had)
                        if stopped:
                            return
                        gen = shard.options(num_returns="streaming").remote(
                            plan, slot, queue, mine, prov, attempt, why)
                        running[slot] = gen
                try:
                    if isinstance(first, BaseException):
                        raise first
                    for item in _chain(first, gen, self.ray):
                        with lock:
                            if stopped:
                                return
                            if "device" in item:
                                devices[slot] = item["device"]
                                reported.append({**item["device"], "slot": slot, "attempt": attempt})
                                continue
                            row = item["row"]
                            if row["cell"] in written:  # a retried shard's row already here
                                continue
                            written.add(row["cell"])
                            results.append_row(rows_path, row)
                            progress.line(progress_text(row), slot=slot)
                except lost as e:  # its Ray worker or node was lost: the rest runs again
                    why = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
                    try:  # whatever is left of it goes: it would take tasks no one reads
                        self.ray.cancel(gen, force=True)
                    except Exception:  # noqa: BLE001  (already gone)
                        pass
                    attempt += 1
                    if attempt <= MAX_SHARD_ATTEMPTS:
                        continue
                    give_up(slot, mine_now(slot), f"was lost {MAX_SHARD_ATTEMPTS} times ({why})")
                    return
                except Exception as e:  # noqa: BLE001  (the shard itself failed: no retry)
                    give_up(slot, mine_now(slot), f"failed: {type(e).__name__}: {str(e)[-400:]}")
                    return
                give_up(slot, mine_now(slot), "ended without this cell's row")  # said, not dropped
                return

        def mine_now(slot: int) -> list[Task]:
            """What a slot's shard had to run: its own tasks and those it took."""
            return [*self.ray.get(queue.taken_by.remote(slot)), *plan.first[slot]]

        def guarded(slot: int) -> None:
            try:
                drive(slot)
            except BaseException as e:  # noqa: BLE001  (reported by the main thread)
                failures.append(e)

        threads = [threading.Thread(target=guarded, args=(slot,), daemon=True)
                   for slot in range(plan.slots)]
        try:
            self.ray.get(queue.open.remote())  # the shards started go on
            for t in threads:
                t.start()
            while any(t.is_alive() for t in threads):  # the main thread takes Ctrl-C and SIGTERM
                time.sleep(0.2)
            # a shard gone for good before the queue was: its problems are said, not dropped
            for task in self.ray.get(queue.untaken.remote()):
                slot = task.slot if task.slot is not None else 0
                give_up(slot, [task], "ended before this problem was taken" if task.slot is not None
                        else "and every other ended before this problem was taken")
            if failures:
                raise failures[0]
        finally:
            with lock:
                stopped = True
                gens = list(running.values())
            for gen in gens:  # the shards' workers go with them
                try:
                    self.ray.cancel(gen, force=True)
                except Exception:  # noqa: BLE001  (already finished)
                    pass
            for t in threads:  # out of Ray's calls before Ray shuts down (it crashes otherwise)
                t.join(timeout=30)
            prov["gpus"] = reported
            models = {d.get("gpu") for d in reported}
            if len(models) == 1 and None not in models:  # the run's GPU, for compare and reports
                prov["gpu"] = models.pop()

    def close(self) -> None:
        self.ray.shutdown()


def _chain(first, gen, ray):
    """A shard's items: ``first`` (already had, where not None), then the rest of ``gen``."""
    if first is not None:
        yield first
    for ref in gen:
        yield ray.get(ref)


class Queue:
    """The queued tasks of a run over several GPUs, as a Ray actor: each slot's shard takes the
    next one for it as it comes free; what each slot took is kept, so a lost shard's problems
    run again. Closed until the run opens it (the shards started wait)."""

    def __init__(self, tasks: tuple[Task, ...]):
        self.tasks, self.taken, self.opened = list(tasks), {}, False

    def open(self) -> None:
        self.opened = True

    def is_open(self) -> bool:
        return self.opened

    def take(self, slot: int) -> Task | None:
        task = next((t for t in self.tasks if t.for_slot(slot)), None)
        if task is not None:
            self.tasks.remove(task)
            self.taken.setdefault(slot, []).append(task)
        return task

    def taken_by(self, slot: int) -> list[Task]:
        return self.taken.get(slot, [])

    def untaken(self) -> list[Task]:
        return list(self.tasks)


def run_shard(plan: Plan, slot: int, queue, mine: list[Task], prov: dict, attempt: int = 1,
              why: str | None = None):
    """A Ray task on one GPU: yields ``{"device": fields}`` (this GPU's identity and bandwidth,
    measured here over the size-matched reads of every problem: any may come to it), waits for
    the queue to open, then yields ``{"row": row}`` for each row as it is written: the tasks of
    ``mine``, then those it takes from ``queue``. Rows of a second attempt say so (``attempt``,
    ``retry_reason``)."""
    import ray

    ids = ray.get_gpu_ids()
    fields = {**provenance.device_fields(slot=str(ids[0]) if ids else None), "host": platform.node()}
    if torch.cuda.is_available():
        problems = [DecodeProblem.from_dict(p) for p in plan.spec.problems]
        fields.update(bandwidth.run_fields(torch.device("cuda"), problems, plan.spec.timing,
                                           plan.spec.seed))
        torch.cuda.empty_cache()
    device_prov = {**prov, **fields}
    yield {"device": dict(fields)}
    while not ray.get(queue.is_open.remote()):
        time.sleep(0.05)
    retry = {"attempt": attempt, "retry_reason": why} if attempt > 1 else {}

    def tasks():
        yield from (t.cells for t in mine)
        while (task := ray.get(queue.take.remote(slot))) is not None:
            yield task.cells

    with tempfile.TemporaryDirectory(prefix="decode-bench-shard-") as tmp:
        rows_path = Path(tmp) / "rows.jsonl"  # one worker writes at a time: one file
        spec = dataclasses.replace(plan.spec, rows_path=str(rows_path))
        raised: list[BaseException] = []

        def backends():  # one thread for all: a worker dies with the thread that started it
            try:  # (PR_SET_PDEATHSIG)
                run_problems(spec, tasks(), device_prov, Path(tmp), _Quiet(), plan.backends_of(slot))
            except BaseException as e:  # noqa: BLE001  (raised in the generator below)
                raised.append(e)

        worker = threading.Thread(target=backends)
        worker.start()
        offset = 0
        while True:
            alive = worker.is_alive()
            if rows_path.exists():  # the rows as they are written
                with open(rows_path, "rb") as f:
                    f.seek(offset)
                    chunk = f.read()
                done = chunk[:chunk.rfind(b"\n") + 1]  # whole lines only
                offset += len(done)
                for line in done.splitlines():
                    yield {"row": {**json.loads(line), **retry}}
            if not alive:
                break
            time.sleep(0.2)
        if raised:  # the driver makes the cells left ERROR rows with this reason
            raise raised[0]


class _Quiet:
    """Progress for a shard's workers: their lines stay on the node (the rows travel)."""

    def line(self, text: str) -> None:
        pass
