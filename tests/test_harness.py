"""The harness CLI end to end on the CPU: run, list, files, reproducibility of saved cases, bad
arguments, and a crashing backend that must not take the others' results with it."""

from __future__ import annotations

import csv
import json
import shutil
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
SMALL = {"num_q_heads": 8, "num_kv_heads": 2, "head_dim": 64, "seq_lens": [9, 33],
         "layout": "paged", "page_size": 16, "dtype": "float16"}


def harness(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=600, env={**os.environ, **(env or {})})


def test_list_prints_the_capability_matrix():
    res = harness("list")
    assert res.returncode == 0, res.stderr
    assert "triton" in res.stdout and "split-k" in res.stdout
    assert "no paged: torch 2.11 has no paged-KV attention kernel" in res.stdout


def test_run_writes_rows_files_and_replayable_cases(tmp_path):
    res = harness("run", "--backends", "triton", "--problem", json.dumps(SMALL),
                  "--out", str(tmp_path / "run"), "--save-cases", str(tmp_path / "cases"))
    assert res.returncode == 0, res.stdout + res.stderr
    data = json.loads((tmp_path / "run" / "results.json").read_text())
    rows = {r["impl"]: r for r in data["rows"]}
    assert rows["triton/paged"]["status"] == "PASS"
    assert rows["triton/split-k"]["status"] == "PASS"
    assert set(rows) == {"triton/paged", "triton/split-k"}  # a paged problem has no dense cell
    assert rows["triton/paged"]["median_us"] > 0
    assert data["provenance"]["commit"] and data["provenance"]["packages"]["torch"]
    with open(tmp_path / "run" / "results.csv") as f:
        csv_rows = list(csv.DictReader(f))
    assert {"gpu", "driver", "commit", "timestamp"} <= set(csv_rows[0])
    assert "## triton" in (tmp_path / "run" / "results.md").read_text()
    assert "not performance figures" in res.stdout
    # each row says when it was written: the run's timeline, per GPU and backend
    assert all(r["written_s"] > 0 for r in data["rows"])
    assert "## Where the time went" in (tmp_path / "run" / "results.md").read_text()

    # anyone can re-check a saved result with their own reference: here, numpy in float64
    (folder,) = (tmp_path / "cases").iterdir()
    inputs, out = ({n.stem: np.load(n) for n in f.glob("*.npy")} for f in (folder / "inputs", folder / "triton_paged"))
    meta = json.loads((folder / "inputs" / "meta.json").read_text())
    assert meta["dtype"] == "float16"
    assert json.loads((folder / "triton_paged" / "meta.json").read_text())["status"] == "PASS"
    q, k, v, lens = inputs["q"], inputs["k"], inputs["v"], inputs["seq_lens"]
    assert k.shape[0] == sum(lens)  # only the rows each sequence owns
    scale = 1 / np.sqrt(q.shape[-1])
    group = q.shape[1] // k.shape[1]
    for b, n in enumerate(lens):
        rows = slice(int(sum(lens[:b])), int(sum(lens[:b])) + n)
        for h in range(q.shape[1]):
            s = k[rows, h // group].astype(np.float64) @ q[b, h] * scale
            p = np.exp(s - s.max())
            np.testing.assert_allclose(out["out"][b, h], (p / p.sum()) @ v[rows, h // group],
                                       rtol=2e-3, atol=2e-3)
            assert abs(out["lse"][b, h] - (s.max() + np.log(p.sum()))) < 1e-4
    # ... and the harness replays it against its own reference, agreeing with the run
    res = harness("replay", str(tmp_path / "cases"))
    assert res.returncode == 0 and "0 verdict(s) differ" in res.stdout, res.stdout + res.stderr
    assert res.stdout.count("PASS") == 4  # two outputs: run and replay verdicts


def test_replay_refuses_cases_of_an_older_format(tmp_path):
    np.savez_compressed(tmp_path / "triton_paged_case.npz", q=np.zeros(3))
    res = harness("replay", str(tmp_path))
    assert res.returncode == 2 and "older format" in res.stderr, res.stderr


def test_workload_file_and_no_timing(tmp_path):
    path = tmp_path / "w.json"
    path.write_text(json.dumps([{**SMALL, "layout": "dense", "dtype": "float32"}]))
    res = harness("run", "--backends", "triton", "--variants", "dense", "--workload-file",
                  str(path), "--no-timing", "--out", str(tmp_path / "run"))
    assert res.returncode == 0, res.stdout + res.stderr
    (row,) = json.loads((tmp_path / "run" / "results.json").read_text())["rows"]
    assert row["status"] == "PASS" and "median_us" not in row
    assert row["workload"] == "file:w"  # which workload each row came from (the page filters by it)
    # the same problem named twice: one cell, both origins
    res = harness("run", "--backends", "triton", "--variants", "dense", "--workload-file", str(path),
                  "--problem", json.dumps({**SMALL, "layout": "dense", "dtype": "float32"}),
                  "--no-timing", "--out", str(tmp_path / "twice"))
    (row,) = json.loads((tmp_path / "twice" / "results.json").read_text())["rows"]
    assert row["workload"] == "file:w,--problem"
    assert "no cell" not in res.stdout
    # a paged problem under --variants dense runs nowhere: said, not dropped silently
    path.write_text(json.dumps([{**SMALL, "layout": "dense", "dtype": "float32"}, SMALL]))
    res = harness("run", "--backends", "triton", "--variants", "dense", "--workload-file", str(path),
                  "--no-timing", "--out", str(tmp_path / "cut"))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "note: 1 of 2 problem(s) have no cell" in res.stdout and "layouts: paged" in res.stdout


@pytest.mark.parametrize("args,message", [
    (["--workloads", "nope"], "unknown workload 'nope'"),
    (["--backends", "cuda-magic"], "unknown backend 'cuda-magic'"),
    (["--variants", "sparse"], "unknown variant 'sparse'"),
    (["--dtype", "float64"], "--dtype='float64'"),
    (["--problem", json.dumps({**SMALL, "num_kv_heads": 3})], "num_kv_heads=3 must divide"),
    (["--problem", json.dumps({**SMALL, "seq_lens": [4, -1]})], "seq_lens[1]=-1"),
    (["--problem", "{oops"], "not JSON"),
    (["--num-splits", "0"], "num_splits=0: must be an integer in [1, 4096]"),
    (["--num-splits", "5000"], "num_splits=5000: must be an integer in [1, 4096]"),
    (["--timing", "cold,warm"], "--timing: unknown mode(s) ['warm']"),
    (["--backends", "triton,cupy", "--config", '{"block_n": 64}'], "--config: unknown key(s) ['block_n'] for cupy"),
    (["--backends", "torch-cudnn", "--config", '{"block_n": 64}'], "--config: none of the selected backends"),
    (["--config", "[64]"], "must be a JSON object"),
])
def test_bad_arguments_fail_clearly_before_running(args, message, tmp_path):
    res = harness("run", *args, "--out", str(tmp_path / "run"))
    assert res.returncode == 2
    assert message in res.stderr
    assert not (tmp_path / "run" / "rows.jsonl").exists()


def test_a_crashing_backend_keeps_every_other_result(tmp_path):
    """The crashing kernel costs its own cell: the worker is restarted for the next cell, and
    the other backend's results are all there."""
    problems = [{**SMALL, "layout": "dense"}, {**SMALL, "layout": "dense", "seq_lens": [3]}]
    res = harness("run", "--backends", "crashy,triton", "--variants", "dense",
                  *[a for p in problems for a in ("--problem", json.dumps(p))],
                  "--no-timing", "--out", str(tmp_path / "run"),
                  env={"DECODE_BENCH_PLUGINS": "tests.crashing_backend"})
    assert res.returncode == 1  # an ERROR row makes the run fail, but it finishes
    rows = json.loads((tmp_path / "run" / "results.json").read_text())["rows"]
    crashy = sorted((r for r in rows if r["backend"] == "crashy"), key=lambda r: r["cell"])
    triton = [r for r in rows if r["backend"] == "triton"]
    assert [r["status"] for r in crashy] == ["ERROR", "FAIL"]
    assert "worker process died" in crashy[0]["reason"]
    assert len(triton) == 2 and all(r["status"] == "PASS" for r in triton)


def test_an_error_row_says_what_failed_first_and_keeps_both_ends_of_a_long_text():
    """A compiler's error wrapping the real one (Triton: the kernel's source, then the failing
    call; the reason only in its cause) is reported by its cause first; a text past the limit
    keeps its start and its end (the failing call of a traceback), not the start alone."""
    from harness.runner import ERROR_TEXT_LIMIT, clip, exception_text
    try:
        try:
            raise ValueError("arange's range must be a power of 2")
        except ValueError as inner:
            raise RuntimeError("at 15:23:\n" + "source line\n" * 100) from inner
    except RuntimeError as e:
        text = exception_text(e)
    assert text.startswith("ValueError: arange's range must be a power of 2 | raised as RuntimeError")
    assert exception_text(KeyError("k")) == "KeyError: 'k'"
    own = SyntaxError("at 3:4:\n    x = y(\n        ^\nNameError: y is not defined")  # no cause
    assert exception_text(own).startswith("SyntaxError: NameError: y is not defined | raised as")
    looped = ValueError("itself")
    looped.__cause__ = looped
    assert exception_text(looped) == "ValueError: itself"
    long = "head " + "x" * 2000 + " tail"
    assert clip("short") == "short"
    clipped = clip(long)
    assert len(clipped) == ERROR_TEXT_LIMIT and clipped.startswith("head x") and clipped.endswith("x tail")
    assert "[...]" in clipped
    assert clip(long, 10) == long[:10]


def test_variants_select_cells_and_config_reaches_the_launch(tmp_path):
    """--variants dense is the one-pass kernel on dense problems only; --config's overrides are
    what the kernels are launched with."""
    problems = [{**SMALL, "layout": "dense"}, SMALL]
    res = harness("run", "--backends", "triton", "--variants", "dense", "--config", '{"block_n": 32}',
                  *[a for p in problems for a in ("--problem", json.dumps(p))], "--no-timing",
                  "--out", str(tmp_path / "run"))
    assert res.returncode == 0, res.stdout + res.stderr
    rows = json.loads((tmp_path / "run" / "results.json").read_text())["rows"]
    assert [(r["impl"], r["spec"]["layout"], r["status"]) for r in rows] == [("triton/dense", "dense", "PASS")]
    assert rows[0]["config"]["block_n"] == 32


def test_an_interrupted_save_leaves_no_file(tmp_path, monkeypatch):
    from harness import cases

    def stopped(path, array):
        open(path, "wb").write(b"\x93NUMPY half an array")
        raise KeyboardInterrupt
    monkeypatch.setattr(cases, "_save_array", stopped)
    with pytest.raises(KeyboardInterrupt):
        cases._write(tmp_path / "triton_paged", {"out": __import__("torch").zeros(3)}, {})
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="needs a backend unavailable here")
def test_a_backend_named_but_unavailable_stops_the_run_with_exit_3(tmp_path):
    args = ("run", "--backends", "cupy,triton", "--problem", json.dumps(SMALL), "--no-timing")
    res = harness(*args, "--out", str(tmp_path / "a"))
    assert res.returncode == 3, res.stdout + res.stderr
    assert "cupy is unavailable here (no CUDA GPU)" in res.stderr and not (tmp_path / "a").exists()
    res = harness(*args, "--allow-unavailable", "--out", str(tmp_path / "b"))
    assert res.returncode == 0, res.stdout + res.stderr
    rows = json.loads((tmp_path / "b" / "results.json").read_text())["rows"]
    assert {r["status"] for r in rows if r["backend"] == "cupy"} == {"UNAVAILABLE"}
    assert res.stdout.index("  cupy/") < res.stdout.index("  triton/")  # the order asked for
    assert harness("run", "--backends", "", "--no-timing").returncode == 2


def _refused(tmp_path, *args, message):
    """Exit status 2, one line naming the problem, and nothing written under tmp_path/w."""
    res = harness("run", "--backends", "triton", "--problem", json.dumps(SMALL), "--no-timing", *args)
    assert res.returncode == 2, res.stdout + res.stderr
    assert message in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert not (tmp_path / "w").exists()


def test_bad_paths_and_values_are_refused_before_any_work(tmp_path):
    (tmp_path / "file").write_text("x")
    _refused(tmp_path, "--out", str(tmp_path / "file"), message="exists and is not a folder")
    _refused(tmp_path, "--out", str(tmp_path / "file" / "run"), message="is a file, not a folder")
    _refused(tmp_path, "--out", str(tmp_path / "w"), "--save-cases", str(tmp_path / "file" / "c"),
             message="--save-cases")
    _refused(tmp_path, "--out", str(tmp_path / "w"), "--seed", str(2**70), message="--seed=")
    for field, value in (("seq_lens", [2**40]), ("page_size", 2**40)):
        res = harness("run", "--problem", json.dumps({**SMALL, field: value}), "--out", str(tmp_path / "w"))
        assert res.returncode == 2 and "<= 2147483647" in res.stderr, res.stderr
        assert not (tmp_path / "w").exists()


def test_an_earlier_run_is_not_overwritten_unless_asked(tmp_path):
    run = tmp_path / "run"
    args = ("run", "--backends", "triton", "--variants", "paged", "--problem", json.dumps(SMALL),
            "--no-timing", "--out", str(run))
    assert harness(*args).returncode == 0
    (run / "plots").mkdir()
    before = (run / "rows.jsonl").read_text()
    res = harness(*args)
    assert res.returncode == 2 and "holds a run already" in res.stderr and "--overwrite" in res.stderr
    assert (run / "rows.jsonl").read_text() == before
    assert harness(*args, "--overwrite").returncode == 0
    assert not (run / "plots").exists()  # the old run's plots do not stay beside the new rows


@pytest.mark.parametrize("sig, inherited, code", [
    ("SIGINT", "SIG_DFL", 130),  # Ctrl-C
    ("SIGINT", "SIG_IGN", 130),  # a job in a script's background: the shell leaves SIGINT ignored
    ("SIGTERM", "SIG_DFL", 143),  # timeout, Slurm, Ray
], ids=["ctrl-c", "background-sigint", "sigterm"])
def test_a_stopped_run_is_reported_incomplete(tmp_path, sig, inherited, code):
    import signal
    import time

    run = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "harness", "run", "--backends", "triton",
                             "--workloads", "cpu", "--no-timing", "--out", str(run)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT,
                                                             getattr(signal, inherited)))
    deadline = time.monotonic() + 300
    while not ((run / "rows.jsonl").exists() and (run / "rows.jsonl").read_text().count("\n") >= 2):
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.2)
    proc.send_signal(getattr(signal, sig))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == code, out[-2000:] + err[-2000:]
    assert f"interrupted ({sig}): incomplete:" in err
    res = harness("report", str(run), "--no-plots")
    assert res.returncode == 0 and "incomplete:" in res.stdout and "of 20 cells" in res.stdout, res.stdout[-500:]
    assert "incomplete:" in (run / "results.md").read_text()
    res = harness("compare", str(run), str(run))
    assert "incomplete:" in res.stdout


