"""The README's "Adding a backend", tried: a backend written outside the tree
(``tests/plugin_backend.py``), registered through ``DECODE_BENCH_PLUGINS``, passes the whole
conformance suite and runs in the harness with no change outside its own module."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = {"DECODE_BENCH_PLUGINS": "tests.plugin_backend"}


def _run(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=900, env={**os.environ, **env})


def _suite(backend: str, plugins: dict) -> tuple[int, str]:
    """The conformance suite on one plugin backend (8 drawn examples): tests passed, and the
    summary line; a failing run fails the calling test."""
    res = _run("-m", "pytest", "conformance", "-q", "-p", "no:cacheprovider", "-k", backend,
               env={**plugins, "DECODE_BENCH_EXAMPLES": "8"})
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    return int(re.search(r"(\d+) passed", res.stdout).group(1)), res.stdout.splitlines()[-1]


def test_an_outside_backend_passes_the_whole_conformance_suite():
    passed, summary = _suite("plugin-torch", PLUGIN)
    # every property on dense, paged and split-k, invalid inputs and split counts included
    assert passed >= 50 and "skipped" not in summary, summary


def test_an_outside_backend_runs_in_the_harness(tmp_path):
    res = _run("-m", "harness", "run", "--backends", "plugin-torch", "--workloads", "cpu",
               "--out", str(tmp_path), env=PLUGIN)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    rows = json.loads((tmp_path / "results.json").read_text())["rows"]
    assert {r["impl"] for r in rows} == {"plugin-torch/dense", "plugin-torch/paged",
                                         "plugin-torch/split-k"}
    # an fp8 cache or a multi-token query it does not declare is refused with the reason,
    # everything else passes
    def refusal(spec):
        return "kv_dtype" if spec["kv_dtype"] is not None else \
            "q_len" if spec.get("q_len", 1) > 1 else None

    assert all(r["status"] == "PASS" if refusal(r["spec"]) is None else
               r["status"] == "UNSUPPORTED" and refusal(r["spec"]) in r["reason"] for r in rows), \
        [(r["problem"], r["status"], r["reason"]) for r in rows]
    assert any(r.get("config_summary", "").startswith("num_splits=") for r in rows)


def test_tune_reports_the_tuning_time_apart(tmp_path):
    """``--tune`` reaches the backends whose prepare takes ``tune``; the rows carry the tuner's
    seconds (``tuning_s``) apart from the first call, and the tables say so."""
    res = _run("-m", "harness", "run", "--backends", "plugin-torch", "--workloads", "cpu", "--tune",
               "--no-timing", "--out", str(tmp_path), env=PLUGIN)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    rows = json.loads((tmp_path / "results.json").read_text())["rows"]
    split = [r for r in rows if r["variant"] == "split-k" and r["status"] == "PASS"]
    assert split and all(r["tuning_s"] >= 0 for r in split)
    assert all("tuning_s" not in r for r in rows if r["variant"] != "split-k")  # no tune option
    assert "tuned in" in (tmp_path / "results.md").read_text()


OUT_ONLY = {"DECODE_BENCH_PLUGINS": "tests.plugin_out_only"}


def test_an_out_only_kernel_with_stated_limits_passes_the_suite():
    """No LSE, one variant, a minimum head_dim, a GQA-group limit, a split-count limit and an
    ``Unsupported`` raised in prepare: the suite draws within the limits, judges out alone and
    treats the refusal as unsupported, not as a failure."""
    passed, summary = _suite("plugin-out-only", OUT_ONLY)
    # every property split-k runs (split invariance on out alone), invalid inputs included
    assert passed >= 20 and "skipped" not in summary, summary


def test_an_out_only_kernel_is_checked_and_timed_in_the_harness(tmp_path):
    problems = [{"num_q_heads": 8, "num_kv_heads": 2, "head_dim": 64, "seq_lens": [40, 9],
                 "layout": "paged", "page_size": ps} for ps in (16, 256)]
    res = _run("-m", "harness", "run", "--backends", "plugin-out-only", "--out", str(tmp_path),
               *[a for p in problems for a in ("--problem", json.dumps(p))], env=OUT_ONLY)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    rows = {r["spec"]["page_size"]: r for r in json.loads((tmp_path / "results.json").read_text())["rows"]}
    assert rows[16]["status"] == "PASS" and rows[16]["median_us"] > 0, rows[16]
    assert rows[16]["lse_err_ratio"] is None and rows[16]["out_err_ratio"] < 1
    assert rows[256]["status"] == "UNSUPPORTED" and "page_size 256" in rows[256]["reason"]
    assert "tol, lse -)" in (tmp_path / "results.md").read_text()


OWN_ENV = {"DECODE_BENCH_PLUGINS": "tests.plugin_own_env"}


def _own_env_package(root: Path) -> Path:
    """A folder holding ``fake_env_dsl`` (what ``pip install --target`` would make)."""
    (root / "site" / "fake_env_dsl").mkdir(parents=True)
    (root / "site" / "fake_env_dsl" / "__init__.py").write_text('__version__ = "9.9.9"\n')
    return root / "site"


def _own_env_run(tmp_path: Path, setting: str) -> tuple[subprocess.CompletedProcess, list[dict], dict]:
    res = _run("-m", "harness", "run", "--backends", "plugin-own-env", "--workloads", "cpu",
               "--no-timing", "--out", str(tmp_path / "run"),
               env={**OWN_ENV, "DECODE_BENCH_ENV_OWN_ENV": setting})
    data = json.loads((tmp_path / "run" / "results.json").read_text()) \
        if (tmp_path / "run" / "results.json").exists() else {"rows": [], "provenance": {}}
    return res, data["rows"], data["provenance"]


def test_a_backend_runs_in_the_environment_it_declares_a_folder(tmp_path):
    """``DECODE_BENCH_ENV_<NAME>`` as a folder of packages: the worker (and the availability
    probe) find the package there; the harness's own process never imports it."""
    res, rows, prov = _own_env_run(tmp_path, str(_own_env_package(tmp_path)))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    dense = [r for r in rows if r["variant"] == "dense"]  # its one kernel
    assert dense and all(r["status"] == "PASS" for r in dense), [r.get("reason") for r in rows]
    assert prov["packages"]["fake_env_dsl"] == "9.9.9"  # asked of the backend's environment


