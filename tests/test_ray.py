"""The Ray executor (``harness run --gpus N`` / ``--ray-address``) on the CPU: a Ray cluster on
this machine with declared fake GPUs (``ray start --head --num-gpus 4``), the CPU modes doing the
work. Sharding by problem, the spread problems on every GPU, rows streaming in, a worker killed
mid-run, a node lost, SIGTERM and SIGINT, and the refusals. Skipped, saying so, without Ray."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness import executors
from harness.runner import RunSpec
from specs.problem import DecodeProblem

# after the parallel tests, in one process (scripts/test.sh): the cluster fixture's teardown
# (`ray stop --force`) stops every Ray process on the machine, another worker's cluster too (a
# clean-clone CI run with them spread over two workers lost one so)
pytestmark = pytest.mark.exclusive

ROOT = Path(__file__).resolve().parent.parent
PROBLEMS = [{"num_q_heads": 8, "num_kv_heads": 2, "head_dim": 64, "seq_lens": lens, "dtype": "float16"}
            for lens in ([9, 33], [40], [5, 7, 20], [100, 3], [64])]
GPUS = 4


def problem_args(problems=PROBLEMS) -> list[str]:
    return [a for p in problems for a in ("--problem", json.dumps(p))]


def harness(*args: str, env: dict | None = None, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=600, env={**os.environ, **(env or {})}, **kw)


def rows_of(run: Path) -> tuple[dict, list[dict]]:
    data = json.loads((run / "results.json").read_text())
    return data["provenance"], data["rows"]


# ---- the plan: pure, no Ray needed ------------------------------------------------------------
def test_the_plan_queues_whole_problems_costliest_first_and_repeats_the_largest_and_smallest_everywhere():
    problems = [DecodeProblem.from_dict(p) for p in PROBLEMS]
    impls = [(i, name) for i in range(len(problems))
             for name in ("numba/dense", "numba/split-k", "triton/dense")]
    spec = RunSpec([p.to_dict() for p in problems], [], 0, {}, False, True, "rows.jsonl", None)
    plan = executors.plan(spec, problems, impls, {}, slots=3)
    tasks = [*plan.queue, *sum(plan.first, ())]
    ids = [c for t in tasks for c, *_ in t.cells]
    assert sorted(ids) == list(range(len(ids))) == list(range(plan.total()))  # every cell once
    assert all(len({p for _, p, _ in t.cells}) == 1 for t in tasks)  # a task: one problem, whole
    own = [p for t in tasks for c, p, _ in t.cells if c < len(impls)]  # each problem's own cells
    assert sorted(set(own)) == list(range(len(problems))) and len(own) == len(impls)
    by_size = sorted(range(len(problems)), key=lambda i: problems[i].bytes_moved)
    spread = {by_size[0], by_size[-1]}
    for s in range(3):  # the largest: on every slot, first, every implementation; its own on 0
        assert [t.cells[0][1] for t in plan.first[s]] == [by_size[-1]]
        assert all(len(t.cells) == 3 and t.slot == s for t in plan.first[s])
        assert (plan.first[s][0].cells[0][0] < len(impls)) == (s == 0)
    bound = [(n, t) for n, t in enumerate(plan.queue) if t.slot is not None]
    # the smallest: on every slot, before the last third (minutes later); its own on slot 1
    assert sorted(t.slot for _, t in bound) == [0, 1, 2] and {t.cells[0][1] for _, t in bound} == {by_size[0]}
    assert [t.slot for _, t in bound if t.cells[0][0] < len(impls)] == [1]
    queued = [t.cells[0][1] for t in plan.queue if t.slot is None]
    assert set(queued) == set(range(len(problems))) - spread
    assert len(plan.queue) - bound[-1][0] - 1 == len(queued) // 3  # the last third after them
    costs = [problems[p].bytes_moved for p in queued]
    assert costs == sorted(costs, reverse=True)  # the costliest first: short ones end the run
    assert plan.backends_of(0) == ["numba", "triton"] and plan.backends_of(1) == ["numba", "triton"] \
        and plan.backends_of(2) == ["triton", "numba"]  # slot s of n from s/n of the order on
    two = executors.plan(spec, problems, impls, {"triton": 0, "numba": 1}, slots=2)
    assert two.backends_of(0) == ["triton", "numba"] and two.backends_of(1) == ["numba", "triton"]
    one = executors.plan(spec, problems, impls, {"triton": 0, "numba": 1}, slots=1)
    assert [c for t in one.queue for c in t.cells] == [(c, p, name) for c, (p, name) in enumerate(impls)]


def test_the_plan_remeasures_the_largest_and_smallest_once_on_one_gpu_and_not_again_on_several():
    """Timing on one GPU, the largest and the smallest problem are measured a second time at the
    end (another moment, fresh inputs): the run's repeatability. On several, the spread's
    measurements on two GPUs are that second measurement: no more cells."""
    problems = [DecodeProblem.from_dict(p) for p in PROBLEMS]
    impls = [(i, name) for i in range(len(problems)) for name in ("numba/dense", "triton/dense")]
    spec = RunSpec([p.to_dict() for p in problems], [], 0, {}, True, False, "rows.jsonl", None)
    by_size = sorted(range(len(problems)), key=lambda i: problems[i].bytes_moved)
    one = executors.plan(spec, problems, impls, {}, slots=1, remeasure=True)
    assert one.total() == len(impls) + 2 * 2
    assert [(t.cells[0][1], t.slot) for t in one.queue[-2:]] == [(by_size[-1], 0), (by_size[0], 0)]
    assert all(c >= len(impls) for t in one.queue[-2:] for c, *_ in t.cells)
    for slots in (2, 3):
        with_it, without = (executors.plan(spec, problems, impls, {}, slots=slots, remeasure=r)
                            for r in (True, False))
        assert with_it == without and with_it.total() == len(impls) + (slots - 1) * 2 * 2
    plain = executors.plan(spec, problems, impls, {}, slots=1)
    assert plain.total() == len(impls) and all(t.slot is None for t in plain.queue)
    for slots in (1, 2):  # no cells at all (every variant asked for is refused): an empty plan
        assert executors.plan(spec, problems, [], {}, slots=slots, remeasure=True).total() == 0


def test_a_tuning_plan_measures_each_problem_once_on_several_gpus():
    """A copy of a problem in a tuning run is its whole search again on another GPU: no spread,
    every problem in the shared queue, each cell once."""
    problems = [DecodeProblem.from_dict(p) for p in PROBLEMS]
    impls = [(i, name) for i in range(len(problems)) for name in ("numba/dense", "triton/dense")]
    spec = RunSpec([p.to_dict() for p in problems], [], 0, {"tune": True}, True, False,
                   "rows.jsonl", None)
    for slots in (2, 3):
        plan = executors.plan(spec, problems, impls, {}, slots=slots)
        assert plan.total() == len(impls)
        assert plan.first == ((),) * slots and all(t.slot is None for t in plan.queue)


def test_a_slot_takes_the_next_task_for_it_and_a_lost_slots_are_kept():
    queue = executors.Queue((executors.Task(((0, 0, "a"),)), executors.Task(((1, 1, "a"),), slot=1),
                             executors.Task(((2, 2, "a"),))))
    assert queue.take(0).cells[0][0] == 0 and queue.take(0).cells[0][0] == 2  # slot 1's skipped
    assert queue.take(0) is None and [t.slot for t in queue.untaken()] == [1]
    assert queue.take(1).cells[0][0] == 1 and queue.take(1) is None
    assert [t.cells[0][0] for t in queue.taken_by(0)] == [0, 2]


# ---- refusals before any work ---------------------------------------------------------------
def test_gpus_beyond_the_machine_are_refused_before_any_work(tmp_path):
    pytest.importorskip("ray", reason="Ray is not installed (pip install -e .[ray])")
    import torch
    res = harness("run", "--gpus", str(torch.cuda.device_count() + 1), "--backends", "plugin-torch",
                  *problem_args(PROBLEMS[:1]), "--no-timing", "--out", str(tmp_path / "run"),
                  env={"DECODE_BENCH_PLUGINS": "tests.plugin_backend"})
    assert res.returncode != 0 and f"--gpus {torch.cuda.device_count() + 1}: this machine has" in res.stderr
    assert not (tmp_path / "run" / "rows.jsonl").exists()
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    res = harness("run", "--ray-address", f"127.0.0.1:{port}", *problem_args(PROBLEMS[:1]),
                  "--no-timing", "--out", str(tmp_path / "run"))
    assert res.returncode != 0 and f"--ray-address 127.0.0.1:{port}: nothing answers there" in res.stderr


def test_fresh_caches_reach_the_workers_of_one_machine_only(tmp_path, monkeypatch):
    """--fresh-caches with --gpus: the empty cache folders are set before Ray starts and go to
    its workers with the run's other variables; with --ray-address (other machines' caches) it
    is refused before any work."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    monkeypatch.setenv("CUDA_CACHE_PATH", str(tmp_path / "driver"))
    env = executors._runtime_env()["env_vars"]
    assert env["TRITON_CACHE_DIR"] == str(tmp_path / "triton")
    assert env["CUDA_CACHE_PATH"] == str(tmp_path / "driver")
    res = harness("run", "--ray-address", "127.0.0.1:1", "--fresh-caches",
                  *problem_args(PROBLEMS[:1]), "--no-timing", "--out", str(tmp_path / "run"))
    assert res.returncode != 0 and "--fresh-caches: not with --ray-address" in res.stderr
    assert not (tmp_path / "run").exists()