def test_help_and_list_fit_a_terminal():
    res = harness("--help")
    assert res.returncode == 0 and "_worker" not in res.stdout and "SUPPRESS" not in res.stdout
    res = harness("list", env={"COLUMNS": "120"})
    assert res.returncode == 0 and max(map(len, res.stdout.splitlines())) <= 120, res.stdout


def test_a_problem_too_large_for_the_machine_is_unavailable_and_the_run_goes_on(tmp_path):
    """Inputs that do not fit the GPU's memory are the machine's limit: every cell of that
    problem is UNAVAILABLE with the reason, and the next problem runs."""
    problems = [{**SMALL, "seq_lens": [3]}, SMALL]
    res = harness("run", "--backends", "triton", "--variants", "paged",
                  *[a for p in problems for a in ("--problem", json.dumps(p))],
                  "--no-timing", "--out", str(tmp_path / "run"),
                  env={"DECODE_BENCH_PLUGINS": "tests.oversized_inputs"})
    assert res.returncode == 0, res.stdout + res.stderr
    rows = json.loads((tmp_path / "run" / "results.json").read_text())["rows"]
    by_lens = {tuple(r["spec"]["seq_lens"]): r for r in rows}
    assert by_lens[(3,)]["status"] == "UNAVAILABLE"
    assert "do not fit this GPU's memory" in by_lens[(3,)]["reason"]
    assert by_lens[(9, 33)]["status"] == "PASS"


