"""Where a run's cells execute. A run is one task list: a ``Task`` is one backend's cells on one
device slot of the run, as the ``RunSpec`` a worker takes; ``runner.evaluate`` turns a cell into
a row wherever it runs. An executor runs every task and brings every row to the run's
``rows.jsonl``; nothing else in the harness knows which one ran.

* ``LocalExecutor`` (the default): this machine's GPU (or CPU), the backends one after the other,
  each in worker processes of its own (``runner.run_isolated``: a crash costs its cell), or in
  this process with ``--no-isolate``.
* ``RayExecutor`` (``--gpus N``, ``--ray-address ADDR``): the problems sharded over N GPUs of a
  Ray cluster, a local one started for the run or the one at ADDR. A slot's shard runs as one
  Ray task holding one GPU: it measures that GPU (identity, bandwidth, the size-matched reads of
  its problems), then runs its backends one after the other exactly as the local executor does
  (worker processes, crash isolation, a backend's own environment), and streams each row back as
  it is written. Every row of a problem is measured on one GPU (sharded by problem, never by
  backend); ``SPREAD_PROBLEMS`` problems run on every GPU, so the report can say how far apart the
  GPUs are. A shard whose Ray worker or node is lost runs again, its remaining cells only, on
  whichever GPU Ray gives it; those rows say which attempt measured them and why.

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
from harness.runner import RunSpec, error_row, progress_text, run_backends, run_isolated, work
from impls import registry
from specs.problem import DecodeProblem, ProblemError

SPREAD_PROBLEMS = 2  # problems measured on every GPU of a run over several: the largest, the smallest
MAX_SHARD_ATTEMPTS = 3  # a shard whose Ray worker or node is lost is run again up to this often
RAY_INSTALL = "pip install -e .[ray]"


@dataclasses.dataclass(frozen=True)
class Task:
    """One backend's cells on one device slot of the run (0 .. slots - 1)."""

    slot: int
    backend: str
    spec: RunSpec


def plan(spec: RunSpec, problems: list[DecodeProblem], impls_of: list[tuple[int, str]],
         order: dict[str, int], slots: int = 1, remeasure: bool = False) -> list[Task]:
    """The run's tasks. ``impls_of``: (problem index, implementation name) per cell, in run
    order; cell ids are their positions, and a problem measured again (the spread, the
    repeatability) gets ids after them. One slot: a task per backend, in ``order``. Several:
    each problem to one slot (the longest first to the least loaded, by bytes moved per cell),
    each slot a task per backend, slot s of n from s/n of the way into ``order`` (and round);
    the largest and the smallest problems on every slot. ``remeasure`` (timing on GPUs): those
    two also measured a second time on their own slot, as the last cells of each backend's task,
    for the run's repeatability (``results.repeatability``)."""
    names = {name: registry.get(name).backend.name for _, name in impls_of}
    home = {index: 0 for index in range(len(problems))}
    if slots > 1:
        cost = {i: (problems[i].bytes_moved + (1 << 20)) * sum(p == i for p, _ in impls_of)
                for i in home}
        load = [0] * slots
        for i in sorted(cost, key=cost.get, reverse=True):
            home[i] = load.index(min(load))
            load[home[i]] += cost[i]
    extra: list[tuple[int, str, int]] = []  # (problem, implementation, slot): the repeats
    if slots > 1 or remeasure:
        by_size = sorted(home, key=lambda i: problems[i].bytes_moved)
        for i in dict.fromkeys((by_size[-1], by_size[0])[:SPREAD_PROBLEMS]):
            extra += [(i, name, s) for s in range(slots) if s != home[i] or remeasure
                      for p, name in impls_of if p == i]
    cells = [(cell, p, name, home[p]) for cell, (p, name) in enumerate(impls_of)]
    cells += [(len(impls_of) + n, p, name, s) for n, (p, name, s) in enumerate(extra)]
    tasks = []
    backends = sorted(set(names.values()), key=lambda b: (order.get(b, 0), b))
    for slot in range(slots):
        for backend in _from_own_point(backends, slot, slots):
            mine = [(c, p, name) for c, p, name, s in cells if s == slot and names[name] == backend]
            if mine:
                again = [c for c in mine if c[0] >= len(impls_of) and home[c[1]] == slot]
                tasks.append(Task(slot, backend, dataclasses.replace(
                    spec, cells=_staggered([c for c in mine if c not in again], slot, slots) + again)))
    return tasks


def _from_own_point(items: list, slot: int, slots: int) -> list:
    """``items`` from slot s of n's own point on (s/n of the way in), wrapping round: GPUs of one
    machine then meet a backend, and its kernel specialisations, at different times, so one GPU's
    compile is the next one's load from the shared disk cache, not the same compile twice at once
    (in step, both compiled every kernel at once: the two-GPU run at 017fbe6)."""
    start = slot * len(items) // slots
    return items[start:] + items[:start]


def _staggered(cells: list[tuple[int, int, str]], slot: int, slots: int) -> list[tuple[int, int, str]]:
    """A slot's cells in its problem order from its own point on (``_from_own_point``), a
    problem's cells together and in their order."""
    problems = _from_own_point(list(dict.fromkeys(p for _, p, _ in cells)), slot, slots)
    rank = {p: i for i, p in enumerate(problems)}
    return sorted(cells, key=lambda c: rank[c[1]])