def test_without_ray_the_flags_say_how_to_install_it(tmp_path):
    (tmp_path / "ray.py").write_text("raise ImportError('No module named ray')\n")
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    for flag in (["--gpus", "2"], ["--ray-address", "127.0.0.1:1"]):
        res = harness("run", *flag, *problem_args(PROBLEMS[:1]), "--no-timing", "--out",
                      str(tmp_path / "run"), env=env)
        assert res.returncode != 0 and f"{flag[0]}: needs Ray" in res.stderr and \
            executors.RAY_INSTALL in res.stderr, res.stderr[-500:]


# ---- on a cluster of fake GPUs ----------------------------------------------------------------
@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    pytest.importorskip("ray", reason="Ray is not installed (pip install -e .[ray])")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ray_cli = [sys.executable, "-m", "ray.scripts.scripts"]
    res = subprocess.run([*ray_cli, "start", "--head", f"--port={port}", f"--num-gpus={GPUS}",
                          "--num-cpus=4", "--include-dashboard=false", "--disable-usage-stats"],
                         capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stdout[-1000:] + res.stderr[-1000:]
    try:
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run([*ray_cli, "stop", "--force"], capture_output=True, timeout=120)


def test_sharded_over_fake_gpus_each_problem_on_one(cluster, tmp_path):
    run = tmp_path / "run"
    res = harness("run", "--ray-address", cluster, "--gpus", "3", "--backends", "plugin-torch",
                  *problem_args(), "--quick", "--out", str(run),
                  env={"DECODE_BENCH_PLUGINS": "tests.plugin_backend"})
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    prov, rows = rows_of(run)
    assert prov["executor"] == "ray" and prov["gpus_used"] == 3 and len(prov["gpus"]) == 3
    # provenance.json as the run ended, as results.json has it (a reader of the rows alone)
    assert json.loads((run / "provenance.json").read_text()) == prov
    assert prov["complete"] and len(rows) == prov["cells_total"] == 2 * len(PROBLEMS) + 2 * 2 * 2
    assert all(r["status"] == "PASS" and r["host"] and r["gpu_index"] is not None for r in rows)
    gpus_of: dict[str, set] = {}
    for r in rows:
        gpus_of.setdefault(json.dumps(r["spec"], sort_keys=True), set()).add(r["gpu_index"])
    spread = [k for k, g in gpus_of.items() if len(g) == 3]
    assert len(spread) == 2 and all(len(g) == 1 for k, g in gpus_of.items() if k not in spread)
    assert len({r["gpu_index"] for r in rows}) == 3
    assert "Spread between GPUs" in (run / "results.md").read_text()
    assert "slot 2:" in (run / "results.md").read_text()  # the executor's line names each GPU


def test_a_killed_worker_costs_its_cell_and_a_lost_node_its_shard_once(cluster, tmp_path):
    """The crashing backend aborts its worker process on 9-token sequences: that cell is ERROR,
    the shard goes on. The lost-node backend kills the shard's Ray worker once: the shard runs
    again on a GPU Ray gives it, its remaining cells only, and those rows say so."""
    run = tmp_path / "run"
    mark = tmp_path / "lost"
    problems = [{**PROBLEMS[0], "seq_lens": [9]}, PROBLEMS[1], PROBLEMS[2]]
    res = harness("run", "--ray-address", cluster, "--gpus", "2",
                  "--backends", "crashy,lost-node,plugin-torch", "--variants", "dense",
                  *problem_args(problems), "--no-timing", "--out", str(run),
                  env={"DECODE_BENCH_PLUGINS": "tests.crashing_backend,tests.ray_lost_node,tests.plugin_backend",
                       "DECODE_BENCH_LOSE_NODE_ONCE": str(mark)})
    prov, rows = rows_of(run)
    assert mark.exists() and prov["complete"], res.stdout[-2000:] + res.stderr[-2000:]
    assert len(rows) == prov["cells_total"] == len({r["cell"] for r in rows})  # none lost, none twice
    crashed = [r for r in rows if r["backend"] == "crashy" and r["spec"]["seq_lens"] == [9]]
    assert crashed and all(r["status"] == "ERROR" and "worker process died" in r["reason"] for r in crashed)
    assert all(r["status"] == "PASS" for r in rows if r["backend"] in ("plugin-torch", "lost-node")), \
        [(r["impl"], r["status"], r.get("reason", "")[:300]) for r in rows if r["status"] != "PASS"]
    retried = [r for r in rows if r.get("attempt") == 2]
    assert retried and all("RayError" in r["retry_reason"] or "Died" in r["retry_reason"]
                           or "Crashed" in r["retry_reason"] for r in retried), retried[:1]
    assert res.returncode == 1  # an ERROR row: the run says so


@pytest.mark.parametrize("sig,code", [("SIGTERM", 143), ("SIGINT", 130)])
def test_rows_stream_in_and_a_stopped_ray_run_writes_its_tables(cluster, tmp_path, sig, code):
    """Rows reach rows.jsonl while the run goes on; SIGTERM or SIGINT (to a run that inherited
    SIGINT ignored, as a script's background job does) ends it as Ctrl-C does."""
    run = tmp_path / "run"
    problems = [{**PROBLEMS[0], "seq_lens": [n, 17]} for n in range(20, 80, 4)]
    proc = subprocess.Popen([sys.executable, "-m", "harness", "run", "--ray-address", cluster,
                             "--gpus", "2", "--backends", "triton", "--variants", "dense",
                             *problem_args(problems), "--no-timing", "--out", str(run)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    deadline = time.monotonic() + 300
    rows = run / "rows.jsonl"
    while not (rows.exists() and rows.read_text().count("\n") >= 2):
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.2)
    assert proc.poll() is None  # rows arrived while the run went on
    proc.send_signal(getattr(signal, sig))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == code, out[-2000:] + err[-2000:]
    assert f"interrupted ({sig}): incomplete:" in err
    assert "incomplete:" in (run / "results.md").read_text()


# ---- a run's rows from several GPUs -----------------------------------------------------------
def _row(impl, us, gpu_index, gpu="H100", vendor=False, host="a"):
    spec = DecodeProblem.from_dict(PROBLEMS[0]).to_dict()
    return {"impl": impl, "backend": impl.split("/")[0], "variant": "dense", "status": "PASS",
            "problem": "p", "spec": spec, "vendor": vendor, "median_us": us, "ci_lo_us": us * 0.99,
            "ci_hi_us": us * 1.01, "timing": "cuda-events", "gpu": gpu, "gpu_index": gpu_index,
            "gpu_uuid": None, "host": host}


def test_ranks_ratios_and_tables_compare_rows_of_one_gpu_only():
    from harness import results

    rows = [_row("triton/dense", 10.0, "0"), _row("flashinfer/dense", 12.0, "0", vendor=True),
            _row("triton/dense", 14.0, "1"), _row("flashinfer/dense", 11.0, "1", vendor=True)]
    results.annotate(rows)
    assert [r["rank"] for r in rows] == [1, 2, 2, 1]  # per GPU, not across them
    assert rows[0]["vs_vendor"] == 1.2 and rows[2]["vs_vendor"] == round(11 / 14, 3)
    header, body = results.gpu_spread(rows)
    assert [b[0] for b in body] == ["triton/dense", "flashinfer/dense"] and body[0][-1] == "40.0"
    _, tie = results.gpu_spread([_row("triton/dense", 10.0, "0"), _row("triton/dense", 10.0, "1")])
    assert tie[0][3:] == ["10.0 (gpu 0)", "10.0 (gpu 1)", "0.0"]  # both GPUs named, not one twice
    _, side = results.side_by_side(rows)
    assert [line[0] for line in side] == ["p @gpu 0", "p @gpu 1"]
    two_models = rows + [_row("triton/dense", 9.0, "0", gpu="H200", host="b")]
    assert [m for m, _ in results.by_gpu_model(two_models)] == [": H100", ": H200"]
    assert results.by_gpu_model(rows) == [("", rows)]
    assert "Spread between GPUs" in results.render_markdown({"command": "x"}, rows)