def test_tune_then_a_later_run_reads_the_tuning_cache(tmp_path):
    """--tune searches the declared space of a backend without an autotuner of its own (checked
    and timed; on the CPU the interpreter's times, which is all the path needs), stores the
    choice; the next run of the shape takes it from the cache and says so; --no-tuning-cache
    takes the rule."""
    env = {"DECODE_BENCH_TUNING_CACHE": str(tmp_path / "tuning.json")}
    problem = json.dumps({**SMALL, "layout": "dense"})
    common = ("--backends", "triton", "--variants", "dense", "--problem", problem, "--quick")

    def rows(name, *extra):
        res = harness("run", *common, *extra, "--out", str(tmp_path / name), env=env)
        assert res.returncode == 0, res.stdout + res.stderr
        return json.loads((tmp_path / name / "results.json").read_text())["rows"]

    tuned = rows("tuned", "--tune")
    # the rule's config and its neighbours at least, fewer than the whole space
    from impls import registry
    impl = registry.get("triton/dense")
    space = len(impl.backend.space.configs(impl.variant("dense"), "dense"))
    assert tuned[0]["config_source"] == "tuned" and 5 <= tuned[0]["tuned_configs"] < space
    assert tuned[0]["tuning_s"] > 0 and tuned[0]["config_summary"].startswith("tuned: ")
    cached = rows("cached")
    assert cached[0]["config_source"] == "cache"
    assert {k: cached[0]["config"][k] for k in ("block_n", "num_warps", "num_stages")} == \
        {k: tuned[0]["config"][k] for k in ("block_n", "num_warps", "num_stages")}
    assert rows("rule", "--no-tuning-cache")[0]["config_source"] == "rule"