class LocalExecutor:
    """This machine, one backend after the other."""

    slots = 1

    def __init__(self, isolate: bool = True):
        self.isolate = isolate

    def describe(self) -> dict:
        return {"executor": "local"}

    def device_fields(self, problems, timing: bool) -> dict:
        """The provenance of the one device this run measures on (its bandwidth: on a GPU)."""
        if not torch.cuda.is_available():
            return {}
        return bandwidth.run_fields(torch.device("cuda"), problems, timing)

    def run(self, tasks: list[Task], prov: dict, out_dir: Path, progress: Progress) -> None:
        if self.isolate:  # each backend's worker started while the one before measures
            run_backends([(t.spec, t.backend) for t in tasks], prov, out_dir, progress,
                         before=lambda spec, backend: progress.line(f"[{backend}]"))
            return
        for task in tasks:
            progress.line(f"[{task.backend}]")
            in_here = registry.worker_env(registry.get(task.spec.cells[0][2]).backend) is None
            if in_here:
                work(task.spec, prov)
            else:
                run_isolated(task.spec, prov, out_dir, task.backend, progress)

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

    def describe(self) -> dict:
        return {"executor": "ray", "ray_address": self.address or "local", "gpus_used": self.slots,
                "ray_version": self.ray.__version__}

    def device_fields(self, problems, timing: bool) -> dict:
        return {}  # each GPU measures itself (its shard's first item)

    def run(self, tasks: list[Task], prov: dict, out_dir: Path, progress: Progress) -> None:
        rows_path = Path(tasks[0].spec.rows_path) if tasks else out_dir / "rows.jsonl"
        written = {r["cell"] for r in results.read_rows(rows_path)}
        lock = threading.Lock()  # guards written, running, devices, the rows file and stopped
        devices: dict[int, dict] = {}  # the last device each slot's shard reported
        reported: list[dict] = []  # every device a shard ran on (a retry may land elsewhere)
        shard = self.ray.remote(num_gpus=1, max_retries=0)(run_shard)  # retries: drive() below
        running: dict[int, object] = {}
        failures: list[BaseException] = []
        stopped = False  # the run was stopped: nothing more is submitted or written
        lost = (self.ray.exceptions.WorkerCrashedError, self.ray.exceptions.NodeDiedError,
                self.ray.exceptions.ObjectLostError, self.ray.exceptions.ActorDiedError)

        def give_up(slot: int, mine: list[Task], why: str) -> None:
            """ERROR rows for the cells of ``mine`` no shard will run (unless the run was
            stopped), stamped with the slot's last device."""
            with lock:
                if stopped:
                    return
                for task in mine:
                    for cell in task.spec.cells:
                        if cell[0] not in written:
                            written.add(cell[0])
                            error_row(task.spec, {**prov, **devices.get(slot, {})}, cell,
                                      f"not run: the shard of GPU slot {slot} {why}", progress)

        def drive(slot: int, mine: list[Task]) -> None:
            attempt, why = 1, None
            while True:
                with lock:
                    mine = [dataclasses.replace(t, spec=dataclasses.replace(
                        t.spec, cells=[c for c in t.spec.cells if c[0] not in written])) for t in mine]
                    mine = [t for t in mine if t.spec.cells]
                    if stopped or not mine:
                        return
                    gen = shard.options(num_returns="streaming").remote(mine, prov, attempt, why)
                    running[slot] = gen
                try:
                    for ref in gen:
                        item = self.ray.get(ref)
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
                    attempt += 1
                    if attempt <= MAX_SHARD_ATTEMPTS:
                        continue
                    give_up(slot, mine, f"was lost {MAX_SHARD_ATTEMPTS} times ({why})")
                    return
                except self.ray.exceptions.RayError as e:  # the shard itself failed: no retry
                    give_up(slot, mine, f"failed: {type(e).__name__}: {str(e)[-400:]}")
                    return
                give_up(slot, mine, "ended without this cell's row")  # said, not dropped
                return

        def guarded(slot: int, mine: list[Task]) -> None:
            try:
                drive(slot, mine)
            except BaseException as e:  # noqa: BLE001  (reported by the main thread)
                failures.append(e)

        threads = [threading.Thread(target=guarded, args=(slot, [t for t in tasks if t.slot == slot]),
                                    daemon=True) for slot in sorted({t.slot for t in tasks})]
        try:
            for t in threads:
                t.start()
            while any(t.is_alive() for t in threads):  # the main thread takes Ctrl-C and SIGTERM
                time.sleep(0.2)
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


def run_shard(tasks: list[Task], prov: dict, attempt: int = 1, why: str | None = None):
    """A Ray task on one GPU: yields ``{"device": fields}`` (this GPU's identity and bandwidth),
    then ``{"row": row}`` for each row of its tasks as it is written. Rows of a second attempt
    say so (``attempt``, ``retry_reason``)."""
    import ray

    ids = ray.get_gpu_ids()
    fields = {**provenance.device_fields(slot=str(ids[0]) if ids else None), "host": platform.node()}
    if torch.cuda.is_available() and tasks:
        indices = dict.fromkeys(c[1] for t in tasks for c in t.spec.cells)  # the shard's problems
        problems = [DecodeProblem.from_dict(tasks[0].spec.problems[i]) for i in indices]
        fields.update(bandwidth.run_fields(torch.device("cuda"), problems, tasks[0].spec.timing))
    device_prov = {**prov, **fields}
    yield {"device": dict(fields)}
    retry = {"attempt": attempt, "retry_reason": why} if attempt > 1 else {}
    with tempfile.TemporaryDirectory(prefix="decode-bench-shard-") as tmp:
        rows_path = Path(tmp) / "rows.jsonl"  # the backends run one after the other: one file
        jobs = [(dataclasses.replace(t.spec, rows_path=str(rows_path)), t.backend) for t in tasks]
        raised: list[BaseException] = []

        def backends():  # one thread for all: a worker dies with the thread that started it
            try:  # (PR_SET_PDEATHSIG), and the next backend's worker starts ahead of its turn
                run_backends(jobs, device_prov, Path(tmp), _Quiet())
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