def test_a_backend_runs_in_the_environment_it_declares_an_interpreter(tmp_path):
    """... as an interpreter (here a wrapper that puts the package on its own path)."""
    site = _own_env_package(tmp_path)
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\nPYTHONPATH="{site}:$PYTHONPATH" exec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    res, rows, _ = _own_env_run(tmp_path, str(python))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    dense = [r for r in rows if r["variant"] == "dense"]
    assert dense and all(r["status"] == "PASS" for r in dense), [r.get("reason") for r in rows]


def test_without_its_environment_the_backend_is_unavailable(tmp_path):
    res = _run("-m", "harness", "run", "--backends", "plugin-own-env", "--workloads", "cpu",
               "--no-timing", "--allow-unavailable", "--out", str(tmp_path / "run"), env=OWN_ENV)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    rows = [r for r in json.loads((tmp_path / "run" / "results.json").read_text())["rows"]
            if r["variant"] == "dense"]
    assert rows and all(r["status"] == "UNAVAILABLE" and "fake_env_dsl" in r["reason"] for r in rows)


def test_an_environment_that_names_nothing_is_refused_before_the_run(tmp_path):
    res, rows, _ = _own_env_run(tmp_path, str(tmp_path / "missing"))
    assert res.returncode == 2 and not rows, res.stdout[-2000:] + res.stderr[-2000:]
    assert "DECODE_BENCH_ENV_OWN_ENV=" in res.stderr and "interpreter or a folder" in res.stderr


def test_an_environment_that_names_nothing_stops_no_run_of_other_backends(tmp_path):
    """The provenance asks every backend its versions: a backend whose environment variable names
    nothing has none to give, and a run that does not select it goes on (a GPU script exported
    one backend's variable for runs of others; every such run stopped before its first cell)."""
    res = _run("-m", "harness", "run", "--backends", "triton", "--variants", "dense", "--workloads",
               "cpu", "--quick", "--no-timing", "--out", str(tmp_path / "run"),
               env={**OWN_ENV, "DECODE_BENCH_ENV_OWN_ENV": str(tmp_path / "missing")})
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    data = json.loads((tmp_path / "run" / "results.json").read_text())
    assert data["rows"] and all(r["status"] in ("PASS", "UNSUPPORTED") for r in data["rows"])
    assert "fake_env_dsl" not in data["provenance"]["packages"]