def test_profile_prints_the_launch_its_check_and_a_call_and_refuses_what_it_cannot_do():
    problem = json.dumps({**SMALL, "layout": "dense", "q_len": 2})
    res = harness("profile", "triton/split-k", "--problem", problem, "--config", '{"block_n": 64}')
    assert res.returncode == 0, res.stderr[-1500:]
    assert "launch config:" in res.stdout and "'block_n': 64" in res.stdout and "check: PASS" in res.stdout
    assert "a call: median" in res.stdout
    # 42 tokens x 2 KV heads x 64 dims of fp16 K and V (21504 B) and 2 sequences x 2 tokens x 8
    # heads of q (4096 B) read (dense: no table); out (4096 B) and lse (128 B) written
    assert "fewest bytes a call reads: 25,600 (K and V: 21,504); writes: 4,224" in res.stdout
    res = harness("profile", "triton/split-k", "--problem", json.dumps({"num_q_heads": 8}))
    assert res.returncode != 0 and "--problem: missing field(s)" in res.stderr
    if not shutil.which("ncu"):
        res = harness("profile", "triton/split-k", "--problem", problem, "--ncu")
        assert res.returncode != 0 and "--ncu: needs Nsight Compute" in res.stderr
    res = harness("profile", "triton/split-k", "--problem", problem, "--metrics", "dram__bytes_read.sum")
    assert res.returncode != 0 and "--metrics: ncu's counters, with --ncu" in res.stderr


def test_profile_under_ncu_passes_the_sections_and_the_raw_metrics(monkeypatch):
    import subprocess
    import types

    from harness import cli, profile
    seen = {}

    def run(cmd, **kwargs):
        seen["cmd"] = cmd
        return types.SimpleNamespace(returncode=0, stdout="report", stderr="")
    monkeypatch.setattr(profile.shutil, "which", lambda name: "/opt/ncu")
    monkeypatch.setattr(profile.torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(subprocess, "run", run)
    problem = json.dumps({**SMALL, "layout": "dense"})
    args = cli.build_parser().parse_args(["profile", "triton/split-k", "--problem", problem, "--ncu",
                                          "--metrics", "dram__bytes_read.sum,dram__bytes_write.sum"])
    args.sections = args.sections or profile.NCU_SECTIONS
    assert profile.profile(args) == "report"
    cmd = seen["cmd"]
    assert cmd[0] == "/opt/ncu" and cmd[cmd.index("--metrics") + 1] == \
        "dram__bytes_read.sum,dram__bytes_write.sum"
    assert [cmd[i + 1] for i, a in enumerate(cmd) if a == "--section"] == list(profile.NCU_SECTIONS)
    args = cli.build_parser().parse_args(["profile", "triton/split-k", "--problem", problem, "--ncu"])
    args.sections = profile.NCU_SECTIONS
    profile.profile(args)
    assert "--metrics" not in seen["cmd"]


def test_a_gpu_run_names_what_is_not_installed_and_how_to_install_it():
    import dataclasses
    import types

    from harness.cli import _missing_notice
    from impls import registry

    @dataclasses.dataclass(frozen=True)
    class Backend:  # mode() as the registry's: the reason it cannot run here, raised
        name: str
        why: str | None

        def mode(self):
            if self.why:
                raise registry.Unavailable(self.why)
            return "gpu"

        not_installed = registry.Backend.not_installed

    def impl(name, why):
        return types.SimpleNamespace(backend=Backend(name, why))

    impls = [impl("flashinfer", "package 'flashinfer' not installed: pip install -e .[flashinfer]"),
             impl("flashinfer", "package 'flashinfer' not installed: pip install -e .[flashinfer]"),
             impl("triton", None), impl("cupy", "no CUDA GPU")]
    note = _missing_notice(impls)
    assert note.count("flashinfer (") == 1 and "pip install -e .[flashinfer]" in note and "cupy" not in note
    assert _missing_notice(impls[2:]) is None
    assert registry.get("flashinfer/dense").backend.install == "pip install -e .[flashinfer]"


def test_processes_timing_different_gpus_run_their_launches_on_different_cpus(monkeypatch):
    """Two processes timing GPU 0 and GPU 1 at once (a run over two GPUs, or two runs side by
    side) pinned both timing threads to one CPU, and a host-heavy launch path then waited for the
    core: its samples held host time. Each GPU now has its own CPU."""
    from harness import timing
    allowed = set(range(8, 40))
    chosen = {}
    for visible in ("0", "1", "3,2", ""):
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
        chosen[visible] = timing.timing_cpu(allowed)
    assert chosen["0"] == chosen[""] == 8  # one GPU: the first CPU, as before
    assert chosen["1"] == 9 and chosen["3,2"] == 11
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-5f1c")  # a UUID: no index to go by
    assert timing.timing_cpu(allowed) == 8
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "33")  # more GPUs than CPUs: wraps
    assert timing.timing_cpu({0, 1}) == 1


def test_a_row_whose_launch_was_not_hidden_is_said_so_above_its_table():
    from harness import results
    rows = [{"variant": "dense", "cold_note": "host launch not hidden behind the spin in 3 of 32 calls"},
            {"variant": "paged"}]
    assert "not hidden behind the spin in some calls of 1 row(s)" in results.mode_notes(rows)
    assert "(dense)" in results.mode_notes(rows) and results.mode_notes([rows[1]]) == ""
    assert "cold_note" in results.CSV_FIELDS


def test_the_next_backends_worker_imports_while_the_one_before_measures(tmp_path):
    """Every backend's worker starts with the run (its imports, the slow part of a start, overlap
    the first cells) and lives for it, running its cells of each problem on its turn: the second
    backend's module is imported, once, before the first backend's last cell ends, and every
    row passes."""
    mark = tmp_path / "mark"
    problems = [{**SMALL, "layout": "dense", "dtype": "float32", "seq_lens": [n]} for n in (5, 9, 17)]
    res = harness("run", "--backends", "ahead-first,ahead-second", "--no-timing", "--out",
                  str(tmp_path / "run"), *[a for p in problems for a in ("--problem", json.dumps(p))],
                  env={"DECODE_BENCH_PLUGINS": "tests.ahead_backends", "DECODE_BENCH_AHEAD_MARK": str(mark),
                       "DECODE_BENCH_AHEAD_SLEEP": "1.5"})
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    rows = json.loads((tmp_path / "run" / "results.json").read_text())["rows"]
    assert len(rows) == 6 and all(r["status"] == "PASS" for r in rows)
    lines = [line.split() for line in mark.read_text().splitlines()]
    # the harness itself imports it too, checking the backends named (its parent: this test)
    imports = [float(t) for who, t in lines if who not in ("first", str(os.getpid()))]
    first_ends = [float(t) for who, t in lines if who == "first"]
    assert len(imports) == 1 and len(first_ends) >= 3  # one worker ran the second backend's cells
    assert imports[0] < max(first_ends)  # imported while the first backend still measured


def test_a_workers_batch_ends_even_when_its_last_lines_arrive_in_one_read(tmp_path, monkeypatch):
    """A worker's row lines and its batch-done line written at once reach the parent in one
    read: the watch must see the done line from what it read, not wait on the pipe for more
    (a buffered reader held it, and a run with an unavailable backend hung)."""
    from collections import deque

    from harness import runner
    from harness.progress import Progress

    monkeypatch.setattr(runner, "WORKER_SILENCE_S", 1)  # a missed done line: "silent", not a hang
    script = ("import sys\nfor line in sys.stdin:\n"
              f"    sys.stdout.write('  row one\\n  row two\\n' + {runner.BATCH_DONE!r} + '\\n')\n"
              "    sys.stdout.flush()\n")
    proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    worker = runner.Worker(proc, tmp_path / "spec.json")
    seen: list[str] = []

    class Lines(Progress):
        def line(self, text, slot=None):
            seen.append(text.strip())

    try:
        for _ in range(2):  # a second batch on the same worker too
            assert worker.send([(0, 0, "x")])
            assert runner._watch(worker, Lines(1, tmp_path / "rows.jsonl"), deque()) == "done"
        assert seen == ["row one", "row two"] * 2
    finally:
        worker.stop()


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="needs a backend unavailable here")
def test_an_unavailable_backend_is_said_once_a_run_however_many_problems(tmp_path):
    """The worker of an unavailable backend lives for the run and gets each problem's cells in
    turn: its UNAVAILABLE line is printed for its first problem only (every row is written)."""
    problems = [{**SMALL, "layout": "dense", "seq_lens": [n]} for n in (5, 9, 17)]
    res = harness("run", "--backends", "cupy", "--variants", "dense", "--allow-unavailable",
                  "--no-timing", "--out", str(tmp_path / "run"),
                  *[a for p in problems for a in ("--problem", json.dumps(p))])
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    rows = json.loads((tmp_path / "run" / "results.json").read_text())["rows"]
    assert len(rows) == 3 and {r["status"] for r in rows} == {"UNAVAILABLE"}
    said = [line for line in res.stdout.splitlines() if line.startswith("[") and "cupy/dense" in line]
    assert len(said) == 1, said


def test_a_worker_whose_cuda_context_is_lost_ends_after_its_batch_and_a_fresh_one_takes_the_next(
        tmp_path, monkeypatch):
    """A worker whose context a kernel left unusable says so with its batch's end and exits: the
    batch is done (every cell has its row, ERROR where CUDA failed), and the backend's next
    problem goes to a fresh worker, no cell blamed for the exit."""
    from harness import runner
    from harness.progress import Progress

    script = ("import sys\nsys.stdin.readline()\n"
              f"print('  a row', flush=True)\nprint({runner.BATCH_LAST!r}, flush=True)\n")
    started = []

    def start(spec, prov, spec_path, backend, env=None):
        started.append(backend)
        return runner.Worker(subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE,
                                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT), spec_path)

    monkeypatch.setattr(runner, "start_worker", start)
    monkeypatch.setattr(runner, "env_of", lambda backend: None)
    rows = tmp_path / "rows.jsonl"
    spec = runner.RunSpec([], [], 0, {}, False, True, str(rows), None)
    workers = runner.Workers(spec, {}, tmp_path, Progress(2, rows), ["b"])
    try:
        workers.run("b", [(0, 0, "b/x")])
        assert "b" not in workers.live and started == ["b"]  # ended with its batch
        workers.run("b", [(1, 1, "b/x")])
        assert started == ["b", "b"] and not rows.exists()  # a fresh one; no ERROR row written
    finally:
        workers.close()


def test_after_a_problem_memory_is_given_back_only_beyond_what_a_worker_may_hold(monkeypatch):
    """After each problem a worker collects garbage and empties torch's cache only where torch
    reserves more than IDLE_HOLD (a collection takes 0.1-0.3 s once it has compiled: not after
    every problem); a failing synchronize says its context is lost."""
    from harness import runner

    cuda, calls = runner.torch.cuda, []
    reserved = [0]
    for name, fn in {"is_available": lambda: True, "is_initialized": lambda: True,
                     "synchronize": lambda: None, "memory_reserved": lambda: reserved[0],
                     "empty_cache": lambda: calls.append("empty")}.items():
        monkeypatch.setattr(cuda, name, fn)
    monkeypatch.setattr(runner.gc, "collect", lambda: calls.append("collect"))
    for held, expected in ((runner.IDLE_HOLD // 2, []), (runner.IDLE_HOLD, []),
                           (3 * runner.IDLE_HOLD, ["collect", "empty"])):
        reserved[0] = held
        calls.clear()
        runner.release_memory()
        assert calls == expected, (held, calls)
    assert runner._context_lost() is False

    def failing():
        raise RuntimeError("CUDA error: an illegal memory access was encountered")
    monkeypatch.setattr(cuda, "synchronize", failing)
    assert runner._context_lost() is True


def test_a_launch_slower_than_the_spin_gets_a_longer_spin_so_its_samples_hold_no_host_time(monkeypatch):
    """The cold protocol hides the host's launch behind a GPU spin. A call whose launch outlasts
    it (Numba's two launches on a loaded host: every sample 3x its GPU time) doubles the spin for
    the samples after, to MAX_SPIN_CYCLES: a few samples hold host time, not all of them."""
    from harness import timing

    launch_cycles = 3 * timing.SPIN_CYCLES  # the host takes this long to enqueue the call
    spins = []

    class Event:  # begin reached before the launch ended: the spin was shorter than the launch
        def __init__(self, **_):
            self.spin = None

        def record(self):
            self.spin = spins[-1] if spins else None

        def query(self):
            return self.spin < launch_cycles

        def elapsed_time(self, other):
            return 0.010 + (0.050 if self.query() else 0.0)  # ms: 10 us, or host time in it

    cuda = timing.torch.cuda
    monkeypatch.setattr(cuda, "Event", Event)
    monkeypatch.setattr(cuda, "_sleep", lambda cycles: cycles and spins.append(cycles))
    monkeypatch.setattr(cuda, "synchronize", lambda: None)
    timer = object.__new__(timing.GpuTimer)
    timer.phases, timer.flush = 1, timing.torch.zeros(4)
    timer.max_reps, timer.time_cap_s = 64, 1.0
    t = timer.cold([lambda: None])
    assert sorted(set(spins)) == [timing.SPIN_CYCLES, 2 * timing.SPIN_CYCLES, 4 * timing.SPIN_CYCLES]
    assert t.estimate.median == pytest.approx(10.0) and "in 2 of" in t.note
    timer.max_reps = 16
    launch_cycles = 100 * timing.SPIN_CYCLES  # never hidden: the spin stops at its cap
    spins.clear()
    t = timer.cold([lambda: None])
    assert max(spins) == timing.MAX_SPIN_CYCLES and t.estimate.median == pytest.approx(60.0)
    assert "in 16 of 16" in t.note
